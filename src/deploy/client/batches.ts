/**
 * A client's training batches, built on the client from its own examples: x [1, steps, B,
 * ...feature], y and mask [1, steps, B], count [1] (the round program's CLIENTS inputs for a
 * cohort of one). The examples are shuffled anew each epoch and padded with masked slots, as
 * src/lib/data/federated.ts does for simulated clients; the examples themselves as a record
 * file holds them. Runs in Node and in the browser.
 */
import { ftError } from "../../errors/error.js";
import { decodeRecord, RecordError, type RecordTensor } from "../protocol/record.js";

export interface ClientExamples {
  /** Features, example after example: [n, ...featureShape]. */
  readonly x: Float32Array | Int32Array;
  /** Labels [n]. */
  readonly y: Int32Array;
}

/**
 * The examples of a record (x float32 or int32 [n, ...], y int32 [n], n >= 1): FT302, naming
 * `what`, for bytes that are no such record. `fedtensor client --data` and the browser page's
 * file and demo partition all read their examples here.
 */
export function examplesFromRecord(bytes: Uint8Array, what: string): ClientExamples {
  let record;
  try {
    record = decodeRecord(bytes);
  } catch (error) {
    if (error instanceof RecordError) throw ftError("FT302", { what, why: error.message });
    throw error;
  }
  const x = record.get("x");
  const y = record.get("y");
  if (typeof x !== "object" || typeof y !== "object" || y.dtype !== "int32" || x.dtype === "bool" || x.shape[0] !== y.shape[0] || y.shape.length !== 1 || y.shape[0] === 0) {
    throw ftError("FT302", { what, why: "expected a record with x (float32 or int32, [n, ...features]) and y (int32 [n]), n >= 1" });
  }
  return { x: x.data as Float32Array | Int32Array, y: y.data as Int32Array };
}

/** Batches that `examples` examples fill over `epochs` epochs, at least 1: the server's steps for this client. */
export const stepsFor = (examples: number, epochs: number, batchSize: number): number => Math.max(1, Math.ceil((epochs * examples) / batchSize));

/** Random words from the platform's CSPRNG (Node and browsers both have crypto.getRandomValues), drawn a block at a time. */
function randomWords(count: number): () => number {
  // One call per word cost 10-20 us: a shuffle of 2,727 examples took 30-50 ms of a client's round.
  const block = new Uint32Array(Math.min(Math.max(count, 1), 16_384)); // getRandomValues fills at most 65,536 bytes a call
  let next = block.length;
  return () => {
    if (next === block.length) {
      crypto.getRandomValues(block);
      next = 0;
    }
    return block[next++]!;
  };
}

/** The indices 0..n-1 in a uniformly random order (Fisher-Yates; each index by rejection sampling, no modulo bias). */
function shuffled(n: number): Int32Array {
  const order = Int32Array.from({ length: n }, (_, i) => i);
  const word = randomWords(n);
  for (let i = n - 1; i > 0; i--) {
    const bound = i + 1;
    const limit = Math.floor(2 ** 32 / bound) * bound;
    let w = word();
    while (w >= limit) w = word();
    const j = w % bound;
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  return order;
}

export interface BatchSettings {
  readonly steps: number;
  readonly batchSize: number;
  readonly epochs: number;
  readonly featureShape: readonly number[];
}

/** The client's batches for one round; `steps` may exceed what its examples fill (a size bucket's), the rest masked. */
export function clientBatches(examples: ClientExamples, { steps, batchSize, epochs, featureShape }: BatchSettings): Record<"x" | "y" | "mask" | "count", RecordTensor> {
  const n = examples.y.length;
  const featureSize = featureShape.reduce((a, b) => a * b, 1);
  if (examples.x.length !== n * featureSize) throw new RangeError(`${examples.x.length} feature values for ${n} examples of shape [${featureShape.join(", ")}]`);
  const slots = steps * batchSize;
  const x = examples.x instanceof Int32Array ? new Int32Array(slots * featureSize) : new Float32Array(slots * featureSize);
  const y = new Int32Array(slots);
  const mask = new Float32Array(slots);
  let slot = 0;
  for (let epoch = 0; epoch < epochs && slot < slots; epoch++) {
    for (const example of shuffled(n)) {
      if (slot >= slots) break;
      x.set(examples.x.subarray(example * featureSize, (example + 1) * featureSize), slot * featureSize);
      y[slot] = examples.y[example]!;
      mask[slot] = 1;
      slot++;
    }
  }
  const lead = [1, steps, batchSize];
  return {
    x: { dtype: x instanceof Int32Array ? "int32" : "float32", shape: [...lead, ...featureShape], data: x },
    y: { dtype: "int32", shape: lead, data: y },
    mask: { dtype: "float32", shape: lead, data: mask },
    count: { dtype: "float32", shape: [1], data: Float32Array.of(n) },
  };
}
