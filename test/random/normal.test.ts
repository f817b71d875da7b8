/**
 * The normal sampler (src/ir/normal.ts) against its written bound, with a double-precision
 * quantile from an independent algorithm (Wichura's PPND16, 1e-16 relative) as the truth:
 * - every cell of the 64-bit uniform gives a value inside its cell's z-interval, up to a
 *   rounding of 5e-7 max(1, |z|); only the two outermost cells cannot hold their interval;
 * - so the sampler reaches +-9.16 sigma and the mass it cannot resolve is 2 * 2^-64, the
 *   exported normalSamplerDeltaPerDraw;
 * - past 5.3 sigma (where 23-bit draws stopped) the values follow the normal's conditional
 *   law (Kolmogorov-Smirnov on 10^5 tail draws);
 * - crafted blocks, tails included, are bit-identical on every backend, and normal() draws
 *   one Threefry block per value.
 */
import { describe, expect, test } from "vitest";
import { atServer, i32, normal, program } from "../../src/index.js";
import { NORMAL_WORDS_PER_VALUE, normalOfBlock, normalSamplerDelta, normalSamplerDeltaPerDraw, normalsFromWords } from "../../src/ir/normal.js";
import { randomBits } from "../../src/ir/threefry.js";
import { webgpu } from "../helpers/test-backends.js";
import { emit, primitiveProgram } from "../interpret/helpers.js";
import { BACKENDS, runOn } from "./helpers.js";

// PPND16 (AS 241, double precision), highest degree first.
const horner = (c: readonly number[], x: number) => c.reduce((acc, v) => acc * x + v, 0);
const PPND16 = {
  a: [2.5090809287301226727e3, 3.3430575583588128105e4, 6.7265770927008700853e4, 4.5921953931549871457e4, 1.3731693765509461125e4, 1.9715909503065514427e3, 1.3314166789178437745e2, 3.387132872796366608],
  b: [5.226495278852854561e3, 2.8729085735721942674e4, 3.930789580009271061e4, 2.1213794301586595867e4, 5.3941960214247511077e3, 6.871870074920579083e2, 4.2313330701600911252e1, 1],
  c: [7.7454501427834140764e-4, 2.27238449892691845833e-2, 2.4178072517745061177e-1, 1.27045825245236838258, 3.64784832476320460504, 5.7694972214606914055, 4.6303378461565452959, 1.42343711074968357734],
  d: [1.05075007164441684324e-9, 5.475938084995344946e-4, 1.51986665636164571966e-2, 1.4810397642748007459e-1, 6.8976733498510000455e-1, 1.6763848301838038494, 2.05319162663775882187, 1],
  e: [2.01033439929228813265e-7, 2.71155556874348757815e-5, 1.2426609473880784386e-3, 2.6532189526576123093e-2, 2.9656057182850489123e-1, 1.7848265399172913358, 5.4637849111641143699, 6.6579046435011037772],
  f: [2.04426310338993978564e-15, 1.4215117583164458887e-7, 1.8463183175100546818e-5, 7.868691311456132591e-4, 1.48753612908506148525e-2, 1.3692988092273580531e-1, 5.9983220655588793769e-1, 1],
};
/** The upper quantile of a tail probability given by its log (probability < 0.075). */
function upperQuantile(logTail: number): number {
  const r = Math.sqrt(-logTail);
  if (r <= 5) return horner(PPND16.c, r - 1.6) / horner(PPND16.d, r - 1.6);
  return horner(PPND16.e, r - 5) / horner(PPND16.f, r - 5);
}
/** The normal quantile of p, or of the tail probability exp(logTail) on p's side outside the centre. */
function quantile(p: number, logTail = Math.log(Math.min(p, 1 - p))): number {
  const q = p - 0.5;
  if (Math.abs(q) <= 0.425) return (q * horner(PPND16.a, 0.180625 - q * q)) / horner(PPND16.b, 0.180625 - q * q);
  return q < 0 ? -upperQuantile(logTail) : upperQuantile(logTail);
}
/** P[Z > z] for z >= 4 by its continued fraction phi(z) / (z + 1/(z + 2/(z + ...))), to 1e-15. */
function upperTail(z: number): number {
  let fraction = z;
  for (let k = 80; k >= 1; k--) fraction = z + k / fraction;
  return Math.exp(-z * z / 2) / Math.sqrt(2 * Math.PI) / fraction;
}

const TOP = 2 ** 23;
/** The block of cell m (23 bits) and position F (41 bits, given as its top 9 bits and low 32). */
const block = (m: number, high9: number, low32: number): [number, number] => [((m << 9) | high9) | 0, low32 | 0];

