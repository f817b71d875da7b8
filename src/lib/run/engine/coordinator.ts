/**
 * The coordinator side of `fedtensor run --engine redis://...`: each round's chunks become a
 * BullMQ flow (one child job per chunk, a parent job per round that completes when they all
 * have), and the children's partial accumulators come back in chunk order for the merge.
 *
 * A job carries a reference to its chunk (round, client positions, batches per client, the run
 * config that says how data is loaded, split and sampled), never examples: workers build the
 * chunk's batches from the data set themselves. The fused work+accumulate part (its IR, JSON)
 * is stored once per program under its hash, with the zero part; the inputs every chunk shares
 * (the broadcast model, prepare's outputs) once per round.
 *
 * Client state (keepOnClients) travels the same way as the shared inputs: each chunk's clients'
 * states as one binary record under a key its job names, and their new states back in the
 * chunk's result, beside its partial accumulator (docs/distributed.md "Client state").
 *
 * When Redis loses the round's jobs (a restart without persistence), the round is redone with
 * the same inputs: chunks are pure functions of their reference, so the result is the same.
 * When Redis stays unreachable for `timeoutMs`, FT319: the run stops with its last checkpoint.
 */
import { createHash, randomUUID } from "node:crypto";
import * as tf from "@tensorflow/tfjs";
import { FlowProducer, Job, Queue } from "bullmq";
import type { Redis } from "ioredis";
import { ftError } from "../../../errors/error.js";
import type { TreeDef } from "../../../ir/types.js";
import type { MapReduceForm } from "../../../transform/mapreduce.js";
import type { HostTensor } from "../../data/host-tensor.js";
import type { ChunkEngine, PlacedChunk } from "../cohort.js";
import type { RunConfig } from "../config.js";
import { bullConnection, checkReachable, chunkQueue, keys, roundQueue, timedOut, within } from "./redis.js";
import { decodeRecord, encodeRecord, toTensor } from "./wire.js";

/** What a chunk job carries: a reference to its clients' data, and where the program and shared inputs are. */
export interface ChunkJobData {
  readonly session: string;
  readonly round: number;
  readonly chunk: number;
  readonly clients: readonly number[];
  /** The clients' places in the round's cohort (clientIndex()). */
  readonly positions: readonly number[];
  /** The clients' rows of the round's per-client inputs besides the data (cohort.ts PerClientInputs). */
  readonly perClient: Readonly<Record<string, JobTensor>>;
  /** The int32 per-client inputs the worker draws from its own CSPRNG, by shape: their values never pass through Redis. */
  readonly drawn: Readonly<Record<string, readonly number[]>>;
  readonly steps: number;
  readonly form: string;
  readonly inputs: string;
  /** The key the worker stores the chunk's partial accumulator at (a binary record, wire.ts). */
  readonly result: string;
  readonly config: RunConfig;
  readonly featureShape: readonly number[];
  /** Where the chunk's clients' state is (a binary record of the state input's leaves, by path under `input`); absent without client state. */
  readonly state?: { readonly input: string; readonly key: string };
}

/**
 * A chunk job's return value: the size of the partial accumulator it stored at its `result`
 * key, or that its coordinator was gone. The accumulator itself stays out of BullMQ, whose
 * events stream would otherwise keep a copy of every one (megabytes each) after the run.
 */
export type ChunkResult = { readonly bytes: number } | { readonly abandoned: true };

/**
 * The form as workers load it: the fused part's IR and names, the round program's input tree
 * (where its CLIENTS data goes), and the zero part (the accumulator a chunk starts from).
 */
export interface StoredForm {
  readonly ir: unknown;
  readonly inputs: readonly string[];
  readonly outputs: readonly string[];
  readonly inputTree: TreeDef;
  readonly zero: { readonly ir: unknown; readonly outputs: readonly string[] };
  /** The inputs the worker fills per chunk (src/runtime/mapreduce.ts chunkInputs): places in the cohort, fresh group keys. */
  readonly clientIndexInputs: readonly string[];
  readonly groupKeyInputs: readonly string[];
}

/** A host tensor as a job's JSON carries it. */
export interface JobTensor {
  readonly shape: readonly number[];
  readonly dtype: "float32" | "int32";
  readonly data: readonly number[];
}

const jobTensor = ({ shape, data }: HostTensor): JobTensor => ({ shape, dtype: data instanceof Int32Array ? "int32" : "float32", data: Array.from(data) });

/** Bytes through Redis: to Redis (form as JSON, inputs as a binary record, jobs) and back (chunks' binary records). */
export interface EngineTraffic {
  rounds: number;
  sent: number;
  received: number;
}

