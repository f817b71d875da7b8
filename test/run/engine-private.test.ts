/**
 * Private rounds on the BullMQ engine (docs/distributed.md "Private rounds"), with a real
 * redis-server, two real `fedtensor worker` processes and the coordinator in this process,
 * every byte that reaches Redis captured (its MONITOR stream: keys, values, job payloads):
 * - DP: the noise key, each round's key and the keys split from them never reach Redis (the
 *   noise is drawn at the coordinator, in the round's update), and the run gives the bytes of
 *   the in-process streamed run under the same secret;
 * - quantized, attacked, norm-clipped rounds (per-client inputs and clientIndex() in the jobs)
 *   give the in-process streamed run's bytes;
 * - secure: Redis holds each group's sum (the sum of its clients' values, of the size of one
 *   client's), in groups of at least --secure-group-min, nothing per client, and the run gives
 *   the bytes of the in-process streamed run;
 * - AFL: its client ids (an int32 per-client input) travel in the jobs, same bytes;
 * - distributed DP: its clients' keys never go into a job (each worker draws its clients' own
 *   from its CSPRNG), and each group holds at least --min-clients clients.
 * Skipped, saying why, without redis-server.
 */
import type { ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import * as tf from "@tensorflow/tfjs";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { redisBinary, startRedis, type RedisServer } from "../../bench/redis-server.js";
import { atServer, foldIn, i32, program, split } from "../../src/index.js";
import { loadLatestCheckpoint } from "../../src/lib/run/checkpoint.js";
import { validateRunConfig } from "../../src/lib/run/config.js";
import { decodeRecord } from "../../src/lib/run/engine/wire.js";
import { federatedData } from "../../src/lib/run/setup.js";
import { train } from "../../src/lib/run/train.js";
import { RunSecret, SECRET_FILE } from "../../src/lib/privacy/secret.js";
import { startWorker } from "./cli.js";
import { capturedHas, captureRedis, type RedisCapture } from "./redis-capture.js";
import { tempDir } from "./temp-dir.js";
import { deadline } from "../helpers/deadline.js";

if (redisBinary === undefined) console.log("private engine tests skipped: redis-server is not installed (apt-get install redis-server)");

const small = { model: "logistic", clients: 30, clientsPerRound: 7, chunkClients: 3, batchSize: 100, rounds: 2, checkpointEvery: 2 } as const;
const quiet = { write: () => true, isTTY: false };

async function run(options: Record<string, unknown>): Promise<{ out: string; params: Record<string, string> }> {
  const out = tempDir("ft-engine-private-");
  await train(validateRunConfig({ ...small, out, ...options }, "test"), quiet);
  const loaded = await loadLatestCheckpoint(out);
  const params = (loaded!.checkpoint.serverState as unknown as { params: Record<string, { data: Float32Array }> }).params;
  return { out, params: Object.fromEntries(Object.entries(params).map(([k, t]) => [k, Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength).toString("base64")])) };
}

/** The ways a key's two int32 words could be written: raw bytes either endianness, decimal text. */
function encodings([a, b]: readonly number[]): Buffer[] {
  const le = Buffer.alloc(8);
  le.writeInt32LE(a!, 0);
  le.writeInt32LE(b!, 4);
  const be = Buffer.alloc(8);
  be.writeInt32BE(a!, 0);
  be.writeInt32BE(b!, 4);
  return [le, be, Buffer.from(`${a},${b}`), Buffer.from(`${a}, ${b}`)];
}

/** The DP round's keys as the program derives them (src/lib/algorithms/dp-fedavg.ts, src/front/privacy.ts): foldIn(key, round), its split, the update key's split per leaf. */
const derivedKeys = program({ key: atServer(i32([2])), round: i32([]) }, ({ key, round }) => {
  const roundKey = foldIn(key, round);
  const [updateKey, countKey] = split(roundKey, 2);
  const [w, b] = split(updateKey, 2);
  return { roundKey, updateKey, countKey, w, b };
});

