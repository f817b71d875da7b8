/**
 * SecAgg+'s wire format (version "fedtensor-secagg+/5"): each message is a u32 little-endian
 * length, that many bytes of JSON validated with zod at the boundary (small binary fields as
 * base64), then the masked input's vector as raw little-endian uint32 words (nothing after the
 * other messages' JSON). Every message names the protocol, the round and the step; a client's
 * message names its sender ("from"), the server's its recipient ("to").
 *
 * Server -> client                        client -> server
 *   setup (parameters, min_clients)         advertise-keys     (two X25519 public keys, signed with its Ed25519 identity)
 *   share-keys (the signed key list,        share-keys         (key_rounds seed commitments, one sealed share pack per neighbour)
 *     the graph seed)
 *   masked-input (shares)                   masked-input       (the masked vector: uint32 words mod M)
 *   consistency-check (the survivor set)    consistency-check  (its signature over that set)
 *   unmask (the neighbours' signatures)     unmask             (seed shares of survivors, key shares of the dropped)
 *
 * A setup that reuses the last key setup (reuse.ts) carries the whole cohort's signatures over
 * the last survivor set, and the client answers it with its masked input: three messages a round.
 *
 * Raw messages are refused above a size limit before they are parsed: the masked input's limit
 * follows from vector_length, the lists' from num_shares and the cohort's size.
 */
import { z } from "zod";
import { KEY_BYTES, NONCE_BYTES, PROTOCOL, TAG_BYTES } from "./keys.js";
import { MAX_CLIENTS, MAX_KEY_ROUNDS, MAX_SHARES } from "./params.js";
import { base64Length, readWords, writeWords } from "./codec.js";
import { SHARE_BYTES, sharePackBytes } from "./shares.js";
import { SIGNATURE_BYTES } from "./identity.js";

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
const signature = bytes(SIGNATURE_BYTES);
/** A sealed share pack: its exact length follows from key_rounds, checked by whoever knows the round's parameters. */
const sealedPack = z.base64().max(base64Length(sharePackBytes(MAX_KEY_ROUNDS) + TAG_BYTES));

export const advertiseKeysSchema = z.strictObject({
  ...header,
  step: z.literal("advertise-keys"),
  from: clientIdSchema,
  encryption_key: key,
  masking_key: key,
  /** The client's long-term Ed25519 key, and its signature over the transcript of identity.ts. */
  identity_key: key,
  signature,
});

export const shareKeysSchema = z.strictObject({
  ...header,
  step: z.literal("share-keys"),
  from: clientIdSchema,
  /** One per round of the key setup's window, in round order. */
  seed_commitments: z.array(key).min(1).max(MAX_KEY_ROUNDS),
  shares: z
    .array(z.strictObject({ to: clientIdSchema, nonce: bytes(NONCE_BYTES), ciphertext: sealedPack }))
    .max(MAX_SHARES),
});

/** The masked input's JSON: its vector, `length` little-endian uint32 words each below modulus_range, follows it as raw bytes. */
export const maskedInputSchema = z.strictObject({
  ...header,
  step: z.literal("masked-input"),
  from: clientIdSchema,
  dtype: z.literal("uint32"),
  length: z.number().int().min(1),
});

/** A client's signature over the survivor set it was told (identity.ts, survivorsTranscript). */
export const consistencyCheckSchema = z.strictObject({ ...header, step: z.literal("consistency-check"), from: clientIdSchema, signature });

const shareOf = z.strictObject({ of: clientIdSchema, share: bytes(SHARE_BYTES) });

export const unmaskSchema = z.strictObject({
  ...header,
  step: z.literal("unmask"),
  from: clientIdSchema,
  seed_shares: z.array(shareOf).max(MAX_SHARES),
  key_shares: z.array(shareOf).max(MAX_SHARES),
  /** In a round that reuses keys: the round's pair-mask seed with each dropped neighbour, never a key share (reuse.ts). */
  pair_seeds: z.array(z.strictObject({ of: clientIdSchema, seed: key })).max(MAX_SHARES).optional(),
});

export const clientMessageSchema = z.discriminatedUnion("step", [advertiseKeysSchema, shareKeysSchema, maskedInputSchema, consistencyCheckSchema, unmaskSchema]);

