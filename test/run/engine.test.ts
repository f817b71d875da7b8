/**
 * `fedtensor run --engine redis://...` with `fedtensor worker`s, all real processes against a
 * real redis-server on a free local port: the result is bit-identical to the in-process
 * streamed run with the same seed and chunking, through a worker killed with kill -9 mid-job
 * (BullMQ's stalled-job check hands its job to a worker that joined mid-run), a Redis restart
 * (the round is redone) and a coordinator crash (--resume). Skipped, saying why, without redis-server.
 */
import { type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { FlowProducer, Queue } from "bullmq";
import { Redis } from "ioredis";
import { loadLatestCheckpoint } from "../../src/lib/run/checkpoint.js";
import { RedisEngine } from "../../src/lib/run/engine/coordinator.js";
import { roundQueue } from "../../src/lib/run/engine/redis.js";
import { chunkProcessor } from "../../src/lib/run/engine/worker.js";
import { inProcessCli, metricsRows, runCli, startCli } from "./cli.js";
import { freePort, redisBinary, startRedis, type RedisServer } from "../../bench/redis-server.js";
import { tempDir } from "./temp-dir.js";
import { deadline } from "../helpers/deadline.js";

if (redisBinary === undefined) console.log("engine tests skipped: redis-server is not installed (apt-get install redis-server; .ci/run does)");

/** FedAvg of `model` on `dataset`, 12 clients a round in chunks of 3, 2 rounds, a checkpoint each round. */
const runOf = (model: string, dataset: string) => (out: string, ...extra: string[]) => [
  "run", "--model", model, "--dataset", dataset, "--clients", "60", "--clients-per-round", "12", "--chunk-clients", "3", "--batch-size", "50",
  "--rounds", "2", "--checkpoint-every", "1", "--out", out, ...extra,
];
/**
 * The 2NN on MNIST (4 chunks a round): for the tests that act while a worker holds a chunk or
 * while round 2 runs, whose window is a chunk's time (a worker's first chunk reads MNIST, a
 * second or more).
 */
const runArgs = runOf("2nn", "mnist");
/**
 * Logistic regression on the synthetic set: for the tests whose claim holds for any model and data
 * and that never act mid-chunk; each process makes the data in milliseconds where every worker and
 * run read MNIST for seconds.
 */
const syntheticArgs = runOf("logistic", "synthetic");
/**
 * Locks short enough that a killed worker's job is noticed within seconds (the defaults are
 * 30 s), long enough that a worker busy with a chunk on a loaded machine still renews its lock
 * in time (1 s was not). Every test's workers use them: BullMQ's stalled check runs at most
 * once per the interval of whichever worker ran it last, across the queue.
 */
const fastStalls = ["--lock-duration", "8000", "--stalled-interval", "1000"];

/** The final model's bytes and the metrics without their times. */
async function outcome(out: string) {
  const loaded = await loadLatestCheckpoint(out);
  const params = (loaded!.checkpoint.serverState as unknown as { params: Record<string, { data: Float32Array }> }).params;
  const bytes = Object.fromEntries(Object.entries(params).map(([k, t]) => [k, Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength).toString("base64")]));
  const rows = metricsRows(out).map(({ seconds: _seconds, ...row }) => row);
  return { round: loaded!.checkpoint.round, bytes, rows };
}

interface Running {
  readonly child: ChildProcess;
  output: string;
  /** Resolves at the first output line matching `pattern`. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<string>;
  exited: Promise<number | null>;
}

const children: ChildProcess[] = [];

function start(args: string[]): Running {
  const child = startCli(args);
  children.push(child);
  const running: Running = {
    child,
    output: "",
    waitFor: (pattern, timeoutMs = 60_000) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const line = running.output.split("\n").find((l) => pattern.test(l));
          if (line === undefined) return false;
          clearTimeout(timer);
          child.stdout!.off("data", check);
          resolve(line);
          return true;
        };
        const timer = setTimeout(() => reject(new Error(`no line ${pattern} in ${deadline(timeoutMs)} ms; output:\n${running.output}`)), deadline(timeoutMs));
        if (!check()) child.stdout!.on("data", check);
      }),
    exited: new Promise((resolve) => child.once("exit", (code) => resolve(code))),
  };
  // Registered first, so waitFor's listeners see the text already appended.
  child.stdout!.prependListener("data", (chunk: Buffer) => (running.output += chunk.toString()));
  // prependListener, unlike on("data"), does not start the stream flowing.
  child.stdout!.resume();
  child.stderr!.on("data", (chunk: Buffer) => (running.output += chunk.toString()));
  return running;
}

const worker = (redis: RedisServer) => start(["worker", "--redis", redis.url, ...fastStalls]);
/**
 * A worker that is killed or stopped before it computes anything: its lock need not outlast a
 * busy chunk, so it is 2 s, and a job it held is handed on (or its stop, bounded by the lock
 * duration, ends) within seconds instead of the 8 s that fastStalls waits.
 */
const idleWorker = (redis: RedisServer) => start(["worker", "--redis", redis.url, "--lock-duration", "2000", "--stalled-interval", "1000"]);

/**
 * A worker and a run through it, returned once the worker has started a chunk of round 2 (round 1
 * is checkpointed). Both start at once: the run's chunks wait in Redis until the worker takes them.
 */
async function inRound2(redis: RedisServer, prefix: string, ...extra: string[]) {
  const w = worker(redis);
  const out = tempDir(prefix);
  const run = start(runArgs(out, "--engine", redis.url, ...extra));
  await w.waitFor(/round 2 chunk \d: \d+ clients/);
  return { out, run };
}

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill("SIGKILL");
});

