/**
 * The run's secret (src/lib/privacy/secret.ts) and DP cohort sampling: keys from the OS
 * differ every time, the research mode's are a function of its seed, every purpose and round
 * gets its own value, the key file is the owner's alone and round-trips, and Poisson sampling
 * includes each client independently with probability q.
 */
import { mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { poissonCohort } from "../../src/lib/data/federated.js";
import { Rng } from "../../src/lib/random.js";
import { RunSecret, SECRET_FILE } from "../../src/lib/privacy/secret.js";

const folder = () => mkdtempSync(join(tmpdir(), "ft-secret-"));

describe("RunSecret", () => {
  test("secrets from the OS differ; the research mode's depend on the seed alone; purposes and rounds are independent", () => {
    expect(RunSecret.generate().key("dp-noise")).not.toEqual(RunSecret.generate().key("dp-noise"));
    expect(RunSecret.fromInsecureSeed(5).key("dp-noise")).toEqual(RunSecret.fromInsecureSeed(5).key("dp-noise"));
    expect(RunSecret.fromInsecureSeed(5).key("dp-noise")).not.toEqual(RunSecret.fromInsecureSeed(6).key("dp-noise"));
    const secret = RunSecret.generate();
    expect(secret.key("dp-noise")).not.toEqual(secret.key("secure-masks"));
    expect(secret.key("dp-noise").every((word) => Number.isInteger(word) && word >= -(2 ** 31) && word < 2 ** 31)).toBe(true);
    const draws = (round: number) => Array.from({ length: 8 }, ((s) => () => s.float())(secret.cohortStream(round)));
    expect(draws(1)).toEqual(draws(1));
    expect(draws(1)).not.toEqual(draws(2));
    expect(RunSecret.generate().insecure).toBe(false);
    expect(RunSecret.fromInsecureSeed(1).insecure).toBe(true);
  });

  test("the key file is created with mode 0600, never overwritten, and read back to the same keys; a missing or damaged one is FT304", async () => {
    const dir = folder();
    const secret = RunSecret.generate();
    await secret.save(dir);
    const path = join(dir, SECRET_FILE);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readFileSync(path, "utf8")).toMatch(/^[0-9a-f]{64}\n$/);
    await expect(RunSecret.generate().save(dir)).rejects.toThrow(/^FT307: .*secret\.key: cannot create the run's secret key file/);
    const loaded = await RunSecret.load(dir);
    expect(loaded.key("dp-noise")).toEqual(secret.key("dp-noise"));
    expect(loaded.cohortStream(3).float()).toBe(secret.cohortStream(3).float());
    await expect(RunSecret.load(folder())).rejects.toThrow(/^FT304: .*secret\.key: a private run resumes with the secret of its first rounds/);
    writeFileSync(path, "not hex\n");
    await expect(RunSecret.load(dir)).rejects.toThrow(/^FT304: .*secret\.key: is not a run secret \(64 hex digits\)/);
  });

  test("the cohort stream is uniform on [0, 1): mean 1/2 and variance 1/12 over 1e5 draws", () => {
    const stream = RunSecret.generate().cohortStream(1);
    const xs = Array.from({ length: 100_000 }, () => stream.float());
    expect(xs.every((x) => x >= 0 && x < 1)).toBe(true);
    const mean = xs.reduce((s, x) => s + x, 0) / xs.length;
    const variance = xs.reduce((s, x) => s + (x - mean) ** 2, 0) / xs.length;
    // Standard errors 0.0009 and 0.0003.
    expect(Math.abs(mean - 0.5)).toBeLessThan(0.005);
    expect(Math.abs(variance - 1 / 12)).toBeLessThan(0.0015);
  });
});

describe("Poisson cohorts", () => {
  test("each client joins independently with probability q: the size is Binomial(N, q), each client's rate q, pairs' rate q^2", () => {
    const [clients, q, rounds] = [50, 0.2, 4000];
    const secret = RunSecret.generate();
    const sizes: number[] = [];
    const joined = new Array<number>(clients).fill(0);
    let together = 0; // clients 0 and 1 in the same cohort
    for (let round = 1; round <= rounds; round++) {
      const cohort = poissonCohort(clients, q, secret.cohortStream(round));
      expect(Array.from(cohort)).toEqual([...cohort].sort((a, b) => a - b));
      sizes.push(cohort.length);
      for (const client of cohort) joined[client]! += 1;
      if (cohort.includes(0) && cohort.includes(1)) together++;
    }
    const mean = sizes.reduce((s, x) => s + x, 0) / rounds;
    const variance = sizes.reduce((s, x) => s + (x - mean) ** 2, 0) / (rounds - 1);
    // Binomial(50, 0.2): mean 10 (standard error 0.045), variance 8 (standard error about 0.18).
    expect(Math.abs(mean - clients * q)).toBeLessThan(0.25);
    expect(Math.abs(variance - clients * q * (1 - q))).toBeLessThan(1);
    // Each client's rate: 800 expected of 4000, standard deviation 25.
    for (const count of joined) expect(Math.abs(count - rounds * q)).toBeLessThan(125);
    // Independence: both of two clients 160 times expected, standard deviation 12.4.
    expect(Math.abs(together - rounds * q * q)).toBeLessThan(62);
  });

  test("rates 0 and 1, and a seeded Rng as the source; a rate outside [0, 1] is FT305", () => {
    expect(Array.from(poissonCohort(5, 0, Rng.fromSeed(1)))).toEqual([]);
    expect(Array.from(poissonCohort(5, 1, Rng.fromSeed(1)))).toEqual([0, 1, 2, 3, 4]);
    expect(() => poissonCohort(5, 1.5, Rng.fromSeed(1))).toThrow("FT305: samplingRate: 1.5 given; a sampling rate is in [0, 1]");
  });
});
