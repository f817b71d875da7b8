/**
 * `fedtensor serve --aggregator distributed-dp` with three `fedtensor client` processes on
 * 127.0.0.1: each client encodes its accumulator with the distributed-DP codec (noise added at
 * the client), SecAgg+ sums the integers mod 2^bits, the server decodes the sum. With little
 * noise the model trains; with a noise that has a finite epsilon every row carries the epsilon
 * spent so far (increasing; three clients are far too few for that noise to leave the logistic
 * model's accuracy, which is why the two are separate runs). The run's secret is saved to the
 * run folder (mode 0600) and no metrics file holds it. Needs `npm run build`.
 */
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { calibrateDistributedDp, distributedDpEpsilon } from "../../src/lib/privacy/distributed-dp.js";
import { readMetrics } from "../../src/lib/run/metrics.js";
import { tempDir } from "../run/temp-dir.js";
import { serverUrl, smallServe, startClient, startProcess, writeTokens, type Process } from "./serve-helpers.js";

const started: Process[] = [];
afterAll(() => started.forEach((p) => p.child.exitCode === null && p.child.kill("SIGKILL")));
const track = (p: Process) => (started.push(p), p);

/** A served distributed-DP run of three client processes; its metrics rows and the server's log. */
async function servedRun(rounds: number, ddp: readonly string[]) {
  const dir = tempDir("fedtensor-serve-ddp-");
  const out = join(dir, "run");
  const { path, tokens } = writeTokens(dir, 3);
  const args = smallServe(path, out, "--model", "logistic", "--rounds", String(rounds), "--clients-per-round", "3", "--min-clients", "3", "--aggregator", "distributed-dp", ...ddp);
  const server = track(startProcess(args));
  const url = await serverUrl(server);
  for (const i of [0, 1, 2]) track(startClient(url, tokens[i]!, i));
  expect(await server.exited()).toBe(0);
  const log = server.output();
  for (let round = 1; round <= rounds; round++) expect(log).toMatch(new RegExp(`round ${round}/${rounds}: 3 of 3 clients merged`));
  expect(log).toMatch(/round 1: secure sum of 3 clients/);
  return { out, log, rows: readMetrics(join(out, "metrics.jsonl")) };
}

describe("fedtensor serve --aggregator distributed-dp", () => {
  // Little noise: the protocol's sum and decoding keep the model's progress (no finite epsilon at this noise).
  it("trains the model with three client processes", async () => {
    const { out, rows } = await servedRun(3, ["--ddp-clip", "100", "--ddp-noise", "0.0001", "--ddp-bits", "20"]);
    expect(rows.map((r) => r.round)).toEqual([1, 2, 3]);
    expect(rows.every((r) => "epsilon" in r)).toBe(true);
    // Ten-class MNIST: chance is 10%.
    expect(rows.at(-1)!.test_accuracy as number).toBeGreaterThan(0.8);
    const secret = readFileSync(join(out, "secret.key"), "utf8").trim();
    expect(statSync(join(out, "secret.key")).mode & 0o777).toBe(0o600);
    for (const file of ["metrics.jsonl", "metrics.csv"]) expect(readFileSync(join(out, file), "utf8")).not.toContain(secret);
  }, 60_000);

  // Noise with a finite epsilon: each row's epsilon is the accountant's after that many rounds, for the accumulator padded to 2^13.
  it("writes the epsilon spent after each round, increasing", async () => {
    const { rows } = await servedRun(2, ["--ddp-clip", "1", "--ddp-noise", "1", "--ddp-bits", "16"]);
    const epsilons = rows.map((r) => r.epsilon as number);
    const cal = calibrateDistributedDp({ clip: 1, noiseMultiplier: 1, bits: 16, minClients: 3, maxClients: 3, dimension: 8192 });
    expect(epsilons[0]).toBeCloseTo(distributedDpEpsilon(cal, 1, 1e-5).epsilon, 6);
    expect(epsilons[1]).toBeCloseTo(distributedDpEpsilon(cal, 2, 1e-5).epsilon, 6);
    expect(epsilons[1]!).toBeGreaterThan(epsilons[0]!);
  }, 60_000);

  it("refuses an algorithm other than FedAvg, as `fedtensor run --aggregator distributed-dp` does (FT305)", async () => {
    const dir = tempDir("fedtensor-serve-ddp-");
    const { path } = writeTokens(dir, 2);
    const server = track(startProcess(smallServe(path, join(dir, "run"), "--algorithm", "fedadam", "--aggregator", "distributed-dp")));
    expect(await server.exited()).not.toBe(0);
    expect(server.output()).toMatch(/FT305: .*distributed-dp/);
  }, 60_000);
});
