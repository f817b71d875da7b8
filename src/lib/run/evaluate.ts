/**
 * Centralised evaluation, as the FedAvg paper reports it: the server model's accuracy and
 * mean loss on the held-out set, in padded, masked batches (a scan, so memory stays that of
 * one batch however large the set).
 */
import { constant } from "../../front/constants.js";
import { program, type Program } from "../../front/program.js";
import { f32, i32 } from "../../front/specs.js";
import type { Tensor, TensorSpec } from "../../../types/tensor.js";
import { ops, type Value } from "../algorithms/loose.js";
import type { AnyModel } from "../algorithms/types.js";

export type EvaluationProgram<M extends AnyModel> = Program<
  {
    readonly params: M["params"];
    readonly x: TensorSpec<["E", "B", ...M["inputShape"]], "float32", "local">;
    readonly y: TensorSpec<["E", "B"], "int32", "local">;
    readonly mask: TensorSpec<["E", "B"], "float32", "local">;
  },
  { accuracy: Tensor<[], "float32", "local">; loss: Tensor<[], "float32", "local"> }
>;

export function evaluationProgram<M extends AnyModel>(model: M): EvaluationProgram<M> {
  const inputs = { params: model.params, x: f32(["E", "B", ...model.inputShape]), y: i32(["E", "B"]), mask: f32(["E", "B"]) };
  return program(
    inputs as never,
    ({ params, x, y, mask }: Value) => {
      const zero = constant(0);
      const [totals] = ops.scan([zero, zero, zero], { x, y, mask }, ([correct, loss, count]: Value[], batch: Value) => {
        const logits = model.logits(params, batch.x);
        const hits = ops.cast(ops.equal(ops.argmax(logits), batch.y), "float32");
        const perExample = ops.softmaxCrossEntropy(logits, ops.oneHot(batch.y, model.classes));
        return [
          [
            ops.add(correct, ops.sum(ops.mul(hits, batch.mask))),
            ops.add(loss, ops.sum(ops.mul(perExample, batch.mask))),
            ops.add(count, ops.sum(batch.mask)),
          ],
          undefined,
        ];
      });
      const [correct, loss, count] = totals as Value[];
      const examples = ops.maximum(count, 1);
      return { accuracy: ops.div(correct, examples), loss: ops.div(loss, examples) };
    },
    { name: `evaluate_${model.name}` },
  ) as never;
}
