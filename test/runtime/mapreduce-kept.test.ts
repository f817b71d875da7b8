/**
 * MapReduce form with kept client outputs (served clients keep their state): FedPer's heads,
 * Ditto's personal model and SCAFFOLD's controls become outputs of the fused client part,
 * paired with the input they go back to; the update part (what the server computes) has none
 * of them. Without the option they stay FT314. Run client by client, as served clients run it,
 * the form gives each client the head and the server the parameters that the whole program gives.
 */
import * as tf from "@tensorflow/tfjs";
import { describe, expect, test } from "vitest";
import { chunkInputs, runStreamed } from "../../src/runtime/mapreduce.js";
import { runProgram } from "../../src/runtime/run.js";
import { batchInputs, host, separableCohort, tiny } from "../lib/helpers.js";
import { dittoProgram } from "../../src/lib/algorithms/ditto.js";
import { fedPerProgram } from "../../src/lib/algorithms/fedper.js";
import { scaffoldProgram } from "../../src/lib/algorithms/scaffold.js";
import { logistic } from "../../src/lib/models/dense.js";
import { mapReduceForm } from "../../src/transform/mapreduce.js";
import { leafPaths } from "../../src/ir/tree-paths.js";

describe("kept client outputs in MapReduce form", () => {
  const cases = [
    ["fedper", fedPerProgram(logistic).ir, ["heads.b"]],
    ["ditto", dittoProgram(logistic).ir, ["personal.b", "personal.w"]],
    ["scaffold", scaffoldProgram(logistic, { totalClients: 10 }).ir, ["clientControls.b", "clientControls.w"]],
  ] as const;
  for (const [name, ir, state] of cases) {
    test(`${name}: the state leaves the fused client part only, back to its input; the server's update has none`, () => {
      const form = mapReduceForm(ir, { keepClientOutputs: true });
      // Client state (keepOnClients) is kept without the option too: the runner's store keeps it (src/lib/run/client-state.ts).
      expect(mapReduceForm(ir).keptState).toEqual(form.keptState);
      expect(form.keptState.map((k) => k.input).sort()).toEqual([...state]);
      const partOutputs = form.workAndAccumulate.outputs;
      for (const { input, output } of form.keptState) {
        expect(partOutputs).toContain(output);
        expect(form.workAndAccumulate.inputs).toContain(input);
        expect(form.clientInputs).toContain(input);
      }
      const updated = leafPaths(form.parts.update.ir.outputTree);
      expect(updated).toEqual(form.parts.update.outputs);
      expect(updated.some((path) => state.some((s) => path === s))).toBe(false);
      expect(updated).toContain("params.w");
    });
  }

  test("fedper run client by client as served clients run it: each client's kept head and the server's update are the whole program's", async () => {
    const round = fedPerProgram(tiny);
    const sizes = [5, 7, 4];
    const cohort = separableCohort(sizes, 3, 7);
    const heads = { b: { shape: [3, 2], data: Float32Array.of(0.5, -0.5, 1, -1, 0.2, 0.3) } };
    const inputs = { params: { w: host([2, 2], [0.3, -0.2, 0.1, 0.4]), b: host([2], [0.05, -0.05]) }, heads, ...batchInputs(cohort), lr: 0.3 };
    const whole = (await round.run(inputs as never)) as unknown as { params: Record<string, tf.Tensor>; heads: { b: tf.Tensor } };
    const form = mapReduceForm(round.ir, { keepClientOutputs: true });
    const zero = (await runProgram(form.parts.zero.ir, {}, { clients: 1 })) as Record<string, tf.Tensor>;
    const rows = (t: { shape: readonly number[]; data: Float32Array | Int32Array }, i: number) => {
      const size = t.data.length / t.shape[0]!;
      return { shape: [1, ...t.shape.slice(1)], data: t.data.slice(i * size, (i + 1) * size) };
    };
    const kept: number[][] = [];
    // The remote chunks: one client each, its rows of the CLIENTS inputs (its head among them), as tasks.ts sends them.
    const remote = (shared: ReadonlyMap<string, unknown>) =>
      (async function* () {
        for (let i = 0; i < sizes.length; i++) {
          const own = { x: rows(cohort.x, i), y: rows(cohort.y, i), mask: rows(cohort.mask, i), count: rows(cohort.count, i), "heads.b": rows(heads.b, i) };
          const named = new Map<string, unknown>([...shared, ...Object.entries(zero), ...Object.entries(own), ...chunkInputs(form, [i])]);
          const part = form.workAndAccumulate;
          const out = (await runProgram(part.ir, Object.fromEntries(part.inputs.map((name) => [name, named.get(name)])))) as Record<string, tf.Tensor>;
          for (const { output } of form.keptState) kept.push([...(await out[output]!.data())]);
          yield new Map(form.accumulator.map((_, k) => [`acc${k}`, out[`acc${k}`]!]));
        }
      })();
    const served = (await runStreamed(round.ir, { inputs: { ...inputs, heads: undefined }, cohortSize: sizes.length, chunks: [], keptAtClients: true }, {}, true, remote)) as Record<string, unknown>;
    expect(Object.keys(served).sort()).toEqual(Object.keys(whole).filter((k) => k !== "heads").sort());
    const wholeHeads = [...(await whole.heads.b.data())];
    expect(kept.flat().map((v, k) => Math.abs(v - wholeHeads[k]!))).toSatisfy((d: number[]) => d.every((x) => x < 1e-5));
    expect(kept.flat()).not.toEqual([...heads.b.data]);
    for (const name of ["w", "b"]) {
      const [a, b] = [await whole.params[name]!.data(), await (served.params as Record<string, tf.Tensor>)[name]!.data()];
      expect([...a].every((v, k) => Math.abs(v - b[k]!) < 1e-5)).toBe(true);
    }
  });
});
