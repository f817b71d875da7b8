/**
 * SecAgg+'s wire format (version "fedtensor-secagg+/1"): JSON messages validated with zod at
 * the boundary, binary fields as base64. Every message names the protocol, the round and the
 * step; a client's message names its sender ("from"), the server's its recipient ("to").
 *
 * Server -> client          client -> server
 *   setup                     advertise-keys  (two X25519 public keys)
 *   share-keys (neighbours)   share-keys      (seed commitment, one sealed share pair per neighbour)
 *   masked-input (shares)     masked-input    (the masked vector: uint32 words mod M)
 *   unmask (who survived)     unmask          (seed shares of survivors, key shares of the dropped)
 *
 * Raw messages are refused above a size limit before they are parsed: the masked input's limit
 * follows from vector_length, every other message's from num_shares.
 */
import { z } from "zod";
import { KEY_BYTES, NONCE_BYTES, PROTOCOL, TAG_BYTES } from "./keys.js";
import { MAX_SHARES } from "./params.js";
import { base64Length } from "./codec.js";
import { SHARE_BYTES, SHARE_PAIR_BYTES } from "./shares.js";

/** Client ids: what the transport authenticated, in a restricted alphabet. */
export const clientIdSchema = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[A-Za-z0-9_.:@-]+$/);

const bytes = (n: number) => z.base64().length(base64Length(n));
const key = bytes(KEY_BYTES);
const round = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const header = { protocol: z.literal(PROTOCOL), round };
const ids = z.array(clientIdSchema).max(MAX_SHARES);

export const advertiseKeysSchema = z.strictObject({
  ...header,
  step: z.literal("advertise-keys"),
  from: clientIdSchema,
  encryption_key: key,
  masking_key: key,
});

export const shareKeysSchema = z.strictObject({
  ...header,
  step: z.literal("share-keys"),
  from: clientIdSchema,
  seed_commitment: key,
  shares: z
    .array(z.strictObject({ to: clientIdSchema, nonce: bytes(NONCE_BYTES), ciphertext: bytes(SHARE_PAIR_BYTES + TAG_BYTES) }))
    .max(MAX_SHARES),
});

export const maskedInputSchema = z.strictObject({
  ...header,
  step: z.literal("masked-input"),
  from: clientIdSchema,
  dtype: z.literal("uint32"),
  length: z.number().int().min(1),
  /** base64 of `length` little-endian uint32 words, each below modulus_range. */
  vector: z.string(),
});

const shareOf = z.strictObject({ of: clientIdSchema, share: bytes(SHARE_BYTES) });

export const unmaskSchema = z.strictObject({
  ...header,
  step: z.literal("unmask"),
  from: clientIdSchema,
  seed_shares: z.array(shareOf).max(MAX_SHARES),
  key_shares: z.array(shareOf).max(MAX_SHARES),
});

export const clientMessageSchema = z.discriminatedUnion("step", [advertiseKeysSchema, shareKeysSchema, maskedInputSchema, unmaskSchema]);

export const resolvedParamsSchema = z.strictObject({
  round,
  vector_length: z.number().int(),
  num_shares: z.number().int(),
  reconstruction_threshold: z.number().int(),
  clipping_range: z.number(),
  quantization_range: z.number().int(),
  modulus_range: z.number().int(),
  clients: z.number().int(),
});

export const setupSchema = z.strictObject({ ...header, step: z.literal("setup"), to: clientIdSchema, params: resolvedParamsSchema });

export const shareKeysRequestSchema = z.strictObject({
  ...header,
  step: z.literal("share-keys"),
  to: clientIdSchema,
  neighbours: z.array(z.strictObject({ id: clientIdSchema, encryption_key: key, masking_key: key })).max(MAX_SHARES),
});

export const maskedInputRequestSchema = z.strictObject({
  ...header,
  step: z.literal("masked-input"),
  to: clientIdSchema,
  shares: z
    .array(z.strictObject({ from: clientIdSchema, nonce: bytes(NONCE_BYTES), ciphertext: bytes(SHARE_PAIR_BYTES + TAG_BYTES) }))
    .max(MAX_SHARES),
});

export const unmaskRequestSchema = z.strictObject({
  ...header,
  step: z.literal("unmask"),
  to: clientIdSchema,
  survivors: ids,
  dropped: ids,
});

export const serverMessageSchema = z.discriminatedUnion("step", [setupSchema, shareKeysRequestSchema, maskedInputRequestSchema, unmaskRequestSchema]);

export type AdvertiseKeys = z.infer<typeof advertiseKeysSchema>;
export type ShareKeys = z.infer<typeof shareKeysSchema>;
export type MaskedInput = z.infer<typeof maskedInputSchema>;
export type Unmask = z.infer<typeof unmaskSchema>;
export type ClientMessage = z.infer<typeof clientMessageSchema>;
export type Setup = z.infer<typeof setupSchema>;
export type ShareKeysRequest = z.infer<typeof shareKeysRequestSchema>;
export type MaskedInputRequest = z.infer<typeof maskedInputRequestSchema>;
export type UnmaskRequest = z.infer<typeof unmaskRequestSchema>;
export type ServerMessage = z.infer<typeof serverMessageSchema>;
export type Step = ClientMessage["step"] | ServerMessage["step"];

/** Headroom for the JSON around the fields, ids included (128 characters each). */
const ENVELOPE_BYTES = 1024;
const PER_PEER_BYTES = 512;

/** The largest message either side sends in a round with these parameters (the masked input, or a share list). */
export function messageSizeLimit(params: { readonly vector_length: number; readonly num_shares: number }): number {
  const vector = base64Length(4 * params.vector_length);
  return ENVELOPE_BYTES + Math.max(vector, 2 * params.num_shares * PER_PEER_BYTES);
}

/** The limit on a setup message, which comes before the client knows the parameters. */
export const SETUP_SIZE_LIMIT = 4096;

export type Parsed<T> = { readonly ok: true; readonly message: T } | { readonly ok: false; readonly reason: string };

function parseWith<T>(schema: z.ZodType<T>, raw: string | Uint8Array, limit: number): Parsed<T> {
  // A string's UTF-16 length: every valid message is ASCII, where it equals the byte count.
  const size = typeof raw === "string" ? raw.length : raw.byteLength;
  if (size > limit) return { ok: false, reason: `message of ${size} bytes is over the limit of ${limit}` };
  let json: unknown;
  try {
    json = JSON.parse(typeof raw === "string" ? raw : new TextDecoder("utf-8", { fatal: true }).decode(raw));
  } catch {
    return { ok: false, reason: "not JSON" };
  }
  const result = schema.safeParse(json);
  if (!result.success) {
    const issue = result.error.issues[0];
    return { ok: false, reason: `malformed: ${issue ? `${issue.path.join(".") || "message"}: ${issue.message}` : "schema"}` };
  }
  return { ok: true, message: result.data };
}

/** A client's message as the server takes it: size first, then JSON, then the schema. */
export const parseClientMessage = (raw: string | Uint8Array, limit: number): Parsed<ClientMessage> =>
  parseWith(clientMessageSchema, raw, limit);

/** The server's message as a client takes it. */
export const parseServerMessage = (raw: string | Uint8Array, limit: number): Parsed<ServerMessage> =>
  parseWith(serverMessageSchema, raw, limit);

export const encodeMessage = (message: ClientMessage | ServerMessage): string => JSON.stringify(message);
