/**
 * distributedDpSum (src/front/distributed-dp.ts), the language's distributed-DP aggregator:
 * it releases private client data (no FT109) and says so in program.privacy; the sum comes
 * back within the calibrated noise and the rounding error on the reference interpreter and on
 * the onnx backend; the decoded noise has the calibrated variance; bad options are refused; and
 * an empirical audit (test/privacy/audit.test.ts's bound) stays below the reported epsilon.
 */
import { expect, test } from "vitest";
import { atClients, atServer, distributedDpSum, f32, i32, interpret, program } from "../../src/index.js";
import { calibrateDistributedDp, distributedDpEpsilon } from "../../src/lib/privacy/distributed-dp.js";
import { auditLowerBound } from "./audit-bound.js";
import { deadline } from "../helpers/deadline.js";

const clients = 4;
const options = { clip: 2, noiseMultiplier: 0.05, bits: 20, minClients: clients, maxClients: clients };
const release = program(
  { u: { w: atClients(f32([3, 10]), { private: true }), b: atClients(f32([5]), { private: true }) }, rotationKey: atServer(i32([2])), clientKeys: atClients(i32([2])) },
  ({ u, rotationKey, clientKeys }) => distributedDpSum(u, { ...options, rotationKey, clientKeys }),
  { name: "distributed_dp_sum" },
);

const w = Array.from({ length: clients }, (_, c) => Array.from({ length: 3 }, (_, r) => Array.from({ length: 10 }, (_, k) => 0.1 * Math.sin(c + 3 * r + k))));
const b = Array.from({ length: clients }, (_, c) => Array.from({ length: 5 }, (_, k) => 0.2 * Math.cos(c * k)));
const inputs = { u: { w, b }, rotationKey: [1, 2], clientKeys: Array.from({ length: clients }, (_, c) => [7, 100 + c]) };
const trueSum = [...w.flatMap((_, i) => (i === 0 ? w[0]!.flat().map((_, k) => w.reduce((s, m) => s + m.flat()[k]!, 0)) : [])), ...b[0]!.map((_, k) => b.reduce((s, m) => s + m[k]!, 0))];

