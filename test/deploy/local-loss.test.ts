/**
 * localLossEntries: which two accumulator entries give a client its own training loss (the
 * `part` message's `loss`), found from the form's update part, and none for a form whose
 * reported loss is not such a division. The browser test checks the values end to end (each
 * client's loss averages to the round's).
 */
import { expect, test } from "vitest";
import { atClients, atServer, broadcast, f32, map, mul, program, reduceSum } from "../../src/index.js";
import { localLossEntries } from "../../src/deploy/server/local-loss.js";
import { mapReduceForm } from "../../src/transform/mapreduce.js";
import { fedProxProgram } from "../../src/lib/algorithms/fedprox.js";
import { fedSgdProgram } from "../../src/lib/algorithms/fedsgd.js";
import { fedavg } from "../fixtures/mapreduce-programs.js";
import { tiny } from "../lib/helpers.js";

test("FedAvg: the loss mean's sum and count, the accumulator's last two entries", () => {
  const form = mapReduceForm(fedavg.ir);
  // The accumulator: the total weight, the weighted sums of w and b, then the loss mean's count and sum.
  expect(form.workAndAccumulate.outputs).toEqual(["acc0", "acc1", "acc2", "acc3", "acc4"]);
  expect(localLossEntries(form)).toEqual({ sum: "acc4", weight: "acc3" });
});

test("FedProx and FedSGD, the other algorithms `--aggregator secure` serves: the loss mean's two entries", () => {
  for (const round of [fedProxProgram(tiny), fedSgdProgram(tiny)]) {
    const form = mapReduceForm(round.ir);
    const entries = localLossEntries(form);
    expect(entries, round.ir.name).toBeDefined();
    // Scalars both, and two distinct entries of the client part's outputs.
    for (const name of [entries!.sum, entries!.weight]) expect(form.accumulator[form.workAndAccumulate.outputs.indexOf(name)]!.shape).toEqual([]);
    expect(entries!.sum).not.toBe(entries!.weight);
  }
});

test("no entries for a round without a reported loss, or whose loss is not a ratio of two entries", () => {
  const weighted = (w: never, x: never) => reduceSum(map((a, b) => mul(a, b), broadcast(w), x));
  const noLoss = program({ w: atServer(f32([3])), x: atClients(f32([3])) }, ({ w, x }) => ({ total: weighted(w as never, x as never) }));
  expect(localLossEntries(mapReduceForm(noLoss.ir))).toBeUndefined();
  const summed = program({ w: atServer(f32([])), x: atClients(f32([])) }, ({ w, x }) => ({ loss: weighted(w as never, x as never) }));
  expect(localLossEntries(mapReduceForm(summed.ir))).toBeUndefined();
});