export const resolvedParamsSchema = z.strictObject({
  round,
  vector_length: z.number().int(),
  num_shares: z.number().int(),
  reconstruction_threshold: z.number().int(),
  clipping_range: z.number(),
  quantization_range: z.number().int(),
  modulus_range: z.number().int(),
  clients: z.number().int(),
  min_clients: z.number().int(),
  key_rounds: z.number().int(),
});

/** A setup's session: 16 random bytes in hex, fresh for each SecAggServer, so a client tells a restarted server's setup from a repeated one. */
export const sessionSchema = z.string().regex(/^[0-9a-f]{32}$/);

/** What a setup that reuses the last key setup carries: that setup's session and round, and every client's signature over the last survivor set. */
export const reuseSchema = z.strictObject({
  keys_session: sessionSchema,
  keys_round: round,
  signatures: z.array(z.strictObject({ id: clientIdSchema, signature })).max(MAX_CLIENTS),
});

export const setupSchema = z.strictObject({ ...header, step: z.literal("setup"), to: clientIdSchema, session: sessionSchema, params: resolvedParamsSchema, reuse: reuseSchema.optional() });

export const shareKeysRequestSchema = z.strictObject({
  ...header,
  step: z.literal("share-keys"),
  to: clientIdSchema,
  /** Every client whose keys the server accepted, as each advertised them: the client checks each signature and derives its neighbours (graph.ts). */
  roster: z.array(z.strictObject({ id: clientIdSchema, encryption_key: key, masking_key: key, identity_key: key, signature })).max(MAX_CLIENTS),
  /** graphSeed of the roster, hex: the client recomputes it and refuses a request whose seed differs (FT371). */
  graph_seed: z.string().regex(/^[0-9a-f]{64}$/),
});

export const maskedInputRequestSchema = z.strictObject({
  ...header,
  step: z.literal("masked-input"),
  to: clientIdSchema,
  shares: z
    .array(z.strictObject({ from: clientIdSchema, nonce: bytes(NONCE_BYTES), ciphertext: sealedPack }))
    .max(MAX_SHARES),
});

/** The clients whose masked vectors are in the sum (U3), for every one of them alike. */
export const consistencyCheckRequestSchema = z.strictObject({
  ...header,
  step: z.literal("consistency-check"),
  to: clientIdSchema,
  survivors: z.array(clientIdSchema).max(MAX_CLIENTS),
});

/** The signatures over the survivor set of the recipient and its neighbours that passed the check. */
export const unmaskRequestSchema = z.strictObject({
  ...header,
  step: z.literal("unmask"),
  to: clientIdSchema,
  signatures: z.array(z.strictObject({ id: clientIdSchema, signature })).max(MAX_SHARES),
});

export const serverMessageSchema = z.discriminatedUnion("step", [setupSchema, shareKeysRequestSchema, maskedInputRequestSchema, consistencyCheckRequestSchema, unmaskRequestSchema]);

export type AdvertiseKeys = z.infer<typeof advertiseKeysSchema>;
export type ShareKeys = z.infer<typeof shareKeysSchema>;
export type MaskedInput = z.infer<typeof maskedInputSchema> & { readonly vector: Uint32Array };
export type ConsistencyCheck = z.infer<typeof consistencyCheckSchema>;
export type Unmask = z.infer<typeof unmaskSchema>;
export type ClientMessage = AdvertiseKeys | ShareKeys | MaskedInput | ConsistencyCheck | Unmask;
export type Setup = z.infer<typeof setupSchema>;
export type Reuse = z.infer<typeof reuseSchema>;
export type ShareKeysRequest = z.infer<typeof shareKeysRequestSchema>;
export type MaskedInputRequest = z.infer<typeof maskedInputRequestSchema>;
export type ConsistencyCheckRequest = z.infer<typeof consistencyCheckRequestSchema>;
export type UnmaskRequest = z.infer<typeof unmaskRequestSchema>;
export type ServerMessage = z.infer<typeof serverMessageSchema>;
export type Step = ClientMessage["step"] | ServerMessage["step"];

/** Headroom for the JSON around the fields, ids included (128 characters each), and its length prefix. */
const ENVELOPE_BYTES = 1024;
const PER_PEER_BYTES = 512;
/** A seed share's base64 and its commitment's, per round of the key window. */
const PER_KEY_ROUND_BYTES = 96;

/**
 * The largest message either side sends in a round with these parameters: the masked input, a
 * share list, or (clients given) the signed key list and the survivor set, one entry per client.
 */
