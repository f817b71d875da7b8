/**
 * The empirical privacy audit (audit.test.ts's method: neighbouring cohorts without and with a
 * canary client, many releases, a Clopper-Pearson lower bound on epsilon) of dpQuantile
 * (src/lib/algorithms/quantile.ts), whose price program.epsilon() gives as one Gaussian
 * mechanism of noise multiplier z / sqrt(steps): its `steps` noisy counts release only the
 * binary search's path, which is the released value.
 *
 * The canary sits at the top of the interval, so it pulls every step's count by -max(p, 1-p).
 * - With the key from the OS, the adversary thresholds the released value: the bound must stay
 *   below the price.
 * - With the key derived from the seed, the adversary replays the search without the canary
 *   under the same noise and declares the canary present when the answers differ: the same
 *   test must put the bound above the price (the audit has the power to catch a broken
 *   mechanism).
 */
import { describe, expect, test } from "vitest";
import { atClients, atServer, f32, foldIn, i32, interpret, program, programEpsilon } from "../../src/index.js";
import { dpQuantile } from "../../src/lib/index.js";
import { RunSecret } from "../../src/lib/privacy/secret.js";
import { host } from "../lib/helpers.js";
import { deadline } from "../helpers/deadline.js";
import { auditLowerBound } from "./audit-bound.js";

const seed = 20_261_204;
const [z, steps] = [4, 4];

const release = program({ u: atClients(f32([]), { private: true }), key: atServer(i32([2])), round: i32([]) }, ({ u, key, round }) =>
  dpQuantile(u, { quantile: 0.5, lower: 0, upper: 1, noiseMultiplier: z, steps, key: foldIn(key, round) as never }),
);
const others = [0.1, 0.35, 0.4, 0.45, 0.55, 0.6, 0.7, 0.9];
const canary = 1;
const key = (mode: "secret" | "seed") => (mode === "secret" ? RunSecret.generate() : RunSecret.fromInsecureSeed(seed)).key("dp-noise");
const run = (values: number[], noiseKey: number[], round: number) =>
  (interpret(release.ir, { u: host([values.length], values), key: noiseKey, round } as never) as unknown as { data: Float32Array }).data[0]!;

describe("privacy audit: dpQuantile", () => {
  const price = programEpsilon(release, { delta: 1e-5 });
  const trials = 2000;

  test("its price is one Gaussian of z / sqrt(steps)", () => {
    expect(price.noiseMultiplier).toBeCloseTo(z / Math.sqrt(steps), 12);
    expect(price.epsilon).toBeGreaterThan(1.5);
    expect(price.epsilon).toBeLessThan(3.5);
  });

  test("with the key from the OS the bound stays below the price", () => {
    const noiseKey = key("secret");
    const released = (withCanary: boolean, first: number) => Array.from({ length: trials }, (_, i) => run(withCanary ? [...others, canary] : others, noiseKey, first + i));
    const bound = auditLowerBound(released(false, 1), released(true, trials + 1));
    expect(bound).toBeLessThan(price.epsilon);
  }, deadline(60_000));

  test("with the key from the seed the adversary replays the search: the bound exceeds the price", () => {
    const noiseKey = key("seed");
    const guess = RunSecret.fromInsecureSeed(seed).key("dp-noise");
    // 1 where the released answer differs from the replay without the canary, 0 where it is the same.
    const differs = (withCanary: boolean, first: number) =>
      Array.from({ length: trials }, (_, i) => Number(run(withCanary ? [...others, canary] : others, noiseKey, first + i) !== run(others, guess, first + i)));
    const bound = auditLowerBound(differs(false, 1), differs(true, trials + 1));
    expect(bound).toBeGreaterThan(price.epsilon);
  }, deadline(60_000));
});
