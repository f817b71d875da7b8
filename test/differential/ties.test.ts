/**
 * The near-tie audit of ties.ts, which decides whether a disagreement may be discarded: it
 * must find ties that float32 rounding can break either way, and nothing else.
 */
import { expect, test } from "vitest";
import { add, atClients, f32, map, mean, minimum, program, relu, sub } from "../../src/index.js";
import { checkFiniteDifferences } from "./finite-differences.js";
import { checkAgreement, TieSensitive } from "./harness.js";
import { gradientProgram, type GeneratedProgram } from "./programs.js";
import type { GradientRecipe } from "./recipe.js";
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

// Seed 504's counterexample: maximum(logSoftmax([v]), v * v) ties at v = 0 inside a gradient
// the loss takes, so AD follows the tie-break's side while the loss around 0 follows the
// other (finite difference 65, AD 17). The finite-difference check must call it tie-sensitive.
test("a gradient that finite differences contradict at an exact tie is tie-sensitive, not a failure", async () => {
  const recipe = {
    clients: 1,
    server: [[]],
    clientData: [[]],
    steps: [
      {
        op: "map", a: 0, b: 0, k: 0,
        body: [
          { op: "logSoftmax", a: 0, b: 0, k: 0, body: [] },
          { op: "valueAndGrad", a: 2, b: 0, k: 0, body: [{ op: "mul", a: 0, b: 0, k: 0, body: [] }, { op: "maximum", a: 6040, b: 0, k: 0, body: [] }, { op: "add", a: 0, b: 0, k: 0, body: [] }] },
          { op: "add", a: 0, b: 0, k: 0, body: [] },
        ],
      },
      { op: "map", a: 0, b: 0, k: 0, body: [{ op: "add", a: 0, b: 0, k: 0, body: [] }] },
    ],
    dataSeed: 2147479549,
    withValue: false,
  };
  const g = gradientProgram(recipe as GradientRecipe);
  const reference = await checkAgreement(g, ["wasm"]);
  expect(() => checkFiniteDifferences(g, reference)).toThrow(TieSensitive);
});
