/**
 * `fedtensor serve --aggregator distributed-dp` with three `fedtensor client` processes on
 * 127.0.0.1: each client encodes its accumulator with the distributed-DP codec (noise added at
 * the client), SecAgg+ sums the integers mod 2^bits, the server decodes the sum. With little
 * noise the model trains; with a noise that has a finite epsilon every row carries the epsilon
 * spent so far (increasing; three clients are far too few for that noise to leave the logistic
 * model's accuracy, which is why the two are separate runs). The run's secret is saved to the
 * run folder (mode 0600) and no metrics file holds it. --ddp-target-epsilon's noise and epsilons
 * are the accountant's. A round with fewer than --min-clients masked inputs (two clients killed
 * with SIGKILL before theirs) is aborted before the unmask step, so the server never learns a sum
 * with less noise than accounted, and the run goes on. Needs
 * `npm run build`.
 */
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { calibrateDistributedDp, noiseMultiplierForEpsilon } from "../../src/lib/privacy/distributed-dp.js";
import { distributedDpPldEpsilon } from "../../src/lib/privacy/distributed-dp-pld.js";
import { readMetrics } from "../../src/lib/run/metrics.js";
import { tempDir } from "../run/temp-dir.js";
import { serverUrl, smallServe, startProcess, writeTokens, type Process } from "./serve-helpers.js";
import { killedAfterAll, partitionFiles, serveWithFiles, startFileClient, stepTrap } from "./serve-kill-helpers.js";
import { deadline } from "../helpers/deadline.js";

const { track, traps } = killedAfterAll();

/** A served distributed-DP run of three client processes; its metrics rows and the server's log. */
async function servedRun(rounds: number, ddp: readonly string[]) {
  const dir = tempDir("fedtensor-serve-ddp-");
  const out = join(dir, "run");
  const { path, tokens } = writeTokens(dir, 3);
  const args = smallServe(path, out, "--model", "logistic", "--rounds", String(rounds), "--clients-per-round", "3", "--min-clients", "3", "--aggregator", "distributed-dp", ...ddp);
  // Each client's examples from a record file (those --dataset mnist --client-index i reads): no client process reads MNIST.
  const files = partitionFiles(dir, 3);
  const server = track(startProcess(args));
  const url = await serverUrl(server);
  for (const i of [0, 1, 2]) track(startFileClient(url, tokens[i]!, files[i]!));
  expect(await server.exited()).toBe(0);
  const log = server.output();
  for (let round = 1; round <= rounds; round++) expect(log).toMatch(new RegExp(`round ${round}/${rounds}: 3 of 3 clients merged`));
  expect(log).toMatch(/round 1: secure sum of 3 clients/);
  return { out, log, rows: readMetrics(join(out, "metrics.jsonl")) };
}

