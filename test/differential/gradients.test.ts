/**
 * Differential tests of gradients: random losses of server parameters (through broadcast,
 * map, the reductions over clients, loops, and per-client grads inside map), differentiated
 * with valueAndGrad or grad inside the program. The optimised path must agree with the
 * reference interpreter on wasm and on onnx (and on webgpu where Dawn finds an adapter), and the reference interpreter's gradients with
 * finite differences.
 */
import fc from "fast-check";
import { expect, test } from "vitest";
import { checkFiniteDifferences } from "./finite-differences.js";
import { checkAgreement, discardingTies, propertySettings } from "./harness.js";
import { gradientProgram } from "./programs.js";
import { gradientRecipe } from "./recipe.js";
import { webgpu } from "../helpers/test-backends.js";
import type { Backend } from "./harness.js";
import { deadline } from "../helpers/deadline.js";

const PROGRAMS = 400;

const gradientsAgree = (backends: readonly Backend[], seed: number, programs: number) => async () => {
  // The bounds below count the programs run: FEDTENSOR_DIFF_RUNS may ask for more than `programs`.
  const settings = propertySettings(seed, programs);
  const runs = settings.numRuns ?? programs;
  let checked = 0;
  let skipped = 0;
  const discards = { count: 0 };
  await fc.assert(
    fc.asyncProperty(gradientRecipe, async (recipe) => {
      const g = gradientProgram(recipe);
      await discardingTies(async () => {
        const count = checkFiniteDifferences(g, await checkAgreement(g, backends));
        checked += count.checked;
        skipped += count.skipped;
      }, discards);
    }),
    settings,
  );
  // Disagreements on near ties (ties.ts) are rare; many would hide a wrong comparison.
  expect(discards.count).toBeLessThan(0.01 * runs + 1);
  // Every program has at least one parameter entry, most several.
  expect(checked).toBeGreaterThan(2 * runs);
  // Kinks within 1e-6 of a parameter are rare: most entries have a derivative to compare.
  expect(skipped).toBeLessThan(0.05 * (checked + skipped));
};

test("gradients agree on wasm, onnx, the reference interpreter and finite differences", gradientsAgree(["wasm", "onnx"], 31337, PROGRAMS), deadline(300_000));

test.skipIf(!webgpu.available)(`gradients agree on webgpu and the reference interpreter (${webgpu.detail})`, gradientsAgree(["webgpu"], 4711, Math.ceil(PROGRAMS / 4)), deadline(300_000));
