/**
 * Client state on the BullMQ engine (docs/distributed.md "Client state"): FedPer, Ditto and
 * SCAFFOLD with --engine send each chunk's clients' states to the worker with the chunk and
 * store the states it returns, so the run's parameters, server state and every client's state
 * are the bytes of the same run in this process (both stream the same chunks and merge them in
 * the same order, and a state record crosses Redis with its float32 bits: equality is exact).
 * One real redis-server, one worker in this process. Skipped, saying why, without redis-server.
 */
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { redisBinary, startRedis, type RedisServer } from "../../bench/redis-server.js";
import { listCheckpoints } from "../../src/lib/run/checkpoint.js";
import { startWorker, type RunningWorker } from "../../src/lib/run/engine/worker.js";
import { train } from "../../src/lib/run/train.js";
import { configOf, quiet, stateWithClients } from "./client-state-helpers.js";
import { deadline } from "../helpers/deadline.js";

if (redisBinary === undefined) console.log("engine client-state tests skipped: redis-server is not installed (apt-get install redis-server)");

type Tree = { readonly [key: string]: Tree } | { readonly data: Float32Array };

/** Every tensor of a checkpoint's state as base64 of its bytes, by path. */
function bytesByPath(tree: Tree, path = ""): Record<string, string> {
  if ("data" in tree && ArrayBuffer.isView(tree.data)) return { [path]: Buffer.from(tree.data.buffer, tree.data.byteOffset, tree.data.byteLength).toString("base64") };
  return Object.assign({}, ...Object.entries(tree).map(([key, child]) => bytesByPath(child as Tree, path === "" ? key : `${path}.${key}`)));
}

/** The last checkpoint's state (parameters, server state, each client's state) of a 2-round run of 12 clients, 4 a round, in chunks of 2. */
async function finalState(settings: Record<string, unknown>): Promise<Record<string, string>> {
  const config = configOf("ft-engine-state-", { chunkClients: 2, checkpointEvery: 2, ...settings });
  await train(config, quiet);
  return bytesByPath((await stateWithClients((await listCheckpoints(config.out)).at(-1)!.path)) as unknown as Tree);
}

describe.skipIf(redisBinary === undefined)("client state on the BullMQ engine", () => {
  let redis: RedisServer;
  let worker: RunningWorker;
  const chunksDone: string[] = [];

  beforeAll(async () => {
    redis = await startRedis();
    worker = await startWorker({ url: redis.url, concurrency: 1, lockDuration: 30_000, stalledInterval: 30_000, log: (line) => line.includes(": done in") && chunksDone.push(line) });
  }, deadline(30_000));
  afterAll(async () => {
    await worker?.stop();
    redis?.stop();
  });

  test.each([
    ["fedper with secure", { algorithm: "fedper", personalParams: "b", aggregator: "secure" }],
    ["ditto", { algorithm: "ditto", dittoLambda: 0.5 }],
    ["scaffold with clip,dp", { algorithm: "scaffold", aggregator: "clip,dp", dpNoise: 0.5, dpClip: 1, dpInsecureSeed: 77 }],
  ] as const)(
    "%s: the engine's run has the in-process run's parameters, server state and client states, bit for bit",
    async (_name, settings) => {
      const local = await finalState(settings);
      const before = chunksDone.length;
      const remote = await finalState({ ...settings, engine: redis.url });
      // 2 rounds of 4 clients in chunks of 2 (secure groups may merge them): the chunks ran on the worker.
      expect(chunksDone.length - before).toBeGreaterThanOrEqual(2);
      const clientStates = Object.keys(local).filter((path) => path.startsWith("clients."));
      expect(clientStates.length).toBeGreaterThan(4);
      expect(Object.keys(remote).sort()).toEqual(Object.keys(local).sort());
      expect(remote).toEqual(local);
      // The states' records went with their rounds: none is left in Redis.
      const connection = new Redis(redis.url);
      try {
        expect(await connection.keys("fedtensor:state:*")).toEqual([]);
      } finally {
        connection.disconnect();
      }
    },
    deadline(60_000),
  );
});
