/**
 * Differential tests of random well-typed forward programs: the optimised path against the
 * reference interpreter, with the memory and reproducibility checks of harness.ts. Most run on
 * wasm; a subset also on cpu and onnx, since the lowering picks kernel forms per backend (and
 * switching the active backend back and forth must not disturb any of them).
 */
import fc from "fast-check";
import { test } from "vitest";
import { checkAgreement, propertySettings, type Backend } from "./harness.js";
import { forwardProgram } from "./programs.js";
import { programRecipe } from "./recipe.js";

const agreeOn = (backends: readonly Backend[], seed: number, programs: number) => async () => {
  await fc.assert(
    fc.asyncProperty(programRecipe, async (recipe) => {
      await checkAgreement(forwardProgram(recipe), backends);
    }),
    propertySettings(seed, programs),
  );
};

test("random federated programs agree on wasm and the reference interpreter", agreeOn(["wasm"], 20240501, 1200), 300_000);

test("random federated programs agree on cpu, wasm, onnx and the reference interpreter", agreeOn(["cpu", "wasm", "onnx"], 7151, 300), 300_000);
