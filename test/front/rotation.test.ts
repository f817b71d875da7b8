/**
 * The randomized Hadamard rotation (src/front/rotation.ts): each basis vector goes to a
 * column of the Sylvester-Hadamard matrix (computed here independently, H[i][j] =
 * (-1)^popcount(i & j)) times a random sign over sqrt(d); norms and inner products are kept;
 * the inverse gives x back to float tolerance; keys give different rotations; gradients flow;
 * a key shared by every client is allowed; and the backends agree with the reference.
 */
import { expect, test } from "vitest";
import * as ft from "../../src/index.js";
import { interpret } from "../../src/interpret/reference.js";
import { checkAgreement } from "../differential/harness.js";

const { atClients, atServer, broadcast, f32, i32, map, program, randomHadamard, inverseRandomHadamard, reduceSum } = ft;

const data = (out: unknown): number[] => Array.from((out as { data: Float64Array }).data);
const popcount = (v: number): number => v.toString(2).split("").filter((c) => c === "1").length;

test("R e_j is column j of the Hadamard matrix times a random sign, over sqrt(d)", () => {
  // x = the 6 x 6 identity's first 5 rows flattened is not a basis; rotate each basis vector of R^5 (d = 8).
  const p = program({ x: atServer(f32([5])), key: atServer(i32([2])) }, ({ x, key }) => randomHadamard(x, key));
  const d = 8;
  const signs: number[] = [];
  for (let j = 0; j < 5; j++) {
    const e = Array.from({ length: 5 }, (_, i) => (i === j ? 1 : 0));
    const y = data(interpret(p.ir, { x: e, key: [0, 3] }));
    expect(y).toHaveLength(d);
    const sign = Math.sign(y[0]!);
    for (let i = 0; i < d; i++) expect(y[i]!).toBeCloseTo((sign * (-1) ** popcount(i & j)) / Math.sqrt(d), 6);
    signs.push(sign);
  }
  // The signs are random: 5 equal signs from a fair coin would happen with probability 1/16.
  expect(new Set(signs).size).toBe(2);
});

test("the rotation keeps norms and inner products; the inverse gives x back; other keys rotate otherwise", () => {
  const shape = [3, 7] as const;
  const p = program({ x: atServer(f32([3, 7])), z: atServer(f32([3, 7])), key: atServer(i32([2])), other: atServer(i32([2])) }, ({ x, z, key, other }) => {
    const y = randomHadamard(x, key);
    return { y, w: randomHadamard(z, key), yOther: randomHadamard(x, other), back: inverseRandomHadamard(y, key, shape), full: inverseRandomHadamard(y, key) };
  });
  const x = Array.from({ length: 21 }, (_, i) => Math.sin(1.7 * i + 0.3) * (i % 5));
  const z = Array.from({ length: 21 }, (_, i) => Math.cos(0.9 * i) - 0.2);
  const rows = (v: number[]) => [0, 1, 2].map((r) => v.slice(7 * r, 7 * r + 7));
  const out = interpret(p.ir, { x: rows(x), z: rows(z), key: [1, 2], other: [1, 3] }) as Record<string, { data: Float64Array; shape: number[] }>;
  const dot = (a: ArrayLike<number>, b: ArrayLike<number>) => Array.from(a).reduce((s, v, i) => s + v * (b[i] ?? 0), 0);
  expect(out.y!.shape).toEqual([32]);
  expect(dot(out.y!.data, out.y!.data)).toBeCloseTo(dot(x, x), 4);
  expect(dot(out.y!.data, out.w!.data)).toBeCloseTo(dot(x, z), 4);
  expect(out.back!.shape).toEqual([3, 7]);
  data(out.back).forEach((v, i) => expect(v).toBeCloseTo(x[i]!, 5));
  // Without the shape: all 32 entries, the padding zeros back as zeros.
  data(out.full).forEach((v, i) => expect(v).toBeCloseTo(x[i] ?? 0, 5));
  const differing = data(out.y).filter((v, i) => Math.abs(v - out.yOther!.data[i]!) > 1e-3).length;
  expect(differing).toBeGreaterThan(8);
});

test("gradients: the rotation is linear, so d/dx <R x, c> = R^T c = R^-1 c", () => {
  const p = program({ x: atServer(f32([6])), c: atServer(f32([8])), key: atServer(i32([2])) }, ({ x, c, key }) => {
    const g = ft.grad((v: typeof x) => ft.sum(ft.mul(randomHadamard(v, key), c)))(x);
    return { g, expected: inverseRandomHadamard(c, key, [6]) };
  });
  const out = interpret(p.ir, { x: [1, 2, 3, 4, 5, 6], c: [0.5, -1, 2, 0, 3, 1, -2, 0.25], key: [9, 9] }) as Record<string, { data: Float64Array }>;
  data(out.g).forEach((v, i) => expect(v).toBeCloseTo(out.expected!.data[i]!, 5));
});

test("clients rotate with a shared key and the server inverts their sum; the backends agree", async () => {
  const p = program({ x: atClients(f32([2, 3])), key: atServer(i32([2])) }, ({ x, key }) => {
    const rotated = map((v, k) => randomHadamard(v, k), x, broadcast(key));
    return inverseRandomHadamard(reduceSum(rotated), key, [2, 3]);
  });
  const rows = [
    [1, 2, 3, 4, 5, 6],
    [-1, 0.5, 0, 2, 0, 1],
    [0.25, 0.25, -3, 1, 1, 1],
  ];
  const out = (await checkAgreement({ program: p, code: "rotation", inputs: { x: rows.map((r) => [r.slice(0, 3), r.slice(3)]), key: [4, 5] }, clients: 3 }, ["cpu", "wasm", "onnx"])) as unknown as { data: Float64Array };
  const sum = rows[0]!.map((_, i) => rows.reduce((s, r) => s + r[i]!, 0));
  Array.from(out.data).forEach((v, i) => expect(v).toBeCloseTo(sum[i]!, 5));
});

test("bad operands are refused with their FT codes", () => {
  expect(() => program({ x: atServer(i32([4])), key: atServer(i32([2])) }, ({ x, key }) => randomHadamard(x as never, key))).toThrow("FT205");
  expect(() => program({ x: atServer(f32([4])), key: atServer(f32([2])) }, ({ x, key }) => randomHadamard(x, key as never))).toThrow("FT316");
  expect(() => program({ y: atServer(f32([6])), key: atServer(i32([2])) }, ({ y, key }) => inverseRandomHadamard(y, key))).toThrow("power-of-two length");
  expect(() => program({ y: atServer(f32([4])), key: atServer(i32([2])) }, ({ y, key }) => inverseRandomHadamard(y, key, [5]))).toThrow("more than the 4 rotated ones");
});
