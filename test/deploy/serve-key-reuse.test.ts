/**
 * `fedtensor serve --key-rounds`: SecAgg+ key reuse in a served run with real Node clients
 * (src/deploy/secagg/reuse.ts). Round 1 sets keys up; round 2, with the same cohort and
 * nobody dropped, reuses them: no advertise-keys or share-keys step, and less traffic from
 * the clients. `--key-rounds` outside [1, 16] is FT375, and it needs a secure aggregator.
 * Needs `npm run build`.
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readMetrics } from "../../src/lib/run/metrics.js";
import { deadline } from "../helpers/deadline.js";
import { tempDir } from "../run/temp-dir.js";
import { writeTokens } from "./serve-helpers.js";
import { killedAfterAll, refusedServe, serveWithFiles, startFileClient } from "./serve-kill-helpers.js";

const { track } = killedAfterAll();

describe("fedtensor serve --key-rounds", () => {
  it("reuses round 1's key setup in round 2 of a secure run: three SecAgg+ steps instead of five", async () => {
    const { out, tokens, files, server, url } = await serveWithFiles(track, "fedtensor-serve-reuse-", 3, "--model", "logistic", "--aggregator", "secure", "--rounds", "2", "--clients-per-round", "3", "--min-clients", "3", "--key-rounds", "2");
    for (let i = 0; i < 3; i++) track(startFileClient(url, tokens[i]!, files[i]!));
    expect(await server.exited()).toBe(0);
    const log = server.output();
    expect(log).toMatch(/round 1 secagg advertise-keys: round starts with 3 clients \(.*\), full setup/);
    expect(log).toMatch(/round 2 secagg masked-input: round starts with 3 clients \(.*\), reusing the key setup of round 1/);
    expect(log).not.toMatch(/round 2: secagg (share-keys|masked-input) to/);
    expect(log).toMatch(/round 2: secagg consistency-check to/);
    expect(log).toMatch(/round 2\/2: 3 of 3 clients merged/);
    expect(log).toMatch(/round 1: secagg share-keys to/);
    const rows = readMetrics(join(out, "metrics.jsonl"));
    expect(rows.map((r) => r.clients)).toEqual([3, 3]);
    // The server sends less in reused rounds (no key list, no routed shares) and receives less (no keys, no shares).
    expect(rows[1]!.bytes_from_clients).toBeLessThan(rows[0]!.bytes_from_clients as number);
    expect(rows[1]!.bytes_to_clients).toBeLessThan(rows[0]!.bytes_to_clients as number);
  }, deadline(90_000));

  it("refuses a --key-rounds outside [1, 16] (FT375) or without a secure aggregator (FT305)", async () => {
    const dir = tempDir("fedtensor-serve-reuse-");
    const { path } = writeTokens(dir, 2);
    const run = refusedServe(path, join(dir, "run"));
    expect(await run("--aggregator", "secure", "--key-rounds", "17")).toMatch(/FT375: SecAgg\+ key_rounds \(--key-rounds\) must be a whole number in \[1, 16\], got 17/);
    expect(await run("--key-rounds", "2")).toMatch(/FT305: --key-rounds: SecAgg\+'s key reuse needs --aggregator secure or distributed-dp/);
  }, deadline(60_000));
});
