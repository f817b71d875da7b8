/**
 * `fedtensor run --resume --dp-insecure-seed N` on a private run: refused, with a message that
 * names the resumed run's chain (not the default --aggregator fedavg, which the flags alone
 * would imply), because the rest of the run would not be private.
 */
import { describe, expect, test } from "vitest";
import { loadRunArguments, validateRunConfig } from "../../src/lib/run/config.js";
import { resumeConfig } from "../../src/lib/run/resume-config.js";
import { tempDir } from "./temp-dir.js";

describe("--resume of a private run", () => {
  const out = tempDir("ft-resume-private-");
  const stored = { ...validateRunConfig({ model: "logistic", aggregator: "clip,dp", dpNoise: 1, out }, "test") } as never;

  test("with --dp-insecure-seed is refused, naming the run's chain", async () => {
    const { config, given } = await loadRunArguments(["--resume", "--out", out, "--dp-insecure-seed", "5"]);
    expect(() => resumeConfig(config, given, stored, `${out}/checkpoint`)).toThrow(
      /FT305.*--dp-insecure-seed.*is private \(--aggregator clip,dp\).*secret\.key/,
    );
    let message = "";
    try {
      resumeConfig(config, given, stored, `${out}/checkpoint`);
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).not.toMatch(/fedavg/);
  });

  test("an option the resumed chain takes and may change is checked against that chain, not the default", async () => {
    const { config, given } = await loadRunArguments(["--resume", "--out", out, "--accountant", "rdp", "--max-epsilon", "50"]);
    const resumed = resumeConfig(config, given, stored, `${out}/checkpoint`);
    expect(resumed.aggregator).toBe("clip,dp");
    expect(resumed.accountant).toBe("rdp");
    expect(resumed.maxEpsilon).toBe(50);
    // Without --resume the same flags still need a chain that takes them.
    await expect(loadRunArguments(["--out", out, "--accountant", "rdp"])).rejects.toThrow(/applies only with --aggregator/);
  });
});
