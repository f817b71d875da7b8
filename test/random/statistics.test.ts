/**
 * The draws' distributions over 10^6 values (Kolmogorov-Smirnov at the 0.001 level, moments
 * within five standard errors), and gradients through programs that draw: draws are constants.
 */
import { describe, expect, test } from "vitest";
import { atClients, atServer, bernoulli, broadcast, clientIndex, f32, foldIn, grad, i32, jvp, map, mul, normal, program, randomPermutation, sum, uniform, dropout, type Tensor } from "../../src/index.js";
import { logErfc } from "../../src/lib/privacy/rdp.js";
import { runOn } from "./helpers.js";

const N = 1_000_000;
/** The KS critical value for n draws at the 0.001 level. */
const KS_CRITICAL = 1.949 / Math.sqrt(N);

function ksStatistic(sample: readonly number[], cdf: (x: number) => number): number {
  const sorted = Float64Array.from(sample).sort();
  let d = 0;
  sorted.forEach((x, i) => {
    const f = cdf(x);
    d = Math.max(d, Math.abs(f - i / sorted.length), Math.abs((i + 1) / sorted.length - f));
  });
  return d;
}

function moments(sample: readonly number[]): { mean: number; variance: number } {
  const mean = sample.reduce((s, x) => s + x, 0) / sample.length;
  return { mean, variance: sample.reduce((s, x) => s + (x - mean) ** 2, 0) / (sample.length - 1) };
}

const normalCdf = (x: number) => (x < 0 ? 0.5 * Math.exp(logErfc(-x / Math.SQRT2)) : 1 - 0.5 * Math.exp(logErfc(x / Math.SQRT2)));

describe("distributions over 10^6 draws", () => {
  const draws = program({ key: atServer(i32([2])) }, ({ key }) => ({
    uniform: uniform(foldIn(key, 1), [N]),
    normal: normal(foldIn(key, 2), [N]),
    bernoulli: bernoulli(foldIn(key, 3), 0.3, [N]),
  }));

  test("uniform, normal and bernoulli pass their tests", async () => {
    const out = await runOn("onnx", draws, { key: [0, 2024] });
    expect(ksStatistic(out.uniform!, (x) => Math.min(Math.max(x, 0), 1))).toBeLessThan(KS_CRITICAL);
    const u = moments(out.uniform!);
    expect(Math.abs(u.mean - 0.5)).toBeLessThan(5 * Math.sqrt(1 / 12 / N));
    expect(Math.abs(u.variance - 1 / 12)).toBeLessThan(5 * Math.sqrt(1 / 180 / N));

    expect(ksStatistic(out.normal!, normalCdf)).toBeLessThan(KS_CRITICAL);
    const z = moments(out.normal!);
    expect(Math.abs(z.mean)).toBeLessThan(5 / Math.sqrt(N));
    expect(Math.abs(z.variance - 1)).toBeLessThan(5 * Math.sqrt(2 / N));

    const b = moments(out.bernoulli!);
    expect(Math.abs(b.mean - 0.3)).toBeLessThan(5 * Math.sqrt(0.21 / N));
  });

  test("randomPermutation makes each of the 6 orders of 3 equally likely (chi-square, 5 dof, 0.001 level)", async () => {
    const clients = 6000;
    const perms = program({ key: atServer(i32([2])), x: atClients(f32([1])) }, ({ key, x }) => ({
      perms: map((k, _xm) => randomPermutation(foldIn(k, clientIndex()), 3), broadcast(key), x),
    }));
    const out = await runOn("onnx", perms, { key: [0, 77], x: Array.from({ length: clients }, () => [0]) });
    const counts = new Map<string, number>();
    for (let c = 0; c < clients; c++) {
      const order = out.perms!.slice(3 * c, 3 * c + 3).join();
      counts.set(order, (counts.get(order) ?? 0) + 1);
    }
    expect(counts.size).toBe(6);
    const expected = clients / 6;
    const chiSquare = [...counts.values()].reduce((s, n) => s + (n - expected) ** 2 / expected, 0);
    expect(chiSquare).toBeLessThan(20.52);
  });
});

describe("gradients treat draws as constants", () => {
  type W = Tensor<[1000], "float32", "server">;
  const p = program({ w: atServer(f32([1000])), t: atServer(f32([1000])), key: atServer(i32([2])) }, ({ w, t, key }) => {
    const noisy = (v: W) => sum(mul(v, normal(key, [1000])));
    const dropped = (v: W) => sum(dropout(v, 0.25, key));
    const [, tangent] = jvp(dropped, [w], [t]);
    return { noise: normal(key, [1000]), noisyGrad: grad(noisy)(w), droppedGrad: grad(dropped)(w), tangent, kept: dropout(w, 0.25, key) };
  });

  test("grad of sum(w * noise) is the noise; grad and jvp of dropout follow its mask", async () => {
    const w = Array.from({ length: 1000 }, (_, i) => 1 + i / 1000);
    const t = Array.from({ length: 1000 }, () => 1);
    const out = await runOn("onnx", p, { w, t, key: [3, 4] });
    expect(out.noisyGrad).toEqual(out.noise);
    const mask: number[] = out.kept!.map((v) => (v !== 0 ? 1 : 0));
    mask.forEach((m, i) => expect(out.droppedGrad![i]).toBeCloseTo(m / 0.75, 6));
    expect(out.tangent![0]).toBeCloseTo(mask.reduce((s, m) => s + m / 0.75, 0), 2);
    const keptShare = mask.reduce((s, m) => s + m, 0) / 1000;
    expect(Math.abs(keptShare - 0.75)).toBeLessThan(5 * Math.sqrt(0.1875 / 1000));
    expect(await runOn("reference", p, { w, t, key: [3, 4] }).then((r) => r.kept!.map((v) => v !== 0))).toEqual(mask.map((m) => m === 1));
  });
});
