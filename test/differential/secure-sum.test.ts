/**
 * secureSum across backends on generated cohorts: random sizes, member shapes, moduli, ranges,
 * mask graphs and dtypes. Every backend gives the reference interpreter's sum bit for bit
 * (masked modular sums have no rounding to disagree on), twice, leaking no tensor, and the
 * integer sum is the plain one.
 */
import * as tf from "@tensorflow/tfjs";
import fc from "fast-check";
import { expect, test } from "vitest";
import { atClients, atServer, f32, i32, interpret, program, reduceSum, secureSum, split } from "../../src/index.js";
import { webgpu } from "../helpers/test-backends.js";
import { propertySettings, type Backend } from "./harness.js";
import type { GeneratedProgram } from "./programs.js";
import { deadline } from "../helpers/deadline.js";
import { tensorsLeftSince } from "../helpers/tensor-leaks.js";

interface Case {
  readonly clients: number;
  readonly size: number;
  readonly bits: number;
  readonly neighbours: number | undefined;
  readonly low: number;
  readonly width: number;
  readonly scale: number;
  readonly seed: number;
}

const cases = fc.record({
  clients: fc.integer({ min: 2, max: 9 }), // secureSum refuses one client (FT112)
  size: fc.integer({ min: 1, max: 12 }),
  bits: fc.integer({ min: 16, max: 30 }),
  neighbours: fc.option(fc.constantFrom(2, 4), { nil: undefined }),
  low: fc.integer({ min: -50, max: 10 }),
  width: fc.integer({ min: 0, max: 100 }),
  scale: fc.constantFrom(1, 10, 100, 1000),
  seed: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
});

/** The program and its data: a float32 and an int32 secure sum of the same cohort, and the plain int32 sum. */
function generated(c: Case): GeneratedProgram {
  const range = [c.low, c.low + c.width] as const;
  const common = { bits: c.bits, ...(c.neighbours === undefined ? {} : { neighbours: c.neighbours }) };
  const p = program({ key: atServer(i32([2])), x: atClients(f32([c.size])), n: atClients(i32([c.size])) }, ({ key, x, n }) => {
    // One key per release (FT111).
    const [floatKey, intKey] = split(key);
    return { floats: secureSum(x, { ...common, key: floatKey, range, scale: c.scale }), ints: secureSum(n, { ...common, key: intKey, range }), plain: reduceSum(n) };
  });
  let s = c.seed;
  const next = () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32);
  const member = (f: () => number) => Array.from({ length: c.clients }, () => Array.from({ length: c.size }, f));
  const inputs = {
    key: [c.seed, c.seed ^ 0x5bd1e995],
    x: member(() => Math.fround(c.low + next() * c.width)),
    n: member(() => c.low + Math.floor(next() * (c.width + 1))),
  };
  return { program: p as never, inputs, code: `secureSum over ${JSON.stringify(c)}`, clients: c.clients };
}

/** Whether the case's sums fit its modulus (the others are FT311, tested in test/secure). */
const fits = (c: Case) => c.clients * Math.round(c.width * c.scale) < 2 ** c.bits && c.clients * c.width < 2 ** c.bits;

/** A run's outputs as plain arrays, the tensors disposed. */
async function outputsOn(g: GeneratedProgram, backend: Backend): Promise<Record<string, number[]>> {
  const out = (await g.program.run(g.inputs as never, { backend, clients: g.clients })) as Record<string, tf.Tensor>;
  const host: Record<string, number[]> = {};
  for (const [name, t] of Object.entries(out)) host[name] = Array.from(await t.data());
  tf.dispose(Object.values(out));
  return host;
}

const agreeOn = (backends: readonly Backend[], seed: number, runs: number) => async () => {
  await fc.assert(
    fc.asyncProperty(cases, async (c) => {
      fc.pre(fits(c));
      const g = generated(c);
      const reference = Object.fromEntries(
        Object.entries(interpret(g.program.ir, g.inputs, { clients: g.clients }) as Record<string, { data: Float64Array }>).map(([k, v]) => [k, Array.from(v.data)]),
      );
      expect(reference.ints).toEqual(reference.plain);
      try {
        for (const backend of backends) {
          const tensors = tf.memory().numTensors;
          expect(await outputsOn(g, backend), backend).toEqual(reference);
          expect(await outputsOn(g, backend), `${backend}, second run`).toEqual(reference);
          expect(tensorsLeftSince(tensors), `${backend} leaks no tensor`).toBe(0);
        }
      } finally {
        await g.program.dispose();
      }
    }),
    propertySettings(seed, runs),
  );
};

test("secure sums of generated cohorts are bit-identical on onnx, wasm, cpu and the reference interpreter", agreeOn(["onnx", "wasm", "cpu"], 4242, 25), deadline(300_000));
test.skipIf(!webgpu.available)(`secure sums agree on webgpu (${webgpu.detail})`, agreeOn(["webgpu"], 4243, 5), deadline(300_000));
