/**
 * `fedtensor client`'s numeric options are checked before it reads a file or connects: a bad
 * value is FT305 naming the option, with exit status 2 (bad usage; run in this process: a refusal needs no
 * child process). The served tests run clients with these options in real rounds.
 */
import { describe, expect, it } from "vitest";
import { inProcessCli } from "../run/cli.js";

const client = (...extra: string[]) => inProcessCli(["client", "--server", "ws://127.0.0.1:1/fedtensor", "--token", "t", "--data", "/nonexistent.rec", ...extra]);

describe("fedtensor client's options", () => {
  it.each([
    [["--threads", "0"], /FT305.*--threads.*expected a whole number of threads from 1 to 1024, got 0/],
    [["--threads", "1.5"], /FT305.*--threads.*got 1\.5/],
    [["--threads", "many"], /FT305.*--threads.*got many/],
    [["--max-backoff", "0"], /FT305.*--max-backoff.*expected seconds in \(0, 3600\], got 0/],
  ])("%j is refused before anything is read or connected", async (extra, message) => {
    const { status, stderr } = await client(...extra);
    expect(status).toBe(2);
    expect(stderr).toMatch(message);
    expect(stderr).not.toMatch(/nonexistent|ECONNREFUSED/);
  });
});