/** The z-interval of a block's cell of the uniform, with the sampler's side convention (src/ir/normal.ts). */
function cellInterval(m: number, high9: number, low32: number): [number, number] {
  const central = Math.abs((m + 0.5) / TOP - 0.5) <= 0.425;
  if (central) return [quantile(m / TOP), quantile((m + 1) / TOP)];
  const n = Math.min(m, TOP - 1 - m);
  const position = high9 * 2 ** 32 + (low32 >>> 0);
  const logTail = (inner: number) => Math.log(n + inner * 2 ** -41) - 23 * Math.LN2;
  const far = position === 0 && n === 0 ? Infinity : upperQuantile(logTail(position));
  const near = upperQuantile(logTail(position + 1));
  return m < TOP / 2 ? [-far, -near] : [near, far];
}

/** Deterministic 32-bit words for the tests' cell choices. */
function* words(seed: number): Generator<number> {
  for (let block = 0; ; block++) for (const w of randomBits(Int32Array.from([seed, block]), 2)) yield w >>> 0;
}

describe("every cell's value lies in the cell's z-interval", () => {
  const within = (m: number, high9: number, low32: number) => {
    const z = normalOfBlock(...block(m, high9, low32));
    const [lo, hi] = cellInterval(m, high9, low32);
    const slack = 5e-7 * Math.max(1, Math.abs(z));
    return Number.isFinite(z) && z >= lo - slack && z <= hi + slack;
  };

  test("random cells over the whole range and log-uniformly deep in the tails", () => {
    const w = words(17);
    const next = () => w.next().value as number;
    const failures: string[] = [];
    for (let i = 0; i < 200_000; i++) {
      const uniformCell = next() >>> 9;
      const depth = Math.floor((next() / 2 ** 32) * 23);
      const n = Math.floor((next() / 2 ** 32) * 2 ** depth);
      const tailCell = next() & 1 ? n : TOP - 1 - n;
      for (const m of [uniformCell, tailCell]) {
        const [high9, low32] = [next() & 511, next()];
        if (!within(m, high9, low32)) failures.push(`${m}/${high9}/${low32}`);
      }
    }
    expect(failures).toEqual([]);
  });

  test("crafted cells: the centre's edge, the last cells of each field, the deepest positions", () => {
    const edge = Math.round(0.075 * TOP);
    const cells: [number, number, number][] = [];
    for (const m of [edge - 2, edge - 1, edge, edge + 1, TOP - 1 - edge, TOP - edge, 0, 1, TOP / 2 - 1, TOP / 2, TOP - 2, TOP - 1]) {
      for (const [high9, low32] of [[0, 1], [0, 2], [0, 255], [0, 256], [0, 2 ** 32 - 1], [1, 0], [511, 2 ** 32 - 1], [256, 0]] as const) cells.push([m, high9, low32]);
    }
    for (let position = 1; position < 4096; position++) cells.push([0, 0, position], [TOP - 1, 0, position]);
    expect(cells.filter((c) => !within(...c))).toEqual([]);
  });
});

describe("the reach and the unresolved mass", () => {
  const deepest = normalOfBlock(...block(TOP - 1, 0, 0));

  test("the two outermost cells give +-9.155, the quantile of their midpoint 2^-65", () => {
    expect(normalOfBlock(...block(0, 0, 0))).toBe(-deepest);
    expect(Math.abs(deepest - upperQuantile(-65 * Math.LN2))).toBeLessThan(5e-6);
    expect(deepest).toBeGreaterThan(9.15);
  });

  test("only those cells leave their interval: the sampler resolves all but 2 * 2^-64 of the mass", () => {
    // The outermost cell is p' in (0, 2^-64): Z beyond its inner edge is what no value follows.
    const innerEdge = upperQuantile(-64 * Math.LN2);
    expect(innerEdge).toBeGreaterThan(9.08);
    expect(Math.abs(2 * upperTail(innerEdge) / normalSamplerDeltaPerDraw - 1)).toBeLessThan(1e-6);
    // The next cell in is resolved: its value lies in (Q(2^-63), Q(2^-64)).
    const next = normalOfBlock(...block(TOP - 1, 0, 1));
    expect(next).toBeGreaterThan(upperQuantile(-63 * Math.LN2));
    expect(next).toBeLessThan(innerEdge);
  });

  test("no block exceeds the reach (10^6 random blocks and every deep position)", () => {
    const blocks = randomBits(Int32Array.from([5, 6]), 2_000_000);
    let largest = 0;
    for (const z of normalsFromWords(blocks)) largest = Math.max(largest, Math.abs(z));
    for (let low32 = 0; low32 < 65536; low32++) largest = Math.max(largest, Math.abs(normalOfBlock(...block(0, 0, low32))));
    expect(largest).toBe(deepest);
  });

  test("n draws add n * 2^-63 (1 + e^epsilon) to delta", () => {
    expect(normalSamplerDelta(0, 8)).toBe(0);
    expect(normalSamplerDelta(1, 0)).toBe(2 * normalSamplerDeltaPerDraw);
    expect(normalSamplerDelta(10, 3) / normalSamplerDelta(10, 0)).toBeCloseTo((1 + Math.exp(3)) / 2, 12);
    // The DP example (100 rounds x ~200k coordinates at epsilon <= 8) stays far below delta = 1e-5.
    expect(normalSamplerDelta(100 * 200_000, 8)).toBeLessThan(1e-8);
  });
});

