/**
 * Worker threads that run slices of a cohort (src/runtime/shards.ts), one per core besides
 * the main thread's. Workers
 * start on first use and do not keep the process alive while idle. The worker script is the
 * compiled shard-worker.js, so programs run from TypeScript sources (under vitest) have no
 * workers: see `workersAvailable`.
 */
import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";
import type { DType, ProgramIR } from "../ir/types.js";

/** A tensor's data crossing threads. */
export interface HostData {
  readonly data: Float32Array | Int32Array | Uint8Array;
  readonly shape: readonly number[];
  readonly dtype: DType;
}

export interface ShardRequest {
  /** Names a compiled program on the worker. */
  readonly key: string;
  /** The program, the first time the worker is asked to run `key`. */
  readonly program?: ProgramIR;
  readonly backend: string;
  readonly executionProvider?: string;
  readonly inputs: readonly HostData[];
}

export type WorkerMessage = ({ kind: "run"; id: number } & ShardRequest) | { kind: "release"; key: string };
/** A run's outputs, and the input arrays handed back for the next run (those no output shares). */
export interface ShardResult {
  readonly outputs: HostData[];
  readonly inputs: HostData["data"][];
}
export type WorkerReply = ({ id: number } & ShardResult) | { id: number; error: string };

const workerScript = new URL("./shard-worker.js", import.meta.url);

/** Workers can start when this module runs compiled (the worker script exists beside it). */
export const workersAvailable = import.meta.url.endsWith(".js");

/** The default number of workers: one per core besides this thread's, none from TypeScript sources. */
export function defaultWorkers(): number {
  return workersAvailable ? availableParallelism() - 1 : 0;
}

interface Pending {
  resolve(result: ShardResult): void;
  reject(error: Error): void;
}

class ShardWorker {
  private readonly worker: Worker;
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;
  /** Program keys this worker has compiled. */
  readonly knows = new Set<string>();
  failed: Error | undefined;

  constructor() {
    this.worker = new Worker(workerScript);
    this.worker.unref();
    this.worker.on("message", (reply: WorkerReply) => this.settle(reply));
    this.worker.on("error", (error) => this.fail(error));
    this.worker.on("exit", (code) => this.fail(new Error(`a shard worker exited (code ${code})`)));
  }

  run(request: ShardRequest): Promise<ShardResult> {
    const id = this.nextId++;
    const transfer = [...new Set(request.inputs.map((h) => h.data.buffer as ArrayBuffer))];
    if (this.pending.size === 0) this.worker.ref();
    const done = new Promise<ShardResult>((resolve, reject) => this.pending.set(id, { resolve, reject }));
    this.worker.postMessage({ kind: "run", id, ...request } satisfies WorkerMessage, transfer);
    this.knows.add(request.key);
    return done;
  }

  release(key: string): void {
    if (!this.knows.delete(key) || this.failed !== undefined) return;
    this.worker.postMessage({ kind: "release", key } satisfies WorkerMessage);
  }

  private settle(reply: WorkerReply): void {
    const pending = this.pending.get(reply.id);
    this.pending.delete(reply.id);
    // Idle workers must not keep the process alive.
    if (this.pending.size === 0) this.worker.unref();
    if ("error" in reply) pending?.reject(new Error(reply.error));
    else pending?.resolve(reply);
  }

  private fail(error: Error): void {
    this.failed ??= error;
    for (const pending of this.pending.values()) pending.reject(error);
    this.pending.clear();
  }
}

const workers: ShardWorker[] = [];

/** Worker `index`, started (or restarted after a failure) as needed. */
export function shardWorker(index: number): ShardWorker {
  let worker = workers[index];
  if (worker === undefined || worker.failed !== undefined) workers[index] = worker = new ShardWorker();
  return worker;
}

/** Tells every worker that knows `key` to free its compiled program. */
export function releaseOnWorkers(key: string): void {
  for (const worker of workers) worker?.release(key);
}
