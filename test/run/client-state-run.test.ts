/**
 * Client state in `fedtensor run`: FedPer keeps each client's head, Ditto each client's
 * personal model and SCAFFOLD each client's control variates between rounds, with the clip,dp and secure chains (the state is private
 * there: it stays with its client, and only the chain's release of the shared deltas reaches
 * the server), and a resumed run continues bit for bit from its checkpoint's states.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { listCheckpoints, readCheckpoint } from "../../src/lib/run/checkpoint.js";
import { validateRunConfig } from "../../src/lib/run/config.js";
import { train } from "../../src/lib/run/train.js";
import { tempDir } from "./temp-dir.js";
import { deadline } from "../helpers/deadline.js";

const quiet = { write: () => true, isTTY: false };
type States = Record<string, Record<string, { data: Float32Array }>>;

/** Logistic regression on 12 clients of FedProx's Synthetic(1, 1), 4 a round, 2 rounds, a checkpoint every round. */
const configOf = (prefix: string, settings: Record<string, unknown>) =>
  validateRunConfig({ model: "logistic", dataset: "synthetic", clients: 12, clientsPerRound: 4, batchSize: 50, rounds: 2, checkpointEvery: 1, keepCheckpoints: 5, seed: 5, out: tempDir(prefix), ...settings }, "test");

/** The client states of each checkpoint of a run, by round. */
async function statesByRound(out: string): Promise<Map<number, States>> {
  const files = await listCheckpoints(out);
  const rounds = await Promise.all(files.map(async ({ round, path }) => [round, ((await readCheckpoint(path)).serverState as unknown as { clients: States }).clients] as const));
  return new Map(rounds);
}

const values = (state: Record<string, { data: Float32Array }>) => Object.values(state).flatMap((t) => [...t.data]);

describe.each([
  ["fedper", { algorithm: "fedper", personalParams: "b" }, ["b"]],
  ["ditto", { algorithm: "ditto", dittoLambda: 0.5 }, ["w", "b"]],
  ["scaffold", { algorithm: "scaffold" }, ["w", "b"]],
] as const)("%s keeps each client's state", (_name, algorithm, kept) => {
  test.each([
    ["clip,dp", { aggregator: "clip,dp", dpNoise: 0.5, dpClip: 1 }],
    ["secure", { aggregator: "secure" }],
  ] as const)("with %s: the states differ per client and survive the rounds their clients sit out", async (_chain, chain) => {
    const config = configOf("ft-client-state-", { ...algorithm, ...chain });
    await train(config, quiet);
    const byRound = await statesByRound(config.out);
    const last = byRound.get(2)!;
    const clients = Object.keys(last);
    expect(clients.length).toBeGreaterThanOrEqual(2);
    for (const client of clients) expect(Object.keys(last[client]!).sort()).toEqual([...kept].sort());
    // Trained on their own data (SCAFFOLD's controls moved from zero), no two clients' states are alike.
    for (const client of clients) expect(values(last[client]!).some((v) => v !== 0)).toBe(true);
    expect(new Set(clients.map((c) => values(last[c]!).join(","))).size).toBe(clients.length);
    // Every client of round 1 still has its state after round 2: trained again, or as round 1 left it.
    const first = byRound.get(1)!;
    for (const client of Object.keys(first)) expect(last[client], `client ${client}`).toBeDefined();
    // The run's secret (its noise, masks and cohorts derive from it) is in no checkpoint, raw or hex, and no state file is in --out.
    const secret = readFileSync(join(config.out, "secret.key"), "utf8").trim();
    for (const { path } of await listCheckpoints(config.out)) {
      const bytes = readFileSync(path);
      expect(bytes.includes(Buffer.from(secret, "hex"))).toBe(false);
      expect(bytes.includes(Buffer.from(secret))).toBe(false);
    }
    expect(readdirSync(config.out).filter((name) => !/^(checkpoint-\d+\.safetensors|metrics\.(jsonl|csv)|plot\.\w+|confusion\.csv|secret\.key|run\.lock|.*\.svg|.*\.html|.*\.json)$/.test(name))).toEqual([]);
    if (chain.aggregator === "secure") {
      // The seeded cohorts: 4 of 12 a round, so some of round 1's clients sit round 2 out, and keep their state as it was.
      const keptAsWas = Object.keys(first).filter((c) => values(first[c]!).join() === values(last[c]!).join());
      expect(keptAsWas.length).toBeGreaterThan(0);
      expect(keptAsWas.length).toBeLessThan(Object.keys(first).length + 1);
    }
  }, deadline(60_000));
});

test("a resumed FedPer run's client states and model are bit-identical to an uninterrupted run's", async () => {
  const straight = configOf("ft-state-straight-", { algorithm: "fedper", personalParams: "b", rounds: 3 });
  await train(straight, quiet);
  const first = configOf("ft-state-resumed-", { algorithm: "fedper", personalParams: "b", rounds: 1 });
  await train(first, quiet);
  await train({ ...first, rounds: 3, resume: true }, quiet);
  const [a, b] = await Promise.all([straight.out, first.out].map(async (out) => (await readCheckpoint((await listCheckpoints(out)).at(-1)!.path)).serverState));
  expect(b).toEqual(a);
  expect(Object.keys((a as { clients: object }).clients).length).toBeGreaterThan(4);
}, deadline(60_000));