// Refusals before anything connects: through the CLI's main in this process, no process start-up each.
describe("fedtensor worker's usage", () => {
  test("--redis is required, and options are checked before anything connects", async () => {
    const missing = await inProcessCli(["worker"]);
    expect(missing.status).toBe(2);
    expect(missing.output).toMatch(/--redis redis:\/\/host:port is required/);
    const bad = await inProcessCli(["worker", "--redis", "redis://127.0.0.1:1", "--concurrency", "0"]);
    expect(bad.status).toBe(2);
    expect(bad.output).toMatch(/FT305: --concurrency: expected a whole number from 1 to 2147483647, got 0/);
    const huge = await inProcessCli(["worker", "--redis", "redis://127.0.0.1:1", "--lock-duration", "1e12"]);
    expect(huge.output).toMatch(/FT305: --lock-duration: expected a whole number from 1 to 2147483647, got 1e12/);
    const notRedis = await inProcessCli(["worker", "--redis", "http://127.0.0.1:1"]);
    expect(notRedis.output).toMatch(/FT305: --redis: expected redis:\/\/host:port, got http:/);
  });
});

// Needs no redis-server: nothing listens on the port, which is the point.
describe("the BullMQ engine without a Redis", () => {
  test("Redis unreachable: FT319 at once from run and worker, never a hang", async () => {
    const nothing = `redis://127.0.0.1:${await freePort()}`;
    // Through the CLI's main in this process (the synthetic set: no MNIST read here); a hang would be cut off by the test's deadline.
    const run = await inProcessCli(syntheticArgs(tempDir("engine-none-"), "--engine", nothing));
    expect(run.status).toBe(1);
    expect(run.output).toMatch(/FT319: cannot reach Redis at redis:\/\/127\.0\.0\.1:\d+/);
    const alone = await inProcessCli(["worker", "--redis", nothing]);
    expect(alone.status).toBe(1);
    expect(alone.output).toMatch(/FT319/);
  }, deadline(60_000));
});

