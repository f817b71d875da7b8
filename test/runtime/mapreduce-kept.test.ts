/**
 * MapReduce form with kept client outputs (served clients keep their state): FedPer's heads,
 * Ditto's personal model and SCAFFOLD's controls become outputs of the fused client part,
 * paired with the input they go back to; the update part (what the server computes) has none
 * of them. Without the option they stay FT314.
 */
import { describe, expect, test } from "vitest";
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
      expect(() => mapReduceForm(ir)).toThrow(/FT314/);
      const form = mapReduceForm(ir, { keepClientOutputs: true });
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
});
