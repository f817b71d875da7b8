import { test, expect } from "vitest";
import { fedAvgProgram } from "../../src/lib/algorithms/fedavg.js";
import { mapReduceForm } from "../../src/transform/mapreduce.js";
import { signatureOf } from "../../src/front/program.js";
import { runStreamed } from "../../src/runtime/mapreduce.js";
import { batchInputs, host, read, separableCohort, tiny } from "../lib/helpers.js";

test("smoke", async () => {
  const p = fedAvgProgram(tiny);
  const form = mapReduceForm(p.ir);
  for (const [n, part] of Object.entries(form.parts)) console.log(n, signatureOf(part.ir));
  const cohort = separableCohort([12, 7, 4], 4);
  const params = { w: host([2, 2], [0.3, -0.2, 0.1, 0.4]), b: host([2], [0.05, -0.05]) };
  const inputs = { params, ...batchInputs(cohort), lr: 0.3 };
  const whole = await read(await p.run(inputs, { backend: "cpu" }));
  const streamed = await read(await runStreamed(p.ir, { inputs, cohortSize: 3, chunks: [inputs] }, { backend: "cpu" }) as never);
  console.log(whole, streamed);
});
