/**
 * The Redis side of the BullMQ engine: connections, queue names and keys, and the check that
 * turns an unreachable server into FT319 rather than a hang (ioredis otherwise retries for ever).
 */
import { Redis } from "ioredis";
import { ftError } from "../../../errors/error.js";

/** Chunk jobs, which workers take. */
export const chunkQueue = "fedtensor-chunks";
/** Each round's parent job (BullMQ flow), which completes when all its chunks have. */
export const roundQueue = "fedtensor-rounds";

export const keys = {
  /** A round program's fused work+accumulate part and input tree (JSON), by content hash. */
  form: (hash: string) => `fedtensor:form:${hash}`,
  /** The inputs every chunk of one attempt at a round shares (binary record, wire.ts). */
  inputs: (session: string, round: number, attempt: number) => `fedtensor:inputs:${session}:${round}:${attempt}`,
  /** A chunk's partial accumulator (binary record, wire.ts), read and deleted by the coordinator when the round's chunks are all done. */
  result: (session: string, round: number, attempt: number, chunk: number) => `fedtensor:result:${session}:${round}:${attempt}:${chunk}`,
  /** A chunk's clients' state (binary record, wire.ts), which its worker reads; the new state comes back in the chunk's result. */
  state: (session: string, round: number, attempt: number, chunk: number) => `fedtensor:state:${session}:${round}:${attempt}:${chunk}`,
  /** Present while the coordinator of `session` is alive: workers skip the jobs of a dead one. */
  session: (session: string) => `fedtensor:session:${session}`,
};

/** A connection for BullMQ (which needs maxRetriesPerRequest null: commands wait while it reconnects). */
export const bullConnection = (url: string) => new Redis(url, { maxRetriesPerRequest: null, lazyConnect: true });

/** Connects to `url` once, without retrying; FT319 when it cannot (refused, unknown host, not Redis). */
export async function checkReachable(url: string, timeoutMs = 5000): Promise<void> {
  const probe = new Redis(url, { lazyConnect: true, connectTimeout: timeoutMs, maxRetriesPerRequest: 0, retryStrategy: () => null, enableOfflineQueue: false });
  probe.on("error", () => {});
  try {
    await probe.connect();
    const pong = await probe.ping();
    if (pong !== "PONG") throw new Error(`answered ${pong} to PING`);
  } catch (error) {
    throw ftError("FT319", { url, why: (error as Error).message || String(error) });
  } finally {
    probe.disconnect();
  }
}

export const timedOut = Symbol("timed out");

/** `promise`, or `timedOut` after `ms` (a command that ioredis holds while Redis is down). */
export function within<T>(promise: Promise<T>, ms: number): Promise<T | typeof timedOut> {
  let timer: NodeJS.Timeout | undefined;
  // setTimeout takes at most 2^31 - 1 ms and turns a longer delay into 1 ms (--engine-timeout 1e9 would time out at once).
  const timeout = new Promise<typeof timedOut>((resolve) => (timer = setTimeout(() => resolve(timedOut), Math.min(ms, 2 ** 31 - 1))));
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
