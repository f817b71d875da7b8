/**
 * DP-FedAvg (FedAvg with the aggregator chain clip,dp) against hand computations: with negligible noise (noiseMultiplier
 * 1e-30: 0 is FT110, a release without noise) the round is the clipped
 * mean of the clients' updates (sum over the expected cohort size), an update longer than C is
 * scaled to norm C, adaptive clipping follows C exp(-eta (b - gamma)), and the server noise
 * has standard deviation z C (statistically, over many draws).
 */
import { describe, expect, test } from "vitest";
import { atServer, f32, i32, program } from "../../src/index.js";
import { gaussianTreeNoise } from "../../src/front/privacy.js";
import { aggregator, aggregationStages as stages, fedAvgProgram } from "../../src/lib/index.js";
import { dpNoiseSplit } from "../../src/lib/privacy/dp-fedavg-epsilon.js";
import { batchInputs, host, oneParam, oneParamLocalSgd, pointCohort, read, tiny, separableCohort, twoClients } from "../lib/helpers.js";

const w0 = 0.4;
const lr = 0.5;
/** The two clients' local updates in float64: about +0.18 and -0.09. */
const deltas = twoClients.map((batches) => oneParamLocalSgd(w0, batches, lr) - w0);
const key = [0, 7];
/** A noise multiplier whose noise vanishes in float32 next to the updates (0 is refused, FT110). */
const negligible = 1e-30;
/** DP-FedAvg's chain: the clip C is the program's input `clip` (the 1 is only the first round's state). */
const clipDp = aggregator(stages.clip(1), stages.dp());
const round = (inputs: { clip: number; noiseMultiplier?: number; expectedClients?: number }) => ({
  params: { w: [w0] },
  ...batchInputs(pointCohort(twoClients)),
  lr,
  noiseMultiplier: negligible,
  expectedClients: 2,
  key,
  round: 1,
  ...inputs,
});

describe("DP-FedAvg", () => {
  test("with negligible noise and a large clip it is the uniform mean of the clients' updates", async () => {
    const out = await read(await fedAvgProgram(oneParam, { aggregator: clipDp }).run(round({ clip: 100 })));
    expect((out.params.w as number[])[0]).toBeCloseTo(w0 + (deltas[0]! + deltas[1]!) / 2, 6);
    expect(out.clip).toBeCloseTo(100, 5);
  });

  test("an update longer than C is scaled to norm C; the sum is divided by the expected cohort size", async () => {
    const clip = Math.min(...deltas.map(Math.abs)) / 2;
    const out = await read(await fedAvgProgram(oneParam, { aggregator: clipDp }).run(round({ clip, expectedClients: 5 })));
    const clipped = deltas.map((d) => Math.sign(d) * Math.min(Math.abs(d), clip));
    expect((out.params.w as number[])[0]).toBeCloseTo(w0 + (clipped[0]! + clipped[1]!) / 5, 6);
  });

  test("the whole update tree is clipped by its global norm, leaf directions kept", async () => {
    const cohort = separableCohort([6], 3);
    const params = { w: host([2, 2], [0.3, -0.2, 0.1, 0.4]), b: host([2], [0.05, -0.05]) };
    const inputs = { params, ...batchInputs(cohort), lr: 0.5, noiseMultiplier: negligible, expectedClients: 1, key, round: 1 };
    const free = await read(await fedAvgProgram(tiny, { aggregator: clipDp }).run({ ...inputs, clip: 1e6 }));
    const clipped = await read(await fedAvgProgram(tiny, { aggregator: clipDp }).run({ ...inputs, clip: 0.01 }));
    const update = (tree: typeof free) => [...(tree.params.w as number[][]).flat(), ...(tree.params.b as number[])].map((v, i) => v - [0.3, -0.2, 0.1, 0.4, 0.05, -0.05][i]!);
    const [u, c] = [update(free), update(clipped)];
    const norm = Math.hypot(...u);
    expect(norm).toBeGreaterThan(0.01);
    c.forEach((v, i) => expect(v).toBeCloseTo((u[i]! * 0.01) / norm, 6));
  });

  test("adaptive clipping: C <- C exp(-eta (b - gamma)) from the fraction of clients below C", async () => {
    const adaptive = fedAvgProgram(oneParam, { aggregator: aggregator(stages.clip("adaptive"), stages.dp()) });
    const [eta, gamma] = [0.2, 0.7];
    // C = 1.5 |delta_1|: one update within C (b = 1/2); C = 0.5 |delta_1|: none (b = 1/2 - 1/4 with m = 4).
    for (const [expectedClients, clipFactor, b] of [[2, 1.5, 0.5], [4, 0.5, 0.25]] as const) {
      const clip = Math.abs(deltas[1]!) * clipFactor;
      const out = await read(await adaptive.run({ ...round({ clip, expectedClients }), targetQuantile: gamma, clipLr: eta, countStddev: 0 }));
      expect(out.clip).toBeCloseTo(clip * Math.exp(-eta * (b - gamma)), 6);
    }
  });

  test("the server noise has standard deviation z C (1e5 draws) and differs between rounds", async () => {
    const noise = program({ like: atServer(f32([100_000])), other: atServer(f32([3])), key: atServer(i32([2])) }, ({ like, other, key: k }) =>
      gaussianTreeNoise({ like, other }, 0.3, k) as never,
    );
    const out = (await read(await noise.run({ like: host([100_000], new Array(100_000).fill(0)), other: [0, 0, 0], key }))) as unknown as { like: number[] };
    const n = out.like.length;
    const mean = out.like.reduce((s, v) => s + v, 0) / n;
    const std = Math.sqrt(out.like.reduce((s, v) => s + (v - mean) ** 2, 0) / (n - 1));
    // Standard errors: mean 0.3 / sqrt(n) ~ 0.001; std 0.3 / sqrt(2n) ~ 0.0007.
    expect(Math.abs(mean)).toBeLessThan(0.005);
    expect(Math.abs(std - 0.3)).toBeLessThan(0.004);

    const [z, clip, m] = [1.5, 0.02, 4];
    const program1 = fedAvgProgram(oneParam, { aggregator: clipDp });
    const draws: number[] = [];
    for (let r = 1; r <= 60; r++) {
      const free = (await read(await program1.run({ ...round({ clip, expectedClients: m }), round: r }))).params.w as number[];
      const noisy = (await read(await program1.run({ ...round({ clip, expectedClients: m, noiseMultiplier: z }), round: r }))).params.w as number[];
      draws.push((noisy[0]! - free[0]!) * m);
    }
    expect(new Set(draws).size).toBe(60);
    const rms = Math.sqrt(draws.reduce((s, v) => s + v * v, 0) / draws.length);
    // 60 draws: the sample std is within 30% of z C with probability > 0.999.
    expect(rms / (z * clip)).toBeGreaterThan(0.7);
    expect(rms / (z * clip)).toBeLessThan(1.3);
  });

  test("Andrew et al.'s noise split keeps the round's total multiplier", () => {
    const [z, sigmaB] = [1, 5];
    const zDelta = dpNoiseSplit(z, sigmaB)!;
    expect(zDelta ** -2 + (2 * sigmaB) ** -2).toBeCloseTo(z ** -2, 12);
    expect(dpNoiseSplit(1, 0.4)).toBeUndefined();
    expect(dpNoiseSplit(0, 1)).toBe(0);
  });
});