describe.skipIf(redisBinary === undefined)("the BullMQ engine", () => {
  let redis: RedisServer;
  let local: Awaited<ReturnType<typeof outcome>>;

  beforeAll(async () => {
    redis = await startRedis();
    const out = tempDir("engine-local-");
    const result = runCli(runArgs(out), 120_000);
    expect(result.status, result.stderr).toBe(0);
    local = await outcome(out);
    expect(local.round).toBe(2);
  }, deadline(150_000));
  afterAll(() => redis?.stop());

  test("a run through two workers is bit-identical to the in-process streamed run", async () => {
    const workers = [worker(redis), worker(redis)];
    await Promise.all(workers.map((w) => w.waitFor(/waiting for chunks/)));
    const out = tempDir("engine-two-");
    const run = start(runArgs(out, "--engine", redis.url));
    expect(await run.exited, run.output).toBe(0);
    expect(await outcome(out)).toEqual(local);
    expect(run.output).toMatch(/2 rounds through workers; [\d.]+ MB to Redis, [\d.]+ MB of partial accumulators back/);
    // Both took chunks: 8 chunks, each worker asks for the next as soon as it is free.
    for (const w of workers) expect(w.output).toMatch(/round \d chunk \d: done/);
  }, deadline(120_000));

  test("a worker killed with kill -9 mid-job: its job goes to a worker that joined mid-run, same bits", async () => {
    // Started with the run: the run's chunks wait in Redis for it, the only worker. Killed as its first job starts.
    const doomed = idleWorker(redis);
    const out = tempDir("engine-kill-");
    const run = start(runArgs(out, "--engine", redis.url));
    // Its first job starts by loading MNIST: a second or more in which it holds the job.
    const line = await doomed.waitFor(/round 1 chunk \d: \d+ clients/);
    doomed.child.kill("SIGKILL");
    const chunk = /chunk (\d)/.exec(line)![1]!;
    const joiner = worker(redis);
    expect(await run.exited, run.output).toBe(0);
    expect(doomed.output).not.toMatch(new RegExp(`round 1 chunk ${chunk}: done`));
    expect(joiner.output).toMatch(new RegExp(`round 1 chunk ${chunk}: done`));
    expect(await outcome(out)).toEqual(local);
  }, deadline(120_000));

  test("Redis restarting mid-round: the round is redone, same bits", async () => {
    const { out, run } = await inRound2(redis, "engine-restart-");
    await redis.restart(500);
    expect(await run.exited, run.output).toBe(0);
    expect(run.output).toMatch(/round 2: Redis lost the round's jobs \(restarted\?\); redoing the round/);
    expect(await outcome(out)).toEqual(local);
  }, deadline(120_000));

  test("a coordinator killed mid-round resumes with --resume, same bits", async () => {
    const { out, run: first } = await inRound2(redis, "engine-crash-");
    first.child.kill("SIGKILL");
    await first.exited;
    expect(existsSync(join(out, "metrics.jsonl"))).toBe(true);
    const resumed = start(runArgs(out, "--engine", redis.url, "--resume"));
    expect(await resumed.exited, resumed.output).toBe(0);
    expect(resumed.output).toMatch(/resumed from round 1/);
    expect(await outcome(out)).toEqual(local);
  }, deadline(120_000));

  test("with --client-holdout, workers train on the same split and the coordinator evaluates the clients: same bits as in-process", async () => {
    const holdout = ["--client-holdout", "0.2"];
    const inProcess = tempDir("engine-holdout-local-");
    const result = runCli([...syntheticArgs(inProcess), ...holdout], 120_000);
    expect(result.status, result.stderr).toBe(0);
    worker(redis);
    const out = tempDir("engine-holdout-");
    const run = start([...syntheticArgs(out, "--engine", redis.url), ...holdout]);
    expect(await run.exited, run.output).toBe(0);
    const [a, b] = [await outcome(inProcess), await outcome(out)];
    expect(b).toEqual(a);
    expect(b.rows[1]!.clients_evaluated).toBe(60);
  }, deadline(180_000));

  test("a chunk that fails on every attempt is FT320 naming the chunk and the worker's error", async () => {
    const connection = new Redis(redis.url);
    // The earlier tests stored the same program (same hash): gone first, so the key seen below is this run's.
    await connection.flushall();
    const out = tempDir("engine-fail-");
    const run = start(syntheticArgs(out, "--engine", redis.url));
    try {
      // Before any worker has read it, the program is deleted: every attempt at chunk 0 fails.
      let forms: string[] = [];
      while ((forms = await connection.keys("fedtensor:form:*")).length === 0) await new Promise((resolve) => setTimeout(resolve, 50));
      await connection.del(...forms);
    } finally {
      connection.disconnect();
    }
    worker(redis);
    expect(await run.exited, run.output).toBe(1);
    expect(run.output).toMatch(/FT320: chunk \d of round 1 failed on a worker: the program fedtensor:form:\w+ is not in Redis \(expired or deleted\)/);
  }, deadline(60_000));

  test("a worker skips the jobs of a coordinator that is gone, and a new coordinator removes their rounds", async () => {
    const connection = new Redis(redis.url, { maxRetriesPerRequest: null });
    const flows = new FlowProducer({ connection });
    const rounds = new Queue(roundQueue, { connection });
    try {
      const data = { session: "gone", round: 1, chunk: 0, clients: [0], steps: 1, form: "none", inputs: "none", config: {}, featureShape: [] };
      await flows.add({ name: "round", queueName: roundQueue, data: { session: "gone", round: 1 }, opts: { jobId: "gone-1-1" }, children: [{ name: "chunk", queueName: "unserved", data, opts: { jobId: "gone-1-1-0" } }] });
      const lines: string[] = [];
      const result = await chunkProcessor(connection, (line) => lines.push(line))({ id: "gone-1-1-0", data } as never);
      expect(result).toEqual({ abandoned: true });
      expect(lines).toEqual(["round 1 chunk 0: skipped, its coordinator is gone (job gone-1-1-0)"]);
      expect(await rounds.getJob("gone-1-1")).toBeDefined();
      const engine = await RedisEngine.open(redis.url, () => {});
      await engine.close();
      expect(await rounds.getJob("gone-1-1")).toBeUndefined();
    } finally {
      await Promise.all([flows.close(), rounds.close()]);
      connection.disconnect();
    }
  });

  test("Redis gone for good mid-run: FT319 after --engine-timeout, the last checkpoint kept", async () => {
    const own = await startRedis();
    try {
      const { out, run } = await inRound2(own, "engine-gone-", "--engine-timeout", "3");
      own.kill();
      expect(await run.exited, run.output).toBe(1);
      expect(run.output).toMatch(/FT319: cannot reach Redis at redis:\/\/127\.0\.0\.1:\d+: no answer for 3 s during a round/);
      expect((await outcome(out)).round).toBe(1);
    } finally {
      own.kill();
    }
  }, deadline(60_000));

  test("a worker stops on SIGTERM, also when its Redis is gone", async () => {
    const own = await startRedis();
    const w = idleWorker(own);
    await w.waitFor(/waiting for chunks/);
    own.kill();
    // Its first complaint that Redis is gone (the reset of its connections, else a refused reconnect: it says one every 5 s).
    await w.waitFor(/ECONNRESET|ECONNREFUSED/);
    w.child.kill("SIGTERM");
    expect(await w.exited).toBe(0);
    expect(w.output).toMatch(/worker stopped/);
  }, deadline(30_000));

});
