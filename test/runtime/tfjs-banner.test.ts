/**
 * TensorFlow.js prints "Hi, looks like you are running TensorFlow.js in Node.js ... install our
 * node backend" on its first tensor in Node; FedTensor turns it off through tfjs-core's PROD
 * flag (src/runtime/backend.ts). Both runs are fresh Node processes, as a user's are.
 */
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const repoRoot = join(import.meta.dirname, "../..");
const banner = "Hi, looks like you are running TensorFlow.js in Node.js";

/** What an ES module script run from the repository root prints, stdout and stderr together. */
function output(script: string): string {
  const run = spawnSync(process.execPath, ["--input-type=module", "-e", script], { cwd: repoRoot, encoding: "utf8" });
  expect(run.status, run.stderr).toBe(0);
  return run.stdout + run.stderr;
}

describe("TensorFlow.js's Node banner", () => {
  it("is printed by plain tfjs, so the check below can see it", () => {
    expect(output(`import * as tf from "@tensorflow/tfjs"; tf.tensor([1, 2]).print();`)).toContain(banner);
  });

  it("is not printed by a FedTensor program, on the cpu and the default backend", () => {
    for (const backend of ["cpu", "onnx"]) {
      const printed = output(`
        import * as tf from "@tensorflow/tfjs";
        import { add, f32, program } from "./dist/src/index.js";
        const double = program({ x: f32([2]) }, ({ x }) => add(x, x));
        const out = await double.run({ x: tf.tensor([1, 2]) }, { backend: "${backend}" });
        console.log("result", Array.from(await out.data()));
      `);
      expect(printed).toContain("result [ 2, 4 ]");
      expect(printed).not.toContain(banner);
    }
  });
});
