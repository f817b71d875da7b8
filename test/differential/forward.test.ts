/**
 * Differential tests of random well-typed forward programs: the optimised path against the
 * reference interpreter, with the memory and reproducibility checks of harness.ts. All run on
 * wasm and onnx; a subset also on cpu, since the lowering picks kernel forms per backend (and
 * switching the active backend back and forth must not disturb any of them).
 */
import fc from "fast-check";
import { expect, test } from "vitest";
import { checkAgreement, discardingTies, propertySettings, type Backend } from "./harness.js";
import { forwardProgram } from "./programs.js";
import { programRecipe } from "./recipe.js";
import { webgpu } from "../helpers/test-backends.js";
import { deadline } from "../helpers/deadline.js";

/** Fewer on webgpu: each new program compiles its shaders, slow on a software adapter. */
const WEBGPU_PROGRAMS = Number(process.env.FEDTENSOR_TEST_WEBGPU_PROGRAMS ?? 150);

const agreeOn = (backends: readonly Backend[], seed: number, programs: number) => async () => {
  // The bound below counts the programs run: FEDTENSOR_DIFF_RUNS may ask for more than `programs`.
  const settings = propertySettings(seed, programs);
  const runs = settings.numRuns ?? programs;
  const discards = { count: 0 };
  await fc.assert(
    fc.asyncProperty(programRecipe, async (recipe) => {
      await discardingTies(() => checkAgreement(forwardProgram(recipe), backends), discards);
    }),
    settings,
  );
  // Disagreements on near ties (ties.ts) are rare; many would hide a wrong comparison.
  expect(discards.count).toBeLessThan(0.01 * runs + 1);
};

test("random federated programs agree on wasm, onnx and the reference interpreter", agreeOn(["wasm", "onnx"], 20240501, 1200), deadline(300_000));

test("random federated programs agree on cpu, wasm, onnx and the reference interpreter", agreeOn(["cpu", "wasm", "onnx"], 7151, 300), deadline(300_000));

test.skipIf(!webgpu.available)(`random federated programs agree on webgpu and the reference interpreter (${webgpu.detail})`, agreeOn(["webgpu"], 9001, WEBGPU_PROGRAMS), deadline(300_000));