describe("fedtensor serve --aggregator distributed-dp", () => {
  // Little noise: the protocol's sum and decoding keep the model's progress (no finite epsilon at this noise).
  it("trains the model with three client processes", async () => {
    const { out, rows } = await servedRun(2, ["--ddp-clip", "100", "--ddp-noise", "0.0001", "--ddp-bits", "20"]);
    expect(rows.map((r) => r.round)).toEqual([1, 2]);
    expect(rows.every((r) => "epsilon" in r)).toBe(true);
    // Ten-class MNIST: chance is 10%.
    expect(rows.at(-1)!.test_accuracy as number).toBeGreaterThan(0.8);
    const secret = readFileSync(join(out, "secret.key"), "utf8").trim();
    expect(statSync(join(out, "secret.key")).mode & 0o777).toBe(0o600);
    for (const file of ["metrics.jsonl", "metrics.csv"]) expect(readFileSync(join(out, file), "utf8")).not.toContain(secret);
  }, deadline(60_000));

  // --ddp-target-epsilon: the server bisects for the noise multiplier that spends the target in --rounds rounds, for the
  // accumulator's rotated length; each row's epsilon is the accountant's after that many rounds.
  it("calibrates the noise for --ddp-target-epsilon as the accountant does, writes the epsilon spent after each round, increasing, and spends the target by the last round", async () => {
    const { log, rows } = await servedRun(2, ["--ddp-clip", "1", "--ddp-target-epsilon", "8", "--ddp-bits", "16"]);
    const logged = log.match(/distributed DP: noise multiplier (\S+) \(--ddp-target-epsilon 8 over 2 rounds at delta 0\.00001\), clip 1, 16 bits, calibrated for 3 to 3 clients, an accumulator of (\d+) values/);
    expect(logged).not.toBeNull();
    // The logistic model's accumulator, rotated: padded to 2^13.
    expect(Number(logged![2])).toBeGreaterThan(4096);
    expect(Number(logged![2])).toBeLessThanOrEqual(8192);
    const parameters = { clip: 1, bits: 16, minClients: 3, maxClients: 3, dimension: 8192 };
    const noise = noiseMultiplierForEpsilon(parameters, 8, 2, 1e-5);
    expect(Number(logged![1])).toBe(noise);
    const cal = calibrateDistributedDp({ ...parameters, noiseMultiplier: noise });
    const epsilons = rows.map((r) => r.epsilon as number);
    expect(epsilons[0]).toBeCloseTo(distributedDpPldEpsilon(cal, 1, 1e-5), 6);
    expect(epsilons[1]).toBeCloseTo(distributedDpPldEpsilon(cal, 2, 1e-5), 6);
    expect(epsilons[1]!).toBeGreaterThan(epsilons[0]!);
    // Each row names its accountant, as `fedtensor run`'s rows do.
    expect(rows.map((r) => r.accountant)).toEqual(["pld", "pld"]);
    // The bisection stops at the least noise that stays within the target.
    expect(epsilons[1]!).toBeLessThanOrEqual(8);
    expect(epsilons[1]!).toBeGreaterThan(7.99);
  }, deadline(60_000));

  // The noise is calibrated for --min-clients survivors: a sum of fewer has too little noise, so the server does not decode it.
  it("aborts a round in which fewer than --min-clients send their masked input before it is unmasked, and goes on", async () => {
    const ddp = ["--aggregator", "distributed-dp", "--ddp-clip", "100", "--ddp-noise", "0.0001", "--ddp-bits", "20"];
    const { out, tokens, files, server, url } = await serveWithFiles(track, "fedtensor-serve-ddp-", 4, "--model", "logistic", "--rounds", "2", "--clients-per-round", "4", "--min-clients", "4", ...ddp);
    // Client 0 (client-001) is killed when round 1's masked-input request comes: after training, before its masked input.
    const processes: Process[] = [];
    const sprung: Promise<void>[] = [];
    for (let i = 0; i < 4; i++) {
      const trap = i < 1 ? await stepTrap(url, 1, "masked-input", () => processes[i]!.child) : undefined;
      if (trap !== undefined) (traps.push(trap), sprung.push(trap.sprung));
      processes.push(track(startFileClient(trap?.url ?? url, tokens[i]!, files[i]!)));
    }
    await Promise.all(sprung);
    // Started again, so that round 2 has --min-clients.
    track(startFileClient(url, tokens[0]!, files[0]!));
    expect(await server.exited()).toBe(0);
    const log = server.output();
    // 3 masked inputs would meet SecAgg+'s threshold (3 of 4 shares), but a sum of 3 carries less noise than the 4
    // it is calibrated for: the server aborts before the unmask step, so it never learns that sum.
    expect(log).toMatch(/round 1 skipped: secure aggregation aborted: 3 clients answered masked-input, fewer than the 4 a sum must hold \(min_clients\): no unmask step, so the sum is never learnt/);
    expect(log).not.toMatch(/round 1: secagg unmask to/);
    expect(log).not.toMatch(/round 1: secure sum of/);
    expect(log).toMatch(/round 1\/2: 0 of 4 clients merged/);
    // Round 2 waits for all four: the restarted client is back.
    expect(log).toMatch(/round 2\/2: 4 of 4 clients merged/);
    const rows = readMetrics(join(out, "metrics.jsonl"));
    expect(rows.map((r) => r.round)).toEqual([1, 2]);
    expect(rows[0]!.clients).toBe(0);
    expect(rows[0]!.train_loss).toBeNull();
    // Not decoded: the model is still the initial one after round 1 (chance is 10%), and learns in round 2.
    expect(rows[0]!.test_accuracy as number).toBeLessThan(0.3);
    expect(rows[1]!.test_accuracy as number).toBeGreaterThan(0.7);
  }, deadline(90_000));

  it("refuses an algorithm whose accumulator is not a weighted mean, which SecAgg+ cannot sum (FT305)", async () => {
    const dir = tempDir("fedtensor-serve-ddp-");
    const { path } = writeTokens(dir, 2);
    const server = track(startProcess(smallServe(path, join(dir, "run"), "--algorithm", "fedadam", "--aggregator", "distributed-dp")));
    expect(await server.exited()).not.toBe(0);
    expect(server.output()).toMatch(/FT305: .*distributed-dp rounds sum the clients' accumulators with SecAgg\+, which needs a weighted-mean algorithm/);
  }, deadline(60_000));
});
