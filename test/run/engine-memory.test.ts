/**
 * Redis after several runs through the BullMQ engine (real redis-server, real `fedtensor worker`
 * and `fedtensor run` processes): what a run leaves behind does not grow with the number of
 * runs. Before results went to keys of their own, deleted once merged, each chunk's partial
 * accumulator stayed in BullMQ's events stream as base64: 10.5 MB of used_memory a run here.
 */
import type { ChildProcess } from "node:child_process";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Redis } from "ioredis";
import { redisBinary, startRedis, type RedisServer } from "../../bench/redis-server.js";
import { eventsKept } from "../../src/lib/run/engine/coordinator.js";
import { runCli, startWorker } from "./cli.js";
import { tempDir } from "./temp-dir.js";
import { deadline } from "../helpers/deadline.js";

if (redisBinary === undefined) console.log("engine memory test skipped: redis-server is not installed (apt-get install redis-server)");

/** 2NN (199,210 parameters, an 800 KB accumulator per chunk), 8 chunks of one client, 1 round. */
const chunksPerRun = 8;
const runs = 4;
const runArgs = (out: string, url: string) => [
  "run", "--model", "2nn", "--clients", "20", "--clients-per-round", "8", "--chunk-clients", "1", "--batch-size", "100",
  "--rounds", "1", "--engine", url, "--out", out,
];

/** Growth allowed from run 2 to the last: one run's leftovers were 10.5 MB for 8 chunks. */
const toleranceBytes = 1_000_000;

async function usedMemory(connection: Redis): Promise<number> {
  const info = await connection.info("memory");
  return Number(/^used_memory:(\d+)/m.exec(info)![1]);
}

describe.skipIf(redisBinary === undefined)(`Redis after ${runs} engine runs`, () => {
  let redis: RedisServer;
  let worker: ChildProcess;
  let connection: Redis;

  beforeAll(async () => {
    redis = await startRedis();
    connection = new Redis(redis.url);
    worker = await startWorker(redis.url);
  }, deadline(60_000));
  afterAll(() => {
    worker?.kill("SIGKILL");
    connection?.disconnect();
    redis?.stop();
  });

  test("used_memory stays flat, no result, input or job is left, the events streams are capped", async () => {
    const memory: number[] = [];
    const received: number[] = [];
    for (let run = 1; run <= runs; run++) {
      const result = runCli(runArgs(tempDir("ft-engine-memory-"), redis.url), 120_000);
      expect(result.status, result.stderr).toBe(0);
      received.push(Number(/MB to Redis, ([\d.]+) MB of partial accumulators back/.exec(result.stdout)![1]));
      memory.push(await usedMemory(connection));
    }
    console.log(`used_memory after each of ${runs} runs: ${memory.join(", ")} bytes; ${received[0]} MB of accumulators per run`);
    // Binary records: an accumulator of 199,210 float32 and a loss, 0.797 MB (base64 JSON took 1.06).
    expect(received[0]! / chunksPerRun).toBeGreaterThan(0.79);
    expect(received[0]! / chunksPerRun).toBeLessThan(0.81);
    expect(memory[runs - 1]! - memory[1]!).toBeLessThan(toleranceBytes);
    expect(await connection.keys("fedtensor:result:*")).toEqual([]);
    expect(await connection.keys("fedtensor:inputs:*")).toEqual([]);
    expect(await connection.keys("fedtensor:session:*")).toEqual([]);
    // One program, one form, which expires an hour after its last round.
    const forms = await connection.keys("fedtensor:form:*");
    expect(forms).toHaveLength(1);
    expect(await connection.pttl(forms[0]!)).toBeGreaterThan(0);
    for (const queue of ["fedtensor-chunks", "fedtensor-rounds"]) {
      expect(await connection.zcard(`bull:${queue}:completed`)).toBe(0);
      // BullMQ's scripts trim each XADD to the length in the queue's meta (default 10,000).
      expect(await connection.hget(`bull:${queue}:meta`, "opts.maxLenEvents")).toBe(String(eventsKept));
      expect(await connection.xlen(`bull:${queue}:events`)).toBeLessThan(eventsKept + 200);
    }
  }, deadline(900_000));
});