async function dpKeys(root: [number, number], rounds: number): Promise<number[][]> {
  const keys = [root as number[]];
  for (let round = 1; round <= rounds; round++) {
    const out = (await derivedKeys.run({ key: root, round } as never, { backend: "cpu" })) as unknown as Record<string, tf.Tensor>;
    for (const t of Object.values(out)) keys.push(Array.from(await t.data()));
    tf.dispose(Object.values(out));
  }
  return keys;
}

describe.skipIf(redisBinary === undefined)("private rounds on the BullMQ engine", () => {
  let redis: RedisServer;
  let workers: ChildProcess[] = [];

  beforeAll(async () => {
    redis = await startRedis();
    workers = await Promise.all([startWorker(redis.url), startWorker(redis.url)]);
  }, deadline(60_000));
  afterAll(() => {
    for (const w of workers) w.kill("SIGKILL");
    redis?.stop();
  });

  /** Runs with the engine while every command to Redis is captured; a control value checks that the capture sees binary values as sent. */
  async function captured(options: Record<string, unknown>): Promise<{ out: string; params: Record<string, string>; capture: RedisCapture }> {
    const capture = await captureRedis(redis.port);
    const control = Buffer.concat([randomBytes(16), Buffer.from('\0\r\n"\\ ')]);
    const connection = new Redis(redis.url);
    await connection.set("control", control);
    connection.disconnect();
    try {
      const result = await run({ ...options, engine: redis.url });
      expect(capturedHas(capture, control)).toBe(true);
      return { ...result, capture };
    } finally {
      await capture.stop();
    }
  }

  test("DP: no key of the noise ever reaches Redis, and the engine gives the in-process streamed run's bytes under the same secret", async () => {
    const dp = { aggregator: "dp", dpClip: 0.5, dpNoise: 1 };
    const { out, capture } = await captured(dp);
    // The chunks went through the workers: their results were stored.
    expect(capture.args.some((arg) => arg.toString("latin1").startsWith("fedtensor:result:"))).toBe(true);
    const secret = await RunSecret.load(out);
    const keys = await dpKeys(secret.key("dp-noise"), small.rounds);
    expect(keys).toHaveLength(1 + 5 * small.rounds);
    for (const key of keys) for (const bytes of encodings(key)) expect(capturedHas(capture, bytes), `key ${key} as ${bytes.toString("hex")}`).toBe(false);
    // Nor the run's secret itself, as its file's hex or as bytes.
    const hex = readFileSync(join(out, SECRET_FILE), "utf8").trim();
    for (const bytes of [Buffer.from(hex), Buffer.from(hex, "hex")]) expect(capturedHas(capture, bytes)).toBe(false);
    // The research mode's secret (--dp-insecure-seed), so that two runs share it.
    const seeded = { ...dp, dpInsecureSeed: 1234 };
    const [local, remote] = [await run(seeded), await captured(seeded)];
    expect(remote.params).toEqual(local.params);
  }, deadline(300_000));

  test("secure: Redis holds each group's sum, in groups of at least --secure-group-min, and the engine gives the in-process streamed run's bytes", async () => {
    const secure = { aggregator: "secure", secureBits: 30, secureGroupMin: 3 };
    const { params, capture, out } = await captured(secure);
    // Each job names its group; each result is the group's accumulator.
    const jobs = capture.args.flatMap((arg) => {
      const text = arg.toString("utf8");
      if (!text.startsWith("{") || !text.includes('"positions"')) return [];
      const data = JSON.parse(text) as { round: number; chunk: number; clients: number[]; result: string };
      return [data];
    });
    const results = new Map<string, Buffer>();
    capture.args.forEach((arg, i) => {
      const key = arg.toString("latin1");
      if (key.startsWith("fedtensor:result:") && capture.args[i - 1]?.toString().toUpperCase() === "SET") results.set(key, capture.args[i + 1]!);
    });
    const groups = new Map(jobs.map((job) => [job.result, job]));
    expect(groups.size).toBe(2 * small.rounds);
    const data = federatedData(validateRunConfig({ ...small, out, ...secure }, "test"));
    const sizes = new Set<number>();
    for (const [key, record] of results) {
      const group = groups.get(key)!;
      expect(group.clients.length).toBeGreaterThanOrEqual(3);
      const acc = decodeRecord(record);
      // Two leaves of weighted updates and the total weight: one client's size, whatever the group's.
      sizes.add(record.length);
      const entries = [...acc.values()].map((v) => (typeof v === "number" ? { shape: [], data: Float32Array.of(v) } : v));
      expect(entries.map((e) => e.shape)).toEqual([[784, 10], [10], []]);
      // The weight the server learns: the group's total number of examples, no client's own.
      const weight = entries[2]!.data[0];
      expect(weight).toBe(group.clients.reduce((n, c) => n + data.clientIndices[c]!.length, 0));
    }
    expect(results.size).toBe(2 * small.rounds);
    expect(sizes.size).toBe(1);
    const local = await run(secure);
    expect(params).toEqual(local.params);
  }, deadline(300_000));

  test("quantized updates under a sign-flip attack, norm-clipped: the engine gives the in-process streamed run's bytes", async () => {
    const robust = { aggregator: "norm-clip", normBound: 1, quantizeBits: 4, attack: "sign-flip", byzantine: 0.3 };
    const [local, remote] = [await run(robust), await captured(robust)];
    expect(remote.params).toEqual(local.params);
  }, deadline(300_000));

  test("AFL: each job carries its clients' ids, an int32 per-client input, and the engine gives the in-process streamed run's bytes", async () => {
    const afl = { algorithm: "afl", aflLr: 0.01 };
    const [local, remote] = [await run(afl), await captured(afl)];
    expect(capturedHas(remote.capture, Buffer.from('"perClient":{"client":{"shape":['))).toBe(true);
    expect(capturedHas(remote.capture, Buffer.from('"dtype":"int32"'))).toBe(true);
    expect(remote.params).toEqual(local.params);
  }, deadline(300_000));

  test("distributed DP: the workers draw their clients' keys, which never reach Redis, in groups of at least --min-clients", async () => {
    const ddp = { aggregator: "distributed-dp", minClients: 3, ddpClip: 10, ddpNoise: 0.001, ddpBits: 20 };
    const { out, capture } = await captured(ddp);
    const jobs = capture.args.flatMap((arg) => {
      const text = arg.toString("utf8");
      return text.startsWith("{") && text.includes('"positions"') ? [JSON.parse(text) as { clients: number[]; perClient: object; drawn: Record<string, number[]> }] : [];
    });
    expect(jobs.length).toBeGreaterThanOrEqual(2 * small.rounds);
    for (const job of jobs) {
      // Only the keys' shape travels: one i32[2] per client of the group, drawn by the worker.
      expect(job.perClient).toEqual({});
      expect(job.drawn).toEqual({ clientKeys: [job.clients.length, 2] });
      expect(job.clients.length).toBeGreaterThanOrEqual(3);
    }
    // Nor the keys this process would have used (derived from the run's secret), nor the secret.
    const secret = await RunSecret.load(out);
    for (let round = 1; round <= small.rounds; round++)
      for (let client = 0; client < small.clients; client++) for (const bytes of encodings(secret.clientKey(round, client))) expect(capturedHas(capture, bytes)).toBe(false);
    const hex = readFileSync(join(out, SECRET_FILE), "utf8").trim();
    for (const bytes of [Buffer.from(hex), Buffer.from(hex, "hex")]) expect(capturedHas(capture, bytes)).toBe(false);
    // It trained: the little noise leaves the logistic model well above chance.
    const rows = readFileSync(join(out, "metrics.jsonl"), "utf8").trim().split("\n").map((line) => JSON.parse(line) as { test_accuracy?: number; epsilon?: number });
    expect(rows.at(-1)!.test_accuracy!).toBeGreaterThan(0.5);
  }, deadline(300_000));
});