const sessionTtlMs = 10_000;
const pollMs = 50;
/**
 * A round still waiting on its chunks with workers connected says so after this many times
 * --wait-notice (15 s by default), and again each time as long again passes: later than the
 * "no worker is connected" notice, as a stall of a connected worker's chunk may still clear.
 */
const stillWaitingFactor = 1.5;
const hourMs = 3_600_000;
/**
 * BullMQ's events streams, trimmed to about this many events (the default is 10,000). Events
 * are small here (a chunk's return value is its size), but a stream is never read by FedTensor.
 */
export const eventsKept = 1000;

const queueOptions = (connection: Redis) => ({ connection, streams: { events: { maxLen: eventsKept } } });

/**
 * What a round that waits on its chunks with workers connected is waiting for (issue 34: a
 * worker killed mid-chunk stalled the round about a minute in silence). BullMQ hands a dead
 * worker's chunk to another only once the chunk's lock lapses (the worker's --lock-duration)
 * and a stalled-job check runs (--stalled-interval); a chunk stalled more than twice
 * (maxStalledCount, worker.ts), or failed on every attempt, fails the round (FT320). Otherwise the round waits while workers are connected.
 */
export function stillWaitingLine(round: number, waiting: number, total: number, waitedMs: number, workers: number): string {
  return (
    `round ${round}: ${waiting} of ${total} chunks not done after ${Math.round(waitedMs / 1000)} s, with ${workers} worker${workers === 1 ? "" : "s"} connected; ` +
    "a chunk whose worker died goes to another once its lock lapses (the worker's --lock-duration, 30 s by default, then a --stalled-interval check, 30 s by default: about a minute); " +
    "a chunk stalled 3 times, or failed on 3 attempts, stops the run with FT320 (docs/distributed.md)"
  );
}

export class RedisEngine {
  readonly traffic: EngineTraffic = { rounds: 0, sent: 0, received: 0 };
  private readonly session = randomUUID();
  private readonly heartbeat: NodeJS.Timeout;

  private constructor(
    readonly url: string,
    private readonly redis: Redis,
    private readonly flows: FlowProducer,
    private readonly rounds: Queue,
    private readonly chunks: Queue,
    private readonly log: (line: string) => void,
    private readonly timeoutMs: number,
    /** --wait-notice: how long a round waits with no worker connected before it says so. */
    private readonly noticeMs: number,
  ) {
    this.heartbeat = setInterval(() => void this.beat().catch(() => {}), sessionTtlMs / 5);
    this.heartbeat.unref();
  }

  /** Connects to Redis at `url`; FT319 at once when it cannot be reached. */
  static async open(url: string, log: (line: string) => void, timeoutMs = 30_000, noticeMs = 10_000): Promise<RedisEngine> {
    await checkReachable(url);
    const redis = bullConnection(url);
    // ioredis reconnects by itself; a lasting outage surfaces as FT319 from the round's wait.
    redis.on("error", () => {});
    await redis.connect();
    const engine = new RedisEngine(url, redis, new FlowProducer({ connection: redis }), new Queue(roundQueue, queueOptions(redis)), new Queue(chunkQueue, queueOptions(redis)), log, timeoutMs, noticeMs);
    await engine.beat();
    await engine.removeAbandonedRounds();
    return engine;
  }

  /** Removes the rounds (and their chunks' results) left by coordinators that are gone, such as one that crashed. */
  private async removeAbandonedRounds(): Promise<void> {
    for (const job of await this.rounds.getJobs(["waiting", "waiting-children", "failed"])) {
      const session = (job?.data as { session?: string } | undefined)?.session;
      if (session === undefined || (await this.redis.exists(keys.session(session))) === 1) continue;
      // A chunk that a worker holds cannot be removed now; its round goes at the next start.
      await job.remove().catch(() => {});
    }
  }

  /** The chunk engine for one round of a run with `config`, whose model sees examples of `featureShape`. */
  forRound(config: RunConfig, round: number, featureShape: readonly number[]): ChunkEngine {
    return { partials: (form, inputTree, chunks) => (shared) => this.roundPartials({ config, round, featureShape }, form, inputTree, chunks, shared) };
  }

  /** Closes the queues and the connection; bounded in time, so a run that failed with Redis gone still ends. */
  async close(): Promise<void> {
    clearInterval(this.heartbeat);
    await within(Promise.allSettled([this.flows.close(), this.rounds.close(), this.chunks.close(), this.redis.del(keys.session(this.session))]), 2000);
    this.redis.disconnect();
  }

  private beat(): Promise<unknown> {
    return this.redis.set(keys.session(this.session), "1", "PX", sessionTtlMs);
  }

