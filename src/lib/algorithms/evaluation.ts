/**
 * Centralised evaluation: accuracy and mean loss of a model's parameters on a padded, masked
 * test set (batchEvaluation's batches). Everything is local: no placement, no clients.
 */
import { program, type Program } from "../../front/program.js";
import { f32, i32 } from "../../front/specs.js";
import type { Tensor } from "../../../types/tensor.js";
import { CheckedProgram } from "./checked-inputs.js";
import { exampleLosses, featureSpec } from "./local.js";
import { ops, type Value } from "./loose.js";
import type { Presumed, Validate } from "../../../types/errors.js";
import type { AnyModel, Batches, EvaluationBatchSpecs, InputDTypeOf, JoinCheck, ModelParams, ScalarFrom } from "./types.js";

/**
 * An evaluation's result: the accuracy and the mean cross-entropy over the real examples.
 *
 * @example
 * import { evaluationProgram, logistic, type Evaluation } from "fedtensor/lib";
 * const evaluate = evaluationProgram(logistic);
 * const names: (keyof Evaluation)[] = ["accuracy", "loss"]; // what evaluate.run resolves to
 */
export interface Evaluation<S extends "local" | "server" = "local"> {
  /** The share of real examples whose highest logit is their label. */
  accuracy: Tensor<[], "float32", S>;
  /** Mean cross-entropy over the real examples. */
  loss: Tensor<[], "float32", S>;
}

/**
 * The evaluation program's type: (params, x, y, mask) to (accuracy, loss).
 *
 * @example
 * const evaluation: EvaluationProgram<typeof logistic> = evaluationProgram(logistic);
 */
export type EvaluationProgram<M extends AnyModel> = Program<
  { readonly params: M["params"] } & EvaluationBatchSpecs<M["inputShape"], InputDTypeOf<M>>,
  Evaluation
>;

/**
 * Accuracy and mean loss of `params` over batches x [S, B, ...], y and mask [S, B], on traced
 * values, at the joined placement of the parameters and the batches (private data gives
 * private metrics).
 */
export function evaluate<M extends AnyModel, P extends ModelParams<M>, B extends Batches<M>>(
  model: M,
  params: Validate<P, JoinCheck<"evaluate", [P, B]>>,
  batches: B,
): Presumed<{ accuracy: ScalarFrom<[P, B]>; loss: ScalarFrom<[P, B]> }>;
export function evaluate(model: AnyModel, params: Value, batches: { x: Value; y: Value; mask: Value }): { accuracy: Value; loss: Value } {
  const zero = () => ops.zeros([]);
  const [sums] = ops.scan({ correct: zero(), loss: zero() }, batches, (acc: Value, b: Value) => {
    const logits = model.logits(params, b.x);
    const hits = ops.cast(ops.equal(ops.argmax(logits), b.y), "float32");
    return [
      {
        correct: ops.add(acc.correct, ops.sum(ops.mul(hits, b.mask))),
        loss: ops.add(acc.loss, ops.sum(ops.mul(exampleLosses(model, logits, b.y), b.mask))),
      },
      undefined,
    ];
  });
  const examples = ops.maximum(ops.sum(batches.mask), 1);
  return { accuracy: ops.div(sums.correct, examples), loss: ops.div(sums.loss, examples) };
}

/** The inputs of a central evaluation: params, x, y and mask, all local. */
export function evaluationInputs(model: AnyModel) {
  return { params: model.params, x: featureSpec(model), y: i32(["S", "B"]), mask: f32(["S", "B"]) };
}

/** The evaluation as a program: (params, x, y, mask) -> (accuracy, loss), all local. */
export function evaluationProgram<M extends AnyModel>(model: M): EvaluationProgram<M> {
  const traced = program(
    evaluationInputs(model) as never,
    ({ params, x, y, mask }: Value) => evaluate(model, params, { x, y, mask }),
    { name: `evaluate_${model.name}` },
  );
  return new CheckedProgram(traced, model) as never;
}
