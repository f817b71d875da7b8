/**
 * `fedtensor serve --num-shares --reconstruction-threshold` (Flower's SecAggPlusWorkflow names):
 * how they resolve for each cohort (defaults as before, proportions, counts), the start-up
 * check over every cohort size a run can have (FT341) and the flags' own values (FT305), and a
 * served run in which the flags change the outcome: with every share needed, one client killed
 * with SIGKILL after its masked input aborts the round that the default threshold recovers.
 * Needs `npm run build`.
 */
import { join } from "node:path";
import { deadline } from "../helpers/deadline.js";
import { describe, expect, it } from "vitest";
import { resolveNumShares } from "../../src/deploy/secagg/index.js";
import { checkShareSettings, shareCounts } from "../../src/deploy/server/secure.js";
import { readMetrics } from "../../src/lib/run/metrics.js";
import { tempDir } from "../run/temp-dir.js";
import { writeTokens, type Process } from "./serve-helpers.js";
import { killedAfterAll, refusedServe, serveWithFiles, startFileClient, stepTrap } from "./serve-kill-helpers.js";

const { track, traps } = killedAfterAll();

describe("SecAgg+ share settings of fedtensor serve", () => {
  it("resolve per cohort: the defaults as before, counts and proportions as Flower takes them", () => {
    // Defaults: 2 ceil(log2 n) + 1 shares (capped at n), a strict majority.
    expect(shareCounts({}, 4)).toEqual({ num_shares: 4, reconstruction_threshold: 3 });
    expect(shareCounts({}, 10)).toEqual({ num_shares: 9, reconstruction_threshold: 5 });
    expect(shareCounts({}, 20)).toEqual({ num_shares: 11, reconstruction_threshold: 6 });
    // A count: raised to odd, capped at the cohort; the default threshold follows it.
    expect(shareCounts({ num_shares: 6 }, 20)).toEqual({ num_shares: 7, reconstruction_threshold: 4 });
    expect(shareCounts({ num_shares: 13, reconstruction_threshold: 7 }, 20)).toEqual({ num_shares: 13, reconstruction_threshold: 7 });
    // Proportions: of the cohort for num_shares, of num_shares for the threshold (ceil).
    expect(shareCounts({ num_shares: 0.5, reconstruction_threshold: 0.6 }, 20)).toEqual({ num_shares: 11, reconstruction_threshold: 7 });
    expect(shareCounts({ num_shares: 1, reconstruction_threshold: 1 }, 7)).toEqual({ num_shares: 7, reconstruction_threshold: 7 });
    // 0.14 x 50 is 7.000000000000001 in binary: 7 shares, not 8 raised to 9.
    expect(resolveNumShares(0.14, 50)).toBe(7);
  });

  it("are checked at start-up against every cohort size from --min-clients to --clients-per-round (FT341)", () => {
    expect(() => checkShareSettings({}, 2, 100)).not.toThrow();
    expect(() => checkShareSettings({ num_shares: 0.3, reconstruction_threshold: 0.6 }, 10, 100)).not.toThrow();
    // A proportion that leaves a client without a neighbour in a small cohort.
    expect(() => checkShareSettings({ num_shares: 0.3 }, 2, 10)).toThrow(/^FT341: --num-shares 0\.3 with --reconstruction-threshold default does not fit a cohort of 2 clients: num_shares: 0\.3 of 2 clients is 1 share/);
    // Not a majority of 5 shares.
    expect(() => checkShareSettings({ num_shares: 5, reconstruction_threshold: 2 }, 5, 10)).toThrow(/^FT341: --num-shares 5 with --reconstruction-threshold 2 does not fit a cohort of 5 clients: reconstruction_threshold: must be at least 2, at most num_shares \(5\) and a strict majority of it, got 2/);
    // More than the shares of a small cohort (4 clients hold 4 shares).
    expect(() => checkShareSettings({ num_shares: 7, reconstruction_threshold: 5 }, 4, 10)).toThrow(/^FT341: .* a cohort of 4 clients: .*at most num_shares \(4\)/);
    expect(() => checkShareSettings({ num_shares: 7, reconstruction_threshold: 5 }, 7, 10)).not.toThrow();
    // Half is no majority where a cohort caps the shares at an even count.
    expect(() => checkShareSettings({ reconstruction_threshold: 0.5 }, 2, 10)).toThrow(/^FT341: --num-shares default with --reconstruction-threshold 0\.5 does not fit a cohort of 2 clients/);
  });

  it("refuse values that are neither a count >= 2 nor a proportion in (0, 1] (FT305), and need a secure aggregator", async () => {
    const dir = tempDir("fedtensor-serve-shares-");
    const { path } = writeTokens(dir, 2);
    const run = refusedServe(path, join(dir, "run"));
    expect(await run("--aggregator", "secure", "--num-shares", "1.5")).toMatch(/FT305: --num-shares: expected a whole number >= 2 or a proportion in \(0, 1\], got 1\.5/);
    expect(await run("--aggregator", "secure", "--reconstruction-threshold", "0")).toMatch(/FT305: --reconstruction-threshold: expected .*got 0/);
    expect(await run("--aggregator", "secure", "--clients-per-round", "10", "--min-clients", "5", "--num-shares", "5", "--reconstruction-threshold", "2")).toMatch(/FT341: --num-shares 5 with --reconstruction-threshold 2 does not fit a cohort of 5 clients/);
    expect(await run("--num-shares", "5")).toMatch(/FT305: --num-shares: SecAgg\+'s parameters need --aggregator secure or distributed-dp/);
  }, deadline(60_000));

  it("reach the protocol: with every share needed, a client killed after its masked input aborts the round (FT337), which the default threshold recovers", async () => {
    const { out, tokens, files, server, url } = await serveWithFiles(track, "fedtensor-serve-shares-", 4, "--model", "logistic", "--aggregator", "secure", "--rounds", "2", "--clients-per-round", "4", "--min-clients", "3", "--num-shares", "1", "--reconstruction-threshold", "1");
    const processes: Process[] = [];
    const trap = await stepTrap(url, 1, "unmask", () => processes[0]!.child);
    traps.push(trap);
    for (let i = 0; i < 4; i++) processes.push(track(startFileClient(i === 0 ? trap.url : url, tokens[i]!, files[i]!)));
    expect(await server.exited()).toBe(0);
    const log = server.output();
    // By default 4 clients have 4 shares and a threshold of 3, and 3 answers would recover the round.
    expect(log).toMatch(/round 1 secagg advertise-keys: round starts with 4 clients \(num_shares 4, reconstruction_threshold 4, min_clients 4\)/);
    expect(log).toMatch(/round 1 secagg unmask: FT337: SecAgg\+ round 1 aborted at unmask: 3 clients answered unmask, reconstruction_threshold is 4/);
    expect(log).toMatch(/round 2 secagg advertise-keys: round starts with 3 clients \(num_shares 3, reconstruction_threshold 3, min_clients 3\)/);
    expect(log).toMatch(/round 2\/2: 3 of 3 clients merged/);
    expect(readMetrics(join(out, "metrics.jsonl")).map((r) => r.clients)).toEqual([0, 3]);
  }, deadline(60_000));
});
