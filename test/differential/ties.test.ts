/**
 * The near-tie audit of ties.ts, which decides whether a disagreement may be discarded: it
 * must find ties that float32 rounding can break either way, and nothing else.
 */
import { expect, test } from "vitest";
import { add, atClients, f32, map, mean, minimum, program, relu, sub } from "../../src/index.js";
import type { GeneratedProgram } from "./programs.js";
import { nearTie } from "./ties.js";

const generated = (p: GeneratedProgram["program"], inputs: GeneratedProgram["inputs"]): GeneratedProgram => ({ program: p, inputs, code: "(see the test)", clients: 2 });

// The seed-99 counterexample in small: a mean of equal values equals each value in float64,
// but may come out one ulp off in float32, so minimum's gradient could go either way.
test("a minimum of values and their mean is a near tie when the values are equal", () => {
  const p = program({ x: atClients(f32([6])) }, ({ x }) => map((v) => minimum(v, mean(v)), x));
  expect(nearTie(generated(p as never, { x: [[0.3, 0.3, 0.3, 0.3, 0.3, 0.3], [1, 2, 3, 4, 5, 6]] }))).toMatch(/^minimum of operands within/);
  expect(nearTie(generated(p as never, { x: [[1, 2, 3, 4, 5, 7], [1, 2, 3, 4, 5, 7]] }))).toBeUndefined();
});

test("relu of a value that cancels to about zero is a near tie; clear values are not", () => {
  const p = program({ x: atClients(f32([2])) }, ({ x }) => map((v) => relu(sub(add(v, 0.1), 0.1)), x));
  expect(nearTie(generated(p as never, { x: [[0, 1], [2, 3]] }))).toMatch(/^relu of a value within/);
  expect(nearTie(generated(p as never, { x: [[-1, 1], [2, 3]] }))).toBeUndefined();
});
