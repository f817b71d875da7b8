/**
 * Nonsense that `fedtensor run` accepted (issue 34, item 8), each now FT305 naming the option:
 * a real that float32 (the programs' precision) turns into 0 or Infinity, a value after a
 * switch (read as a config file before), a text value that reads as a flag.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { FedTensorError } from "../../src/errors/error.js";
import { loadRunArguments } from "../../src/lib/run/config.js";
import { tempDir } from "./temp-dir.js";

async function refusal(args: readonly string[]): Promise<string> {
  const error = await loadRunArguments(args).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(FedTensorError);
  return (error as FedTensorError).message;
}

describe("options that mean nothing", () => {
  test("--lr 1e-320 is 0 in float32: FT305", async () => {
    expect(await refusal(["--lr", "1e-320"])).toBe("FT305: --lr: expected number > 0, got 1e-320 (0 in float32, the precision the programs compute in)");
    expect(await refusal(["--lr", "1e39"])).toBe("FT305: --lr: expected number > 0, got 1e+39 (Infinity in float32, the precision the programs compute in)");
    // The smallest float32 (a subnormal) still is a value.
    expect((await loadRunArguments(["--lr", "1.5e-45"])).config.lr).toBe(1.5e-45);
  });

  test("dpClip 1e39 in a config file: FT305 naming the key and the file, not FT110 from the program", async () => {
    const file = join(tempDir("ft-nonsense-"), "run.json");
    writeFileSync(file, JSON.stringify({ aggregator: "dp", dpClip: 1e39 }));
    expect(await refusal([file])).toBe(`FT305: dpClip (in ${file}): expected number > 0 | adaptive, got 1e+39 (Infinity in float32, the precision the programs compute in)`);
  });

  test.each(["yes", "no", "true", "0"])("--resume %s: FT305, the switch takes no value (it was read as a config file)", async (word) => {
    expect(await refusal(["--resume", word])).toBe(`FT305: --resume: takes no value, got "${word}": give --resume alone to turn it on, leave it out to keep it off`);
  });

  test("--out -1: FT305 (it made a folder named -1); --out=-1 or ./-1 name it on purpose", async () => {
    expect(await refusal(["--out", "-1"])).toBe('FT305: --out: needs a value (non-empty text), got "-1", which reads as a flag; write ./-1 for a folder of that name');
    expect((await loadRunArguments(["--out=-1"])).config.out).toBe("-1");
    expect((await loadRunArguments(["--out", "./-1"])).config.out).toBe("./-1");
  });

  test("a config file after a switch is still a config file", async () => {
    const file = join(tempDir("ft-nonsense-file-"), "run.json");
    writeFileSync(file, JSON.stringify({ rounds: 7 }));
    const { config } = await loadRunArguments(["--overwrite", file]);
    expect([config.rounds, config.overwrite]).toEqual([7, true]);
  });
});
