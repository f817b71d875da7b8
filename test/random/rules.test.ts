/** Every random-number primitive has a rule in every table that can meet it. */
import { expect, test } from "vitest";
import { primitives } from "../../src/ir/primitives.js";
import { randomPrimitives } from "../../src/ir/random-primitives.js";
import { tfjsRules } from "../../src/lower/tfjs-rules.js";
import { onnxRules } from "../../src/lower/onnx/model.js";
import { batchRules } from "../../src/transform/batch-rules.js";
import { jvpRules } from "../../src/transform/jvp-rules.js";
import { vjpRules } from "../../src/transform/vjp-rules.js";

test("typing, batching, jvp, vjp and both lowerings know the random primitives", () => {
  const names = Object.keys(randomPrimitives);
  expect(names.sort()).toEqual(["client_iota", "normal_from_bits", "random_bits", "threefry2x32", "uniform_from_bits"]);
  for (const name of names) {
    expect(primitives[name], name).toBeDefined();
    for (const [table, rules] of Object.entries({ batchRules, jvpRules, vjpRules })) expect(rules[name], `${table}.${name}`).toBeDefined();
    // client_iota never reaches a lowering: batching turns it into iota(C).
    if (name === "client_iota") continue;
    expect(tfjsRules[name], `tfjs ${name}`).toBeDefined();
    expect(onnxRules[name], `onnx ${name}`).toBeDefined();
  }
});
