/**
 * What the client-state run tests share (client-state-run.test.ts, scaffold-state-run.test.ts):
 * a small run of an algorithm with a chain, and the checks that its clients' states are their
 * own, survive the rounds they sit out, and leak neither the run's secret nor a file into --out.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";
import { listCheckpoints, readCheckpoint } from "../../src/lib/run/checkpoint.js";
import { readClientStates } from "../../src/lib/run/client-state-file.js";
import { validateRunConfig } from "../../src/lib/run/config.js";
import { train } from "../../src/lib/run/train.js";
import { tempDir } from "./temp-dir.js";

export const quiet = { write: () => true, isTTY: false };
type States = Record<string, Record<string, { data: Float32Array }>>;

/** Logistic regression on 12 clients of FedProx's Synthetic(1, 1), 4 a round, 2 rounds, a checkpoint every round. */
export const configOf = (prefix: string, settings: Record<string, unknown>) =>
  validateRunConfig({ model: "logistic", dataset: "synthetic", clients: 12, clientsPerRound: 4, batchSize: 50, rounds: 2, checkpointEvery: 1, keepCheckpoints: 5, seed: 5, out: tempDir(prefix), ...settings }, "test");

/** A checkpoint's server state with its clients' states (from its companion file) under `clients`. */
export async function stateWithClients(path: string): Promise<Record<string, unknown> & { clients: States }> {
  const checkpoint = await readCheckpoint(path);
  const store = checkpoint.clientStates === undefined ? undefined : await readClientStates(path, checkpoint.clientStates);
  const clients = Object.fromEntries((store?.clients() ?? []).map((client) => [client, store!.get(client)!]));
  store?.close();
  return { ...(checkpoint.serverState as Record<string, unknown>), clients };
}

/** The client states of each checkpoint of a run, by round. */
async function statesByRound(out: string): Promise<Map<number, States>> {
  const files = await listCheckpoints(out);
  const rounds = await Promise.all(files.map(async ({ round, path }) => [round, (await stateWithClients(path)).clients] as const));
  return new Map(rounds);
}

const values = (state: Record<string, { data: Float32Array }>) => Object.values(state).flatMap((t) => [...t.data]);

/** Runs `algorithm` with `chain` for 2 rounds and checks that its clients keep states of the tensors `kept`, their own. */
export async function checkKeptStates(algorithm: Record<string, unknown>, kept: readonly string[], chain: { readonly aggregator: string }): Promise<void> {
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
  expect(readdirSync(config.out).filter((name) => !/^(checkpoint-\d+(\.clients)?\.safetensors|metrics\.(jsonl|csv)|plot\.\w+|confusion\.csv|secret\.key|run\.lock|.*\.svg|.*\.html|.*\.json)$/.test(name))).toEqual([]);
  if (chain.aggregator === "secure") {
    // The seeded cohorts: 4 of 12 a round, so some of round 1's clients sit round 2 out, and keep their state as it was.
    const keptAsWas = Object.keys(first).filter((c) => values(first[c]!).join() === values(last[c]!).join());
    expect(keptAsWas.length).toBeGreaterThan(0);
  }
}
