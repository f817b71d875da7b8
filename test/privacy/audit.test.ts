/**
 * An empirical privacy audit, in the manner of Jagielski, Ullman and Oprea 2020 ("Auditing
 * Differentially Private Machine Learning") and Nasr et al. 2021 ("Adversary Instantiation"):
 * the released mechanism runs thousands of times on two neighbouring cohorts, without and with
 * a canary client, and a distinguisher's false positive and false negative rates bound epsilon
 * from below, eps >= log((1 - delta - FNR) / FPR) (and the same with the rates swapped), each
 * rate at its Clopper-Pearson upper bound (clopper-pearson.ts). The threshold is chosen on one
 * half of the trials and the rates counted on the other, so the choice does not flatter them.
 *
 * The adversary knows everything but the canary's presence and the run's secret: the other
 * clients' data, the program, the config and its --seed. It regenerates the release without the
 * canary from what it knows (the noise key and, for DP-FedAvg, the Poisson cohort derived from
 * the seed, as --dp-insecure-seed derives them) and looks at the difference along the canary's
 * direction.
 * - With the secret from the OS (what fedtensor run does), the regenerated noise is unrelated
 *   to the real one: the bound must stay below the reported epsilon.
 * - With the noise derived from the seed (--dp-insecure-seed, or the library before this
 *   audit), subtracting it leaves the canary bare: the same test must put the bound ABOVE the
 *   reported epsilon. That is the test failing when the mechanism is broken, checked here.
 *
 * The mechanisms run on the reference interpreter (a fraction of a millisecond a release).
 */
import { describe, expect, test } from "vitest";
import { atClients, atServer, dpSum, f32, foldIn, i32, interpret, program } from "../../src/index.js";
import { aggregator, aggregationStages as stages, fedAvgProgram } from "../../src/lib/index.js";
import { poissonCohort } from "../../src/lib/data/federated.js";
import { dpFedAvgEpsilon } from "../../src/lib/privacy/dp-fedavg-epsilon.js";
import { RunSecret } from "../../src/lib/privacy/secret.js";
import { samplerDeltaPerDraw } from "../../src/lib/run/privacy.js";
import { host, tiny } from "../lib/helpers.js";
import { auditLowerBound } from "./audit-bound.js";
import { deadline } from "../helpers/deadline.js";

const delta = 1e-5;
/** The seed the adversary reads from the config. */
const seed = 20_260_101;

/** The noise key of a run whose secret is the OS's (private) or the seed's (broken). */
const noiseKey = (mode: "secret" | "seed") => (mode === "secret" ? RunSecret.generate() : RunSecret.fromInsecureSeed(seed)).key("dp-noise");
/** What the adversary derives from the seed. */
const adversary = RunSecret.fromInsecureSeed(seed);

describe("privacy audit: dpSum alone", () => {
  const clip = 1;
  const z = 2;
  const release = program(
    { u: atClients(f32([4]), { private: true }), key: atServer(i32([2])), round: i32([]) },
    ({ u, key, round }) => dpSum(u, { clip, noiseMultiplier: z, key: foldIn(key, round) as never }),
    { name: "audited_dp_sum" },
  );
  const others = [0.3, -0.2, 0.5, 0.1, 2, 0, 0, 1, 0, 0.4, -0.3, 0];
  // The canary's value is C e_1: the clip leaves it as it is.
  const canary = [clip, 0, 0, 0];
  const run = (values: number[], key: number[], round: number) =>
    (interpret(release.ir, { u: host([values.length / 4, 4], values), key, round } as never) as unknown as { data: Float32Array }).data;

  /** The adversary's statistic on `trials` releases from rounds first, first + 1, ...: the first coordinate, less its regenerated value. */
  function statistics(mode: "secret" | "seed", withCanary: boolean, first: number, trials: number): number[] {
    const key = noiseKey(mode);
    const guess = adversary.key("dp-noise");
    return Array.from({ length: trials }, (_, i) => {
      const released = run(withCanary ? [...others, ...canary] : others, key, first + i);
      return released[0]! - run(others, guess, first + i)[0]!;
    });
  }

  // One release: q = 1, one step, 4 draws of the sampler.
  const reported = dpFedAvgEpsilon({ samplingRate: 1, noiseMultiplier: z, noiseDrawsPerRound: 4, samplerDeltaPerDraw }, 1, delta).epsilon;
  const trials = 3000;

  test(`with the OS's secret the bound stays below the reported epsilon`, () => {
    const bound = auditLowerBound(statistics("secret", false, 1, trials), statistics("secret", true, trials + 1, trials));
    expect(reported).toBeGreaterThan(1.5);
    expect(reported).toBeLessThan(3);
    expect(bound).toBeLessThan(reported);
  }, deadline(60_000));

  test("with the noise derived from the seed the same test fails: the bound exceeds the reported epsilon", () => {
    const bound = auditLowerBound(statistics("seed", false, 1, trials), statistics("seed", true, trials + 1, trials));
    expect(bound).toBeGreaterThan(reported);
    expect(bound).toBeGreaterThan(5);
  }, deadline(60_000));

  test("the best adversary without the secret, thresholding the first coordinate itself (the others' known sum is a constant offset), stays below too", () => {
    const key = noiseKey("secret");
    const direct = (withCanary: boolean, first: number) => Array.from({ length: trials }, (_, i) => run(withCanary ? [...others, ...canary] : others, key, first + i)[0]!);
    const bound = auditLowerBound(direct(false, 1), direct(true, trials + 1));
    expect(bound).toBeLessThan(reported);
  }, deadline(60_000));
});

