/**
 * The messages of `fedtensor serve` and its clients (wire version 2, docs/deployment.md, "Wire
 * format"). Each is one binary WebSocket frame: a 4-byte little-endian header length, the
 * header (UTF-8 JSON, one of the schemas below, validated with zod at the boundary), then the
 * body its type says (a tensor record, record.ts; an ONNX model), or nothing.
 *
 * The client sends these messages only: hello (its token), ready (its number of examples,
 * once the welcome told it the run), update (the partial accumulator of the round's client
 * part: the model-sized sums the program's aggregations take, never an example), failed, and
 * in secure rounds trained and secagg (SecAgg+'s messages: keys, sealed shares, the masked
 * accumulator, unmasking shares). test/deploy/serve-privacy.test.ts
 * records every one.
 */
import { z } from "zod";

/**
 * The wire version; a peer that speaks another is refused with a message saying which. 2: the
 * SecAgg+ masked vector travels as raw bytes after its message's JSON, not as base64 in it.
 */
export const WIRE_VERSION = 2;

/** The largest header: control messages are small, whatever the model. */
export const MAX_HEADER_BYTES = 64 * 1024;

const id = z.string().min(1).max(128);
const round = z.number().int().min(1).max(2 ** 31 - 1);
const reason = z.string().max(2000);

/** Client to server. */
export const helloSchema = z.strictObject({
  v: z.literal(WIRE_VERSION),
  type: z.literal("hello"),
  token: z.string().min(1).max(1024),
  agent: z.enum(["node", "browser"]),
});
/** The client's number of training examples (its weight, and how many batches it trains on): it may now be sampled. */
export const readySchema = z.strictObject({ v: z.literal(WIRE_VERSION), type: z.literal("ready"), examples: z.number().int().min(1).max(2 ** 31 - 1) });
export const updateSchema = z.strictObject({ v: z.literal(WIRE_VERSION), type: z.literal("update"), round, task: id });
export const failedSchema = z.strictObject({ v: z.literal(WIRE_VERSION), type: z.literal("failed"), round, task: id, reason });
/** A secure round's answer to a task: trained, the accumulator kept for the secure sum. */
export const trainedSchema = z.strictObject({ v: z.literal(WIRE_VERSION), type: z.literal("trained"), round, task: id });
/** A SecAgg+ message (the body: its JSON, src/deploy/secagg/messages.ts), either way. */
export const secAggSchema = z.strictObject({ v: z.literal(WIRE_VERSION), type: z.literal("secagg"), round });
export const clientMessageSchema = z.discriminatedUnion("type", [helloSchema, readySchema, updateSchema, failedSchema, trainedSchema, secAggSchema]);
export type ClientMessage = z.infer<typeof clientMessageSchema>;

/** What a client needs of the run to build its batches: public settings, never a secret. */
export const runInfoSchema = z.strictObject({
  name: z.string().max(200),
  algorithm: z.string().max(100),
  model: z.string().max(100),
  batchSize: z.number().int().min(1),
  epochs: z.number().int().min(1),
  /** The model's example shape (28x28 images are seen as [784] by the 2NN). */
  featureShape: z.array(z.number().int().min(1)).max(8),
  /** The demo data set and how it is split, for `--dataset NAME --client-index i` and the page's demo partition. */
  data: z.strictObject({ dataset: z.string().max(100), partition: z.string().max(100), clients: z.number().int().min(1), alpha: z.number().optional(), seed: z.number().int() }),
  /** How the server merges: the plain weighted sum, SecAgg+, or distributed DP over SecAgg+ (what the client sends each round follows from it). */
  aggregator: z.enum(["fedavg", "secure", "distributed-dp"]).optional(),
  /** The run's number of rounds. */
  rounds: z.number().int().min(1).optional(),
  /** Secure rounds: the fewest clients a SecAgg+ sum may hold; a client refuses a setup that promises fewer (FT372). */
  minClients: z.number().int().min(1).optional(),
});
export type RunInfo = z.infer<typeof runInfoSchema>;