  /** A Redis command that gives up with FT319 when Redis stays unreachable for the timeout. */
  private async command<T>(run: () => Promise<T>): Promise<T> {
    const result = await within(run(), this.timeoutMs);
    if (result === timedOut) throw ftError("FT319", { url: this.url, why: `no answer for ${this.timeoutMs / 1000} s during a round` });
    return result;
  }

  private async *roundPartials(
    ctx: { config: RunConfig; round: number; featureShape: readonly number[] },
    form: MapReduceForm,
    inputTree: TreeDef,
    chunks: readonly PlacedChunk[],
    shared: ReadonlyMap<string, unknown>,
  ): AsyncIterable<Map<string, tf.Tensor>> {
    const part = form.workAndAccumulate;
    const zero = form.parts.zero;
    // Workers run zero themselves: its accumulator is as large as the model, and the same everywhere.
    // They fill the chunk's places and draw its group keys (a secure sum's) themselves too.
    const perChunk = new Set([...form.clientInputs, ...zero.outputs, ...form.clientIndexInputs, ...form.groupKeyInputs]);
    const names = part.inputs.filter((name) => !perChunk.has(name));
    const missing = names.find((name) => shared.get(name) === undefined);
    if (missing !== undefined) throw ftError("FT302", { what: `input ${missing}`, why: "missing (a streamed round takes every input the program declares)" });
    const inputs = await encodeRecord(new Map(names.map((name) => [name, shared.get(name)])));
    const stored: StoredForm = {
      ir: part.ir,
      inputs: part.inputs,
      outputs: part.outputs,
      inputTree,
      zero: { ir: zero.ir, outputs: zero.outputs },
      clientIndexInputs: form.clientIndexInputs,
      groupKeyInputs: form.groupKeyInputs,
    };
    const formJson = JSON.stringify(stored);
    const hash = createHash("sha256").update(formJson).digest("hex").slice(0, 32);
    this.traffic.rounds++;
    for (let attempt = 1; ; attempt++) {
      const results = await this.runFlow(ctx, attempt, { hash, json: formJson }, inputs, chunks);
      if (results !== undefined) {
        yield* this.readResults(ctx.round, part.outputs, results);
        return;
      }
      this.log(`round ${ctx.round}: Redis lost the round's jobs (restarted?); redoing the round`);
    }
  }