test("program.privacy lists the release with its mechanism; private data is released without FT109", () => {
  const [line] = release.privacy;
  expect(line).toMatch(/^distributedDpSum #0: distributed discrete Gaussian \(client noise, 20-bit modular sum\), clip 2, noise multiplier 0\.05 at >= 4 clients \(0\.0\d+ after rounding\), at most 4 clients, rho = [\d.e+]+ zCDP per call plus tau d = 0 \(Kairouz et al\. 2021, Prop\. 14\), called once$/);
});

const flatOut = (out: unknown) => {
  const o = out as { w: { data: ArrayLike<number> }; b: { data: ArrayLike<number> } };
  return [...Array.from(o.w.data), ...Array.from(o.b.data)];
};
/** The reference interpreter's release of `inputs`, computed once: both tests below read it, and one run takes seconds. */
let interpreted: number[] | undefined;
const referenceRelease = () => (interpreted ??= flatOut(interpret(release.ir, inputs as never)));
const cal = calibrateDistributedDp({ ...options, dimension: 64 });
// Per coordinate: noise z c (at minClients) and rounding (at most 1/4 a client), in model units.
const std = Math.sqrt((options.noiseMultiplier * options.clip) ** 2 + clients / 4 / cal.scale ** 2);

test("the reference interpreter's release is the sum within 5 standard deviations per coordinate", () => {
  const out = referenceRelease();
  expect(out).toHaveLength(35);
  out.forEach((v, i) => expect(Math.abs(v - trueSum[i]!)).toBeLessThan(5 * std));
  // Not the exact sum: the noise is there.
  expect(out.some((v, i) => Math.abs(v - trueSum[i]!) > 0.1 * std)).toBe(true);
});

test("the onnx backend's release too, and other client keys give other noise", async () => {
  const device = async (keys: number[][]) => {
    const out = (await release.run({ ...inputs, clientKeys: keys } as never, { backend: "onnx" })) as unknown as Record<"w" | "b", { data(): Promise<Float32Array>; dispose(): void }>;
    const values = [...(await out.w.data()), ...(await out.b.data())];
    out.w.dispose();
    out.b.dispose();
    return values;
  };
  const first = await device(inputs.clientKeys);
  const other = await device(inputs.clientKeys.map(([a, c]) => [a! + 1, c!]));
  await release.dispose();
  expect(first).toHaveLength(35);
  // The same numbers as the reference interpreter, to float32 rounding.
  referenceRelease().forEach((v, i) => expect(first[i]).toBeCloseTo(v, 5));
  first.forEach((v, i) => expect(Math.abs(v - trueSum[i]!)).toBeLessThan(5 * std));
  expect(first.some((v, i) => Math.abs(v - other[i]!) > 0.1 * std)).toBe(true);
});

test("zeros from 8 clients: the decoded noise has variance (z c)^2, calibrated for minClients", () => {
  const n = 8;
  const noiseOnly = program(
    { u: atClients(f32([4000])), rotationKey: atServer(i32([2])), clientKeys: atClients(i32([2])) },
    ({ u, rotationKey, clientKeys }) => distributedDpSum(u, { clip: 1, noiseMultiplier: 0.7, bits: 16, minClients: n, maxClients: n, rotationKey, clientKeys }),
  );
  const out = interpret(noiseOnly.ir, { u: Array.from({ length: n }, () => new Array(4000).fill(0)), rotationKey: [3, 3], clientKeys: Array.from({ length: n }, (_, c) => [c, 9]) } as never) as unknown as { data: ArrayLike<number> };
  const values = Array.from(out.data);
  const variance = values.reduce((s, v) => s + v * v, 0) / values.length;
  expect(Math.abs(variance / 0.49 - 1)).toBeLessThan(5 * Math.sqrt(2 / values.length));
});

test("bad options: FT110 for a key that is not one, FT346 for parameters that do not fit", () => {
  const at = (opts: object) => () =>
    program({ u: atClients(f32([4])), rotationKey: atServer(i32([2])), clientKeys: atClients(i32([2])) }, ({ u, rotationKey, clientKeys }) => distributedDpSum(u, { ...options, rotationKey, clientKeys, ...opts } as never));
  expect(at({ clientKeys: undefined })).toThrow("FT110: distributedDpSum() clientKeys must be a key per client (i32[2] at the CLIENTS)");
  expect(at({ bits: 3, maxClients: 1000 })).toThrow("FT346");
  expect(at({ clip: "1" })).toThrow("FT110: distributedDpSum() clip must be a finite number known when the program is traced");
});

test("audit of the traced aggregator (onnx): a canary client against zeros, the clients' keys fresh from the CSPRNG each release", async () => {
  const n = 3;
  const audited = program(
    { u: atClients(f32([1]), { private: true }), rotationKey: atServer(i32([2])), clientKeys: atClients(i32([2])) },
    ({ u, rotationKey, clientKeys }) => distributedDpSum(u, { clip: 1, noiseMultiplier: 1, bits: 12, minClients: n, maxClients: n, rotationKey, clientKeys }),
  );
  const reported = distributedDpEpsilon(calibrateDistributedDp({ clip: 1, noiseMultiplier: 1, bits: 12, minClients: n, maxClients: n, dimension: 1 }), 1, 1e-5).epsilon;
  const key = () => Array.from(crypto.getRandomValues(new Int32Array(2)));
  const release = async (canary: number, keys = { rotationKey: key(), clientKeys: [key(), key(), key()] }) => {
    const out = (await audited.run({ u: [[0.3], [-0.5], [canary]], ...keys } as never, { backend: "onnx" })) as unknown as { data(): Promise<Float32Array>; dispose(): void };
    const value = (await out.data())[0]!;
    out.dispose();
    return value;
  };
  const trials = 3000;
  const without: number[] = [];
  const withCanary: number[] = [];
  for (let t = 0; t < trials; t++) {
    without.push(await release(0));
    withCanary.push(await release(1));
  }
  expect(reported).toBeGreaterThan(1);
  expect(reported).toBeLessThan(10);
  expect(auditLowerBound(without, withCanary)).toBeLessThan(reported);
  // Keys the adversary knows (a client seeding its noise from something public): it re-runs the release without the canary and subtracts; the bound then exceeds the reported epsilon.
  const exposed = async (canary: number) => {
    const keys = { rotationKey: key(), clientKeys: [key(), key(), key()] };
    return (await release(canary, keys)) - (await release(0, keys));
  };
  const zeros: number[] = [];
  const canaries: number[] = [];
  for (let t = 0; t < 1000; t++) {
    zeros.push(await exposed(0));
    canaries.push(await exposed(1));
  }
  await audited.dispose();
  expect(auditLowerBound(zeros, canaries)).toBeGreaterThan(reported);
}, deadline(300_000));