describe("tails past the old 5.29-sigma reach follow the normal's conditional law", () => {
  const KS_CRITICAL = (n: number) => 1.949 / Math.sqrt(n);
  function ksUniform(sample: Float64Array): number {
    sample.sort();
    return sample.reduce((d, u, i) => Math.max(d, Math.abs(u - i / sample.length), Math.abs((i + 1) / sample.length - u)), 0);
  }

  test.each([
    ["beyond 5.29 sigma (cell n = 0, p' < 2^-23)", 0, 23],
    ["beyond 6.3 sigma (p' < 2^-32)", 1, 32],
  ] as const)("%s: KS over 10^5 draws", (_name, fixedHigh, bits) => {
    const n = 100_000;
    const w = words(bits);
    const rescaled = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      const side = w.next().value! & 1;
      const high9 = fixedHigh ? 0 : w.next().value! & 511;
      const z = normalOfBlock(...block(side ? TOP - 1 : 0, high9, w.next().value!));
      // Given the cell, P[|Z| > |z|] / P[cell] is uniform on (0, 1) under the normal's law.
      rescaled[i] = upperTail(Math.abs(z)) * 2 ** bits;
    }
    expect(ksUniform(rescaled)).toBeLessThan(KS_CRITICAL(n));
    expect(Math.max(...rescaled)).toBeLessThan(1 + 1e-5);
  });
});

describe("bit-identical on every backend, tails included", () => {
  const TAIL_BLOCKS: [number, number][] = [
    block(0, 0, 0), block(TOP - 1, 0, 0), block(0, 0, 1), block(TOP - 1, 511, 2 ** 32 - 1), block(1, 3, 12345),
    block(629146, 7, 99), block(TOP - 629146, 0, 2 ** 31), block(TOP / 2, 0, 0), block(TOP / 2 - 1, 511, 7),
  ];
  const w = words(99);
  const random = Array.from({ length: 4000 }, () => block(w.next().value! >>> 9, w.next().value! & 511, w.next().value!));
  const deep = Array.from({ length: 4000 }, (_, i) => block(i % 2 ? 0 : TOP - 1, i % 3, w.next().value!));
  const blocks = [...TAIL_BLOCKS, ...random, ...deep];
  const p = program({ blocks: atServer(i32([blocks.length, NORMAL_WORDS_PER_VALUE])) }, ({ blocks }) => ({ z: emit("normal_from_bits", [blocks]) }));
  const want = Array.from(normalsFromWords(blocks.flat()));
  const where = [...BACKENDS, "reference", ...(webgpu.available ? ["webgpu"] : [])] as const;

  test.each(where)("%s gives the definition's values", async (backend) => {
    const got = (await runOn(backend as never, p, { blocks })).z!;
    expect(got).toEqual(want);
    expect(Math.max(...got.map(Math.abs))).toBeGreaterThan(9.15);
  });

  test("normal() draws one Threefry block a value: normal(key, [n]) is the definition of 2n random words", async () => {
    const draw = program({ key: atServer(i32([2])) }, ({ key }) => ({ z: normal(key, [1001]) }));
    const out = await runOn("onnx", draw, { key: [7, 8] });
    expect(out.z).toEqual(Array.from(normalsFromWords(randomBits(Int32Array.from([7, 8]), 2002))));
  });
});

test("normal_from_bits takes one block a value: words without a last axis of 2 are FT205", () => {
  expect(() => primitiveProgram("normal_from_bits", { words: atServer(i32([4, 3])) })).toThrow(/FT205.*i32\[\.\.\., 2\]/);
});