describe("privacy audit: one DP-FedAvg round (Poisson cohort, tiny model)", () => {
  const clip = 0.5;
  const z = 1.5;
  const q = 0.5;
  const lr = 1;
  const round = fedAvgProgram(tiny, { aggregator: aggregator(stages.clip(clip), stages.dp()) });
  const params = tiny.init(undefined as never);
  // Four clients of two examples each, and the canary, whose examples push hard on one class.
  const examples = [
    [0.2, 0.1, 0, 1, 0.1, 0.3, 1, 0],
    [0.5, -0.2, 1, 1, -0.1, 0.2, 0, 0],
    [0.1, 0.1, 1, 0, 0.3, -0.4, 1, 1],
    [-0.3, 0.2, 0, 0, 0.2, 0.2, 1, 1],
  ];
  const canary = [5, 0, 1, 1, 5, 0, 1, 1];
  const expectedClients = 4 * q;

  /**
   * One round's release on `clients` (rows of x1 y1 x2 y2 ... per client) of which `present`
   * are in the cohort. Clients outside the cohort are passed with every example masked out,
   * which the round multiplies out exactly (the stand-in that fedtensor run uses for an empty
   * cohort): the same numbers as leaving them out, with one shape for every trial.
   */
  function run(clients: number[][], present: ArrayLike<number>, key: number[], r: number): Float32Array {
    const inCohort = new Set(Array.from(present));
    const n = clients.length;
    const x = clients.flatMap((c) => [c[0]!, c[1]!, c[4]!, c[5]!]);
    const y = clients.flatMap((c) => [c[2]!, c[6]!]);
    const mask = clients.flatMap((_, i) => (inCohort.has(i) ? [1, 1] : [0, 0]));
    const inputs = {
      params,
      x: host([n, 1, 2, 2], x),
      y: { shape: [n, 1, 2], data: Int32Array.from(y) },
      mask: host([n, 1, 2], mask),
      count: host([n], clients.map(() => 2)),
      lr,
      clip,
      noiseMultiplier: z,
      expectedClients,
      key,
      round: r,
    };
    const out = interpret(round.ir, inputs as never) as unknown as { params: { w: { data: Float32Array }; b: { data: Float32Array } } };
    return Float32Array.from([...out.params.w.data, ...out.params.b.data]);
  }

  // The canary's clipped contribution (over m): the difference it makes to a release, noise held fixed.
  const all = [...examples, canary];
  const contribution = (() => {
    const key = [3, 4];
    const a = run(all, [4], key, 0);
    const b = run(all, [], key, 0);
    return a.map((v, i) => v - b[i]!);
  })();
  const norm = Math.hypot(...contribution);
  const along = (v: Float32Array, w: Float32Array) => v.reduce((s, vi, i) => s + (vi - w[i]!) * contribution[i]!, 0) / norm;

  function statistics(mode: "secret" | "seed", withCanary: boolean, first: number, trials: number): number[] {
    const secret = mode === "secret" ? RunSecret.generate() : RunSecret.fromInsecureSeed(seed);
    const [key, guess] = [secret.key("dp-noise"), adversary.key("dp-noise")];
    const clients = withCanary ? all : examples;
    return Array.from({ length: trials }, (_, i) => {
      const r = first + i;
      const released = run(clients, poissonCohort(clients.length, q, secret.cohortStream(r)), key, r);
      // The adversary's regeneration: the four known clients, sampled as the seed says, with the seed's noise.
      const regenerated = run(examples, poissonCohort(examples.length, q, adversary.cohortStream(r)), guess, r);
      return along(released, regenerated);
    });
  }

  // One round: q = 1/2, 6 parameters drawn.
  const reported = dpFedAvgEpsilon({ samplingRate: q, noiseMultiplier: z, noiseDrawsPerRound: 6, samplerDeltaPerDraw }, 1, delta).epsilon;
  /**
   * 800 trials a side: the seed-derived run's bound (the canary in about half its cohorts, no
   * other release mistaken for one with it) is then 3.92, still well above the reported 2.25;
   * 1500 gave about 4.5 for twice the interpreter runs.
   */
  const trials = 800;

  test("the canary's update is clipped to C (over the expected cohort)", () => {
    expect(norm).toBeCloseTo(clip / expectedClients, 5);
  });

  test("with the OS's secret the bound stays below the reported epsilon", () => {
    const bound = auditLowerBound(statistics("secret", false, 1, trials), statistics("secret", true, trials + 1, trials));
    expect(reported).toBeLessThan(3);
    expect(bound).toBeLessThan(reported);
  }, deadline(60_000));

  test("with the noise and the cohort derived from the seed the same test fails: the bound exceeds the reported epsilon", () => {
    const bound = auditLowerBound(statistics("seed", false, 1, trials), statistics("seed", true, trials + 1, trials));
    expect(bound).toBeGreaterThan(reported);
  }, deadline(60_000));
});
