/**
 * Huge or malformed values of `fedtensor run` and `fedtensor worker`, run for real: each is
 * FT305 (exit 2) naming the option and why, never an internal error (exit 70) with a stack
 * trace. The ones that need the data are checked against it: local epochs whose batches could
 * not be allocated. (A batch larger than any client holds is clamped: batch-size-clamp.test.ts.)
 */
import { describe, expect, test } from "vitest";
import { inProcessCli, runCli, stackLine } from "./cli.js";
import { tempDir } from "./temp-dir.js";
import { deadline } from "../helpers/deadline.js";

const cases: readonly [readonly string[], RegExp][] = [
  [["--engine", "redis://:99999"], /FT305: --engine: expected local \| redis:\/\/host:port, got "redis:\/\/:99999"/],
  [["--engine", "redis://127.0.0.1:6379 x"], /FT305: --engine: expected local \| redis:\/\/host:port, got "redis:\/\/127\.0\.0\.1:6379 x"/],
  [["--local-epochs", "1e9"], /FT305: --local-epochs: 1000000000 passes over the largest client's 3000 examples make 9000000000000 examples for a chunk of 3 clients, .* GB of batches: more than a typed array holds/],
  [["--lr", "1e400"], /FT305: --lr: expected number > 0, got Infinity \(not finite\)/],
];

describe("huge and malformed options", () => {
  test.each(cases)("fedtensor run %j is FT305", async (flags, message) => {
    const args = ["run", "--model", "logistic", "--clients", "20", "--clients-per-round", "3", "--rounds", "1", "--out", tempDir("ft-huge-"), ...flags];
    // Refused before the data is read: through the CLI's main in this process, no process start-up.
    // --local-epochs is checked against MNIST's clients, which a child process reads, not the test's.
    const run = flags[0] === "--local-epochs" ? runCli(args, 60_000) : await inProcessCli(args);
    expect(run.stderr).toMatch(message);
    expect(run.status).toBe(2);
    expect(run.stderr).not.toMatch(stackLine);
  }, deadline(60_000));

  test.each([
    ["redis://:99999", "it is not a URL (a port must be a whole number from 1 to 65535)"],
    ["redis://127.0.0.1:6379 x", "it holds a space or another blank"],
    ["redis://", "it names no host"],
  ])("fedtensor worker --redis %s is FT305", async (url, why) => {
    const worker = await inProcessCli(["worker", "--redis", url]);
    expect(worker.stderr).toContain(`FT305: --redis: expected redis://host:port, got ${url}: ${why}`);
    expect(worker.status).toBe(2);
  });
});
