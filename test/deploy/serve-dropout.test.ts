/**
 * `fedtensor serve --aggregator secure` with `fedtensor client` processes, some killed with
 * SIGKILL after they sent their masked input (serve-kill-helpers.ts says how, without a race):
 * - 2 of a round's 6 clients, each masking with 4 of the 5 others (5 shares, threshold 3): the
 *   round completes by recovery (their inputs are in the sum, their masks removed with the
 *   neighbours' shares, and the metrics' `dropped` counts them), without waiting for the step's
 *   deadline, and the next round goes on without them;
 * - 3 of 5 (threshold 3 of 5 shares): too few are left to unmask, the round aborts cleanly
 *   (FT337, nothing merged, the model unchanged), and the server goes on with the rest.
 * Needs `npm run build` (bin/ runs dist/).
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readMetrics } from "../../src/lib/run/metrics.js";
import { deadline } from "../helpers/deadline.js";
import { freePort } from "../../bench/redis-server.js";
import { tempDir } from "../run/temp-dir.js";
import { withOption } from "./browser-helpers.js";
import { smallServe, startProcess, writeTokens, type Process } from "./serve-helpers.js";
import { killedAfterAll, partitionFiles, stepTrap } from "./serve-kill-helpers.js";

const { track, traps } = killedAfterAll();

/**
 * Round 1 waits this long for its whole cohort once --min-clients are there; round 2, with the
 * victims gone, waits it out. Short, because the clients are started before the server and retry
 * its port every quarter second at most (--max-backoff 0.25) until it listens: they then join
 * within that of each other, where clients started after the server would lag by their start-up
 * on a loaded machine.
 */
const joinWait = String(deadline(1_500) / 1000);

/** A client of a record file (its SecAgg+ identity kept beside it) that retries a server not yet listening within 0.25 s. */
const retryingClient = (url: string, token: string, file: string) =>
  startProcess(["client", "--server", url, "--token", token, "--data", file, "--identity-key", `${file}.identity`, "--max-backoff", "0.25"]);

/**
 * A secure served run of `clients` client processes (client i is client-00(i+1), by its
 * token's line), of which the first `victims` are killed after their masked input of round 1.
 */
async function runWithKills(clients: number, victims: number, rounds: number, minClients: number, ...extra: string[]) {
  const dir = tempDir("fedtensor-serve-dropout-");
  const out = join(dir, "run");
  const { path, tokens } = writeTokens(dir, clients);
  const files = partitionFiles(dir, clients);
  const port = await freePort();
  const url = `ws://127.0.0.1:${port}/fedtensor`;
  const processes: Process[] = [];
  for (let i = 0; i < clients; i++) {
    const trap = i < victims ? await stepTrap(url, 1, "unmask", () => processes[i]!.child) : undefined;
    if (trap !== undefined) traps.push(trap);
    processes.push(track(retryingClient(trap?.url ?? url, tokens[i]!, files[i]!)));
  }
  // Every client has tried the port, found nothing there and waits to retry: all started.
  await Promise.all(processes.map((p) => p.waitFor(/reconnecting in/)));
  const serveArgs = ["--model", "logistic", "--aggregator", "secure", "--rounds", String(rounds), "--clients-per-round", String(clients), "--min-clients", String(minClients), "--join-wait", joinWait, ...extra];
  const server = track(startProcess(withOption(smallServe(path, out, ...serveArgs), "--port", String(port))));
  expect(await server.exited()).toBe(0);
  const killed = processes.slice(0, victims);
  for (const p of killed) await p.exited();
  // Killed by the trap, not gone by themselves.
  expect(killed.map((p) => p.child.signalCode)).toEqual(killed.map(() => "SIGKILL"));
  const ids = Array.from({ length: victims }, (_, i) => `client-${String(i + 1).padStart(3, "0")}`);
  return { log: server.output(), rows: readMetrics(join(out, "metrics.jsonl")), ids };
}

/** Where `pattern` first matches in `log` (-1 if it does not). */
const at = (log: string, pattern: RegExp) => log.search(pattern);

describe("fedtensor serve --aggregator secure with clients killed by SIGKILL after their masked input", () => {
  it("recovers the inputs of 2 of a round's 6 clients from their neighbours' shares when they die, and goes on", async () => {
    const { log, rows, ids } = await runWithKills(6, 2, 2, 4, "--num-shares", "5");
    // Their masked inputs are in the sum; their self masks are removed with their seeds rebuilt from the survivors' shares.
    const sum = at(log, /round 1: secure sum of 6 clients; dropped: /);
    const line = log.match(/round 1: secure sum of 6 clients; dropped: .*/)![0];
    // In the order the relays killed them; each named with what became of it.
    for (const id of ids) expect(line).toContain(`${id} at unmask (its masked input is in the sum: its self mask removed with its seed rebuilt from its neighbours' shares)`);
    expect(sum).toBeGreaterThan(0);
    // Each victim's masked input reached the server before the round dropped it.
    for (const id of ids) {
      const received = at(log, new RegExp(`round 1 secagg masked-input ${id}: masked input received`));
      expect(received).toBeGreaterThan(0);
      expect(received).toBeLessThan(sum);
    }
    expect(log).toMatch(/round 1\/2: 6 of 6 clients merged/);
    expect(log).toMatch(/round 2\/2: 4 of 4 clients merged/);
    expect(log).not.toMatch(/FT337/);
    // The 2 are merged (recovered) and counted as dropped: they left the round after their masked input.
    expect(rows.map((r) => [r.round, r.clients, r.dropped])).toEqual([
      [1, 6, 2],
      [2, 4, 0],
    ]);
    expect(rows.every((r) => typeof r.train_loss === "number")).toBe(true);
    // Secure runs count discarded (out-of-range) sums: none here.
    expect(rows.map((r) => r.sum_discarded)).toEqual([0, 0]);
    // The recovered sum is the right one: a mask left in it would be noise, and the model at chance (10%).
    expect(rows.every((r) => (r.test_accuracy as number) > 0.8)).toBe(true);
  }, deadline(60_000));

  it("aborts the round cleanly (FT337) when 3 of its 5 clients die, below the threshold, and the server stays up", async () => {
    const { log, rows } = await runWithKills(5, 3, 2, 2);
    // Five clients: every client neighbours every other (num_shares 5), a majority of 3 rebuilds a secret.
    expect(log).toMatch(/round 1 secagg unmask: FT337: SecAgg\+ round 1 aborted at unmask: 2 clients answered unmask, reconstruction_threshold is 3/);
    expect(log).toMatch(/round 1 skipped: secure aggregation aborted: 2 clients answered unmask, reconstruction_threshold is 3/);
    expect(log).not.toMatch(/round 1: secure sum of/);
    expect(log).toMatch(/round 1\/2: 0 of 5 clients merged/);
    expect(log).toMatch(/round 2\/2: 2 of 2 clients merged/);
    expect(rows.map((r) => [r.round, r.clients])).toEqual([
      [1, 0],
      [2, 2],
    ]);
    // Nothing merged: no training loss at round 1, and the model is still the initial one (one merged round is past 85%).
    expect(rows[0]!.train_loss).toBeNull();
    expect(rows[0]!.test_accuracy as number).toBeLessThan(0.3);
    expect(typeof rows[1]!.train_loss).toBe("number");
  }, deadline(60_000));
});