export function messageSizeLimit(params: { readonly vector_length: number; readonly num_shares: number; readonly clients?: number; readonly key_rounds?: number }): number {
  const perPeer = PER_PEER_BYTES + (params.key_rounds ?? 1) * PER_KEY_ROUND_BYTES;
  return ENVELOPE_BYTES + Math.max(4 * params.vector_length, 2 * params.num_shares * perPeer, (params.clients ?? 0) * perPeer);
}

/** The limit on a setup message, which comes before the client knows the parameters. */
export const SETUP_SIZE_LIMIT = 4096;

export type Parsed<T> = { readonly ok: true; readonly message: T } | { readonly ok: false; readonly reason: string };

const utf8 = new TextEncoder();
/** One decoder for every message: without { stream: true } a decode keeps no state between calls. */
const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/** Checks the size, splits the JSON from the bytes after it, and checks the JSON against `schema`. */
function parseWith<T>(schema: z.ZodType<T>, raw: Uint8Array, limit: number): Parsed<{ fields: T; tail: Uint8Array }> {
  if (raw.byteLength > limit) return { ok: false, reason: `message of ${raw.byteLength} bytes is over the limit of ${limit}` };
  if (raw.byteLength < 4) return { ok: false, reason: `message of ${raw.byteLength} bytes has no JSON length` };
  const jsonLength = new DataView(raw.buffer, raw.byteOffset, raw.byteLength).getUint32(0, true);
  if (4 + jsonLength > raw.byteLength) return { ok: false, reason: `message of ${raw.byteLength} bytes is shorter than its JSON length ${jsonLength}` };
  let json: unknown;
  try {
    json = JSON.parse(strictUtf8.decode(raw.subarray(4, 4 + jsonLength)));
  } catch {
    return { ok: false, reason: "not JSON" };
  }
  const result = schema.safeParse(json);
  if (!result.success) {
    const issue = result.error.issues[0];
    return { ok: false, reason: `malformed: ${issue ? `${issue.path.join(".") || "message"}: ${issue.message}` : "schema"}` };
  }
  return { ok: true, message: { fields: result.data, tail: raw.subarray(4 + jsonLength) } };
}

const trailing = (step: string, tail: Uint8Array): Parsed<never> => ({ ok: false, reason: `${tail.length} bytes after a ${step} message's JSON` });

/**
 * A client's message as the server takes it: size first, then the JSON and its schema, then
 * the masked input's vector: exactly 4 x length bytes (uint32 words; their range is the
 * server's check, against the round's modulus).
 */
export function parseClientMessage(raw: Uint8Array, limit: number): Parsed<ClientMessage> {
  const parsed = parseWith(clientMessageSchema, raw, limit);
  if (!parsed.ok) return parsed;
  const { fields, tail } = parsed.message;
  if (fields.step !== "masked-input") return tail.length === 0 ? { ok: true, message: fields } : trailing(fields.step, tail);
  if (tail.length !== 4 * fields.length) return { ok: false, reason: `masked vector of ${tail.length} bytes where its length says ${fields.length} uint32 words (${4 * fields.length} bytes)` };
  return { ok: true, message: { ...fields, vector: readWords(tail) } };
}

/** The server's message as a client takes it: nothing may follow its JSON. */
export function parseServerMessage(raw: Uint8Array, limit: number): Parsed<ServerMessage> {
  const parsed = parseWith(serverMessageSchema, raw, limit);
  if (!parsed.ok) return parsed;
  const { fields, tail } = parsed.message;
  return tail.length === 0 ? { ok: true, message: fields } : trailing(fields.step, tail);
}

/** A message's bytes: the JSON's length (u32 little-endian), the JSON, and for a masked input its words. */
export function encodeMessage(message: ClientMessage | ServerMessage): Uint8Array {
  let fields: object = message;
  let words: Uint32Array | undefined;
  if (message.step === "masked-input" && "vector" in message) ({ vector: words, ...fields } = message);
  const json = utf8.encode(JSON.stringify(fields));
  const out = new Uint8Array(4 + json.length + (words?.byteLength ?? 0));
  new DataView(out.buffer).setUint32(0, json.length, true);
  out.set(json, 4);
  if (words !== undefined) writeWords(words, out, 4 + json.length);
  return out;
}