  /** One attempt at a round's flow: the keys of the chunks' accumulators in chunk order, or undefined when Redis lost the jobs. */
  private async runFlow(
    ctx: { config: RunConfig; round: number; featureShape: readonly number[] },
    attempt: number,
    form: { hash: string; json: string },
    inputs: Buffer,
    chunks: readonly PlacedChunk[],
  ): Promise<string[] | undefined> {
    const formKey = keys.form(form.hash);
    const inputsKey = keys.inputs(this.session, ctx.round, attempt);
    const parentId = `${this.session}-${ctx.round}-${attempt}`;
    const childId = (k: number) => `${parentId}-${k}`;
    const resultKeys = chunks.map((_, k) => keys.result(this.session, ctx.round, attempt, k));
    const stateKeys = chunks.flatMap((chunk, k) => (chunk.state === undefined ? [] : [keys.state(this.session, ctx.round, attempt, k)]));
    await this.command(async () => {
      // After a Redis restart the form is gone too: stored again whenever it is missing. It
      // lasts an hour past the last round that used it, so runs of one program share it and
      // nothing of a finished run stays for long.
      if ((await this.redis.set(formKey, form.json, "PX", hourMs, "NX")) !== null) this.traffic.sent += form.json.length;
      else await this.redis.pexpire(formKey, hourMs);
      await this.redis.set(inputsKey, inputs, "PX", hourMs);
      await this.beat();
    });
    this.traffic.sent += inputs.length;
    // One chunk's states encoded at a time: the coordinator holds the cohort's stacked states and one record.
    for (const [k, chunk] of chunks.entries()) {
      if (chunk.state === undefined) continue;
      const record = await encodeRecord(new Map(Object.entries(chunk.state.rows)));
      await this.command(() => this.redis.set(keys.state(this.session, ctx.round, attempt, k), record, "PX", hourMs));
      this.traffic.sent += record.length;
    }
    const children = chunks.map((chunk, k) => {
      const data: ChunkJobData = { session: this.session, round: ctx.round, chunk: k, clients: [...chunk.clients], positions: [...chunk.positions], perClient: Object.fromEntries(Object.entries(chunk.perClient).map(([name, rows]) => [name, jobTensor(rows)])), drawn: chunk.drawn, steps: chunk.steps, form: formKey, inputs: inputsKey, result: resultKeys[k]!, config: ctx.config, featureShape: ctx.featureShape, ...(chunk.state === undefined ? {} : { state: { input: chunk.state.input, key: keys.state(this.session, ctx.round, attempt, k) } }) };
      this.traffic.sent += JSON.stringify(data).length;
      return { name: "chunk", queueName: chunkQueue, data, opts: { jobId: childId(k), attempts: 3, continueParentOnFailure: true } };
    });
    await this.command(() => this.flows.add({ name: "round", queueName: roundQueue, data: { session: this.session, round: ctx.round }, opts: { jobId: parentId }, children }));
    const started = Date.now();
    let toldNoWorkers = false;
    const stillWaitingMs = this.noticeMs * stillWaitingFactor;
    let nextWaitReport = started + stillWaitingMs;
    let job: Job | undefined;
    for (;;) {
      await new Promise((resolve) => setTimeout(resolve, pollMs));
      job = await this.command(() => Job.fromId(this.rounds, parentId));
      if (job === undefined) return undefined;
      const state = await this.command(() => job!.getState());
      if (state === "unknown") return undefined;
      if (state !== "waiting-children") break;
      if (!toldNoWorkers && Date.now() - started > this.noticeMs && (await this.command(() => this.chunks.getWorkersCount())) === 0) {
        // The chunks not done yet: a worker that left may have done some.
        const { unprocessed } = await this.command(() => job!.getDependenciesCount({ unprocessed: true }));
        this.log(`round ${ctx.round}: ${unprocessed ?? chunks.length} of ${chunks.length} chunks wait in Redis at ${this.url} and no worker is connected; start one with: fedtensor worker --redis ${this.url}`);
        toldNoWorkers = true;
      }
      if (Date.now() >= nextWaitReport) {
        nextWaitReport = Date.now() + stillWaitingMs;
        const workers = await this.command(() => this.chunks.getWorkersCount());
        if (workers > 0) {
          const { unprocessed } = await this.command(() => job!.getDependenciesCount({ unprocessed: true }));
          this.log(stillWaitingLine(ctx.round, unprocessed ?? chunks.length, chunks.length, Date.now() - started, workers));
        }
      }
    }
    // A chunk that failed every attempt moves the round on at once (continueParentOnFailure), its error kept.
    const [failed] = Object.entries(await this.command(() => job!.getIgnoredChildrenFailures()));
    // A failed or lost round's keys go with its job; a done round's results go one by one as they merge (readResults).
    const forget = () => this.command(() => Promise.all([job!.remove(), this.redis.del(inputsKey, ...resultKeys, ...stateKeys)])).catch(() => {});
    if (failed !== undefined) {
      await forget();
      const chunk = chunks.findIndex((_, k) => failed[0].endsWith(`:${childId(k)}`));
      throw ftError("FT320", { chunk, round: ctx.round, why: failed[1] });
    }
    const values = await this.command(() => job!.getChildrenValues<ChunkResult>());
    const done = chunks.map((_, k) => values[`${this.chunks.qualifiedName}:${childId(k)}`]);
    const stored = done.every((r) => r !== undefined && "bytes" in r) ? await this.command(() => this.redis.exists(...resultKeys)) : -1;
    // A chunk skipped as abandoned (the session key was lost with Redis's data) or lost: the round is redone.
    if (stored !== chunks.length) {
      await forget();
      return undefined;
    }
    await this.command(() => Promise.all([job!.remove(), this.redis.del(inputsKey, ...stateKeys)])).catch(() => {});
    return resultKeys;
  }

  /**
   * The chunks' partial accumulators, read from Redis one at a time as the merge takes them,
   * each deleted once read: the coordinator holds the running total and one partial, not every
   * chunk's at once (400 groups of the 2NN were 320 MB). FT330 when one vanishes meanwhile.
   */
  private async *readResults(round: number, outputs: readonly string[], resultKeys: readonly string[]): AsyncIterable<Map<string, tf.Tensor>> {
    let next = 0;
    try {
      for (; next < resultKeys.length; next++) {
        const key = resultKeys[next]!;
        const record = await this.command(() => this.redis.getBuffer(key));
        if (record === null) throw ftError("FT330", { chunk: next, round });
        this.traffic.received += record.length;
        await this.command(() => this.redis.del(key));
        const acc = decodeRecord(record);
        yield new Map(outputs.map((name) => [name, toTensor(acc.get(name)!)]));
      }
    } finally {
      // A merge that stopped part way leaves no result behind.
      if (next < resultKeys.length) await this.command(() => this.redis.del(...resultKeys.slice(next))).catch(() => {});
    }
  }
}