/** Server to client. */
export const welcomeSchema = z.strictObject({ v: z.literal(WIRE_VERSION), type: z.literal("welcome"), clientId: id, run: runInfoSchema });
export const refusedSchema = z.strictObject({ v: z.literal(WIRE_VERSION), type: z.literal("refused"), reason });
/** The client part as an ONNX model (the body), by its content hash; sent once per client and hash. */
export const partSchema = z.strictObject({
  v: z.literal(WIRE_VERSION),
  type: z.literal("part"),
  hash: z.string().regex(/^[0-9a-f]{64}$/),
  /** The model's inputs: the names of the round's shared inputs, and x, y, mask, count for the client's batches. */
  inputs: z.array(z.string().max(200)).max(4096),
  /** The partial accumulator's names, in the model's output order. */
  outputs: z.array(z.string().max(200)).max(4096),
  /** Run-time checks (int64 counts of violations, 0 when fine), each with what it checks. */
  checks: z.array(z.strictObject({ output: z.string().max(200), what: z.string().max(500) })).max(64),
  /** The two outputs whose ratio (sum / weight) is the client's own mean training loss, for it to show; it never sends it. */
  loss: z.strictObject({ sum: z.string().max(200), weight: z.string().max(200) }).optional(),
  /**
   * A stateful program's client state (FedPer's heads, Ditto's personal model, SCAFFOLD's
   * control): each input the client reads from its own store, and the output it writes back
   * there. These outputs are never sent; a client without state starts from the task's
   * `initial:<input>` entry (the server's public starting value).
   */
  state: z.array(z.strictObject({ input: z.string().max(200), output: z.string().max(200) })).max(64).optional(),
});
/** A round's task (the body: the shared inputs as a record): run part `part` on `steps` batches, answer within `deadlineMs`. */
export const taskSchema = z.strictObject({
  v: z.literal(WIRE_VERSION),
  type: z.literal("task"),
  round,
  task: id,
  part: z.string().regex(/^[0-9a-f]{64}$/),
  steps: z.number().int().min(1),
  deadlineMs: z.number().int().min(1),
  /** Secure rounds only: keep the accumulator, times this public scale, for the SecAgg+ round that follows. */
  scale: z.number().positive().max(1).optional(),
  /**
   * Distributed-DP rounds only (with scale): encode the scaled accumulator with these codec
   * options (src/lib/privacy/distributed-dp-codec.ts) before the SecAgg+ sum mod 2^bits. The
   * rotation key is the round's, from the run's secret: shared by the cohort, never from --seed.
   */
  ddp: z
    .strictObject({
      clip: z.number().positive().finite(),
      noiseMultiplier: z.number().min(0).finite(),
      bits: z.number().int().min(2).max(30),
      minClients: z.number().int().min(1),
      maxClients: z.number().int().min(1),
      rotationKey: z.tuple([z.number().int(), z.number().int()]),
    })
    .optional(),
});
/** How a round ended for the client: its update merged or not, and the round's training loss when the program reports one. */
export const roundEndSchema = z.strictObject({
  v: z.literal(WIRE_VERSION),
  type: z.literal("round-end"),
  round,
  merged: z.boolean(),
  clients: z.number().int().min(0),
  loss: z.number().nullable(),
  /** Distributed-DP runs: the run's epsilon (at its delta) after this round, null when not finite. */
  epsilon: z.number().nullable().optional(),
});
/** The run is over after `rounds` rounds: the client stops instead of reconnecting. */
export const finishedSchema = z.strictObject({ v: z.literal(WIRE_VERSION), type: z.literal("finished"), rounds: z.number().int().min(0) });
export const serverMessageSchema = z.discriminatedUnion("type", [welcomeSchema, refusedSchema, partSchema, taskSchema, roundEndSchema, secAggSchema, finishedSchema]);
export type ServerMessage = z.infer<typeof serverMessageSchema>;
