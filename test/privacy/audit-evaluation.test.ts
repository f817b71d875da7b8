/**
 * The empirical privacy audit (audit.test.ts's method) of the private evaluation's release
 * (src/lib/algorithms/private-evaluation.ts): each client's held-out accuracy as a one-hot bin
 * vector, summed by dpSum with clip 1, so one evaluation is one Gaussian mechanism of
 * sensitivity 1 and multiplier --eval-noise, which the run's epsilon composes
 * (src/lib/run/privacy.ts withEvaluations; its noise draws counted as personalization's two
 * histograms, as there).
 *
 * The canary client classifies both its held-out examples right: it adds 1 to the top bin.
 * - With the key from the OS, the adversary thresholds the top bin's released count: the bound
 *   must stay below the price.
 * - With the key derived from the seed, the adversary subtracts the regenerated noise and the
 *   others' known count: the same test must put the bound above the price.
 */
import { describe, expect, test } from "vitest";
import { interpret } from "../../src/index.js";
import { accuracyBins, privateEvaluationProgram } from "../../src/lib/algorithms/private-evaluation.js";
import { PldAccountant } from "../../src/lib/privacy/pld/accountant.js";
import { RunSecret } from "../../src/lib/privacy/secret.js";
import { samplerDeltaPerDraw } from "../../src/lib/run/privacy.js";
import { host, tiny } from "../lib/helpers.js";
import { deadline } from "../helpers/deadline.js";
import { auditLowerBound } from "./audit-bound.js";
import { canary, others, params } from "./evaluation-audit-cohort.js";

const seed = 20_261_205;
const evalNoise = 2;
const evaluate = privateEvaluationProgram(tiny, "dp");
const topBin = accuracyBins - 1;

/** The evaluation's inputs for `clients`, its noise drawn from `key` folded with `part`. */
function inputsOf(clients: number[][], key: number[], part: number, noiseMultiplier: number) {
  const n = clients.length;
  return {
    params,
    x: host([n, 1, 2, 2], clients.flatMap((c) => [c[0]!, c[1]!, c[3]!, c[4]!])),
    y: { shape: [n, 1, 2], data: Int32Array.from(clients.flatMap((c) => [c[2]!, c[5]!])) },
    mask: host([n, 1, 2], clients.flatMap(() => [1, 1])),
    key,
    part,
    noiseMultiplier,
  };
}

/** The released histogram. */
const histogram = (clients: number[][], key: number[], part: number, noiseMultiplier = evalNoise) =>
  Array.from((interpret(evaluate.ir, inputsOf(clients, key, part, noiseMultiplier) as never) as unknown as { histogram: { data: Float32Array } }).histogram.data);
/** The released count of the top bin. */
const released = (clients: number[][], key: number[], part: number) => histogram(clients, key, part)[topBin]!;

describe("privacy audit: the private evaluation's histogram", () => {
  const price = new PldAccountant().step(1, evalNoise, 1, 2 * accuracyBins * samplerDeltaPerDraw).epsilon(1e-5);
  const trials = 1000;

  test("without noise the canary's bin is the top one, and the others' top count is 2", () => {
    const exact = (clients: number[][]) => histogram(clients, [0, 0], 0, 0);
    expect(exact(others)[topBin]).toBe(2);
    expect(exact([...others, canary])[topBin]).toBe(3);
    expect(price).toBeGreaterThan(1.5);
    expect(price).toBeLessThan(3.5);
  });

  test("with the key from the OS the bound stays below the price", () => {
    const key = RunSecret.generate().key("dp-noise");
    const counts = (clients: number[][], first: number) => Array.from({ length: trials }, (_, i) => released(clients, key, first + i));
    const bound = auditLowerBound(counts(others, 1), counts([...others, canary], trials + 1));
    expect(bound).toBeLessThan(price);
  }, deadline(60_000));

  test("with the key from the seed the adversary subtracts the noise: the bound exceeds the price", () => {
    const key = RunSecret.fromInsecureSeed(seed).key("dp-noise");
    const guess = RunSecret.fromInsecureSeed(seed).key("dp-noise");
    const residue = (clients: number[][], first: number) => Array.from({ length: trials }, (_, i) => released(clients, key, first + i) - released(others, guess, first + i));
    const bound = auditLowerBound(residue(others, 1), residue([...others, canary], trials + 1));
    expect(bound).toBeGreaterThan(price);
  }, deadline(60_000));
});
