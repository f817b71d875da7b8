/**
 * README's claim, with the commands it gives: a run whose chunks go to `fedtensor worker`s
 * (`--engine redis://...`) is bit-identical to the in-process run, with the default options
 * (10 clients a round, chunks of 100: one chunk, which in-process streams through the
 * MapReduce form as the engine does). Real processes and a real redis-server; the metrics
 * files are compared byte for byte but for each row's time, and the final models bit for bit.
 */
import type { ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { redisBinary, startRedis, type RedisServer } from "../../bench/redis-server.js";
import { loadLatestCheckpoint } from "../../src/lib/run/checkpoint.js";
import { runCli, startWorker } from "./cli.js";
import { tempDir } from "./temp-dir.js";
import { deadline } from "../helpers/deadline.js";

if (redisBinary === undefined) console.log("engine default-options test skipped: redis-server is not installed (apt-get install redis-server)");

/** metrics.jsonl as written, each row's `seconds` taken out of its text. */
const metricsText = (out: string) => readFileSync(join(out, "metrics.jsonl"), "utf8").replace(/,"seconds":[0-9.e+-]+/g, "");

async function modelBytes(out: string): Promise<string> {
  const params = (await loadLatestCheckpoint(out))!.checkpoint.serverState as unknown as { params: Record<string, { data: Float32Array }> };
  return Object.entries(params.params)
    .map(([name, t]) => `${name}:${Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength).toString("base64")}`)
    .join("\n");
}

describe.skipIf(redisBinary === undefined)("the README's engine commands, default options", () => {
  let redis: RedisServer;
  let worker: ChildProcess;

  beforeAll(async () => {
    redis = await startRedis();
    worker = await startWorker(redis.url);
  }, deadline(60_000));
  afterAll(() => {
    worker?.kill("SIGKILL");
    redis?.stop();
  });

  test.each([
    ["fedtensor run (defaults)", ["run"]],
    ["npm start's fedavg-mnist", ["run", "fedavg-mnist", "--eval-every", "1"]],
  ])("%s, 3 rounds: in-process and through a worker give the same bytes", async (_name, command) => {
    const [local, engine] = [tempDir("ft-default-local-"), tempDir("ft-default-engine-")];
    const inProcess = runCli([...command, "--rounds", "3", "--out", local], 300_000);
    expect(inProcess.status, inProcess.stderr).toBe(0);
    const remote = runCli([...command, "--rounds", "3", "--out", engine, "--engine", redis.url], 300_000);
    expect(remote.status, remote.stderr).toBe(0);
    expect(remote.stdout).toMatch(/3 rounds through workers/);
    expect(metricsText(engine)).toBe(metricsText(local));
    expect(metricsText(local).split("\n")).toHaveLength(4);
    expect(await modelBytes(engine)).toBe(await modelBytes(local));
  }, deadline(600_000));
});
