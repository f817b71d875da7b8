/**
 * Classification metrics beyond accuracy: top-k accuracy and the confusion matrix, summed over
 * a model's padded, masked batches (batchEvaluation's, or one client's held-out batches inside
 * map). The sums are kept apart from the ratios so that clients' and chunks' sums add up.
 *
 * Top-k counts an example as a hit when fewer than k classes rank above its label, ranking by
 * logit with ties broken towards the lower class index, as argmax breaks them: so top-1
 * accuracy is accuracy exactly, even for a model whose logits tie (an all-zero model).
 */
import { ftError } from "../../errors/error.js";
import { program, type Program } from "../../front/program.js";
import { CheckedProgram } from "./checked-inputs.js";
import { evaluationInputs } from "./evaluation.js";
import { exampleLosses } from "./local.js";
import { ops, type Value } from "./loose.js";
import type { Presumed, Validate } from "../../../types/errors.js";
import type { Placement, Tensor } from "../../../types/tensor.js";
import type { AnyModel, Batches, EvaluationBatchSpecs, InputDTypeOf, JoinCheck, JoinedOf, ModelParams } from "./types.js";

/**
 * The classification evaluations' options: the k of top-k accuracy (default 5).
 *
 * @example
 * const evaluation = classificationEvaluationProgram(logistic, { topK: 3 } satisfies ClassificationOptions);
 */
export interface ClassificationOptions {
  /** The k of top-k accuracy (default 5, as Keras's TopKCategoricalAccuracy); 1 gives accuracy again. */
  readonly topK?: number;
}

/**
 * Sums over real examples; every one a scalar but the confusion matrix [classes, classes]. At
 * the joined placement P of the parameters and the batches they are computed from.
 */
export interface ClassificationSums<P extends Placement = Placement, Classes extends number = number> {
  readonly examples: Tensor<[], "float32", P>;
  readonly correct: Tensor<[], "float32", P>;
  readonly topKCorrect: Tensor<[], "float32", P>;
  readonly loss: Tensor<[], "float32", P>;
  /** Row: the true label; column: the predicted (argmax) class. */
  readonly confusion: Tensor<[Classes, Classes], "float32", P>;
}

/** The k of top-k, checked against the model's classes (FT305). */
export function topKOf(model: AnyModel, options: ClassificationOptions): number {
  const k = options.topK ?? 5;
  if (!Number.isInteger(k) || k < 1 || k > model.classes) {
    throw ftError("FT305", { option: "topK", why: `expected a whole k in [1, ${model.classes}] (model ${model.name}'s classes), got ${k}` });
  }
  return k;
}

/** 1 where a label is among the k best-ranked classes of its logits [B, classes], else 0 ([B] float32). */
function topKHits(model: AnyModel, logits: Value, y: Value, labels: Value, k: number): Value {
  const labelLogit = ops.sum(ops.mul(logits, labels), 1, true);
  const classIds = ops.constant(Array.from({ length: model.classes }, (_, c) => c), "int32");
  const lowerClass = ops.cast(ops.less(classIds, ops.expandDims(y, 1)), "float32");
  const above = ops.add(ops.cast(ops.greater(logits, labelLogit), "float32"), ops.mul(ops.cast(ops.equal(logits, labelLogit), "float32"), lowerClass));
  return ops.cast(ops.less(ops.sum(above, 1), k), "float32");
}

/**
 * The sums of `params`'s metrics over batches x [S, B, ...], y and mask [S, B], on traced values.
 *
 * @example
 * import { atClients, atServer, broadcast, f32, i32, map, program, reduceSum } from "fedtensor";
 * import { classificationSums, logistic } from "fedtensor/lib";
 * const inputs = { params: atServer(logistic.params), x: atClients(f32(["S", "B", 784])), y: atClients(i32(["S", "B"])), mask: atClients(f32(["S", "B"])) };
 * const pooled = program(inputs, ({ params, x, y, mask }) =>
 *   reduceSum(map((p, xs, ys, ms) => classificationSums(logistic, p, { x: xs, y: ys, mask: ms }, 5).correct, broadcast(params), x, y, mask)),
 * ); // the cohort's correct predictions, summed at the SERVER
 */
export function classificationSums<M extends AnyModel, P extends ModelParams<M>, B extends Batches<M>>(
  model: M,
  params: Validate<P, JoinCheck<"classificationSums", [P, B]>>,
  batches: B,
  k: number,
): Presumed<ClassificationSums<JoinedOf<[P, B]>, M["classes"]>>;
export function classificationSums(model: AnyModel, params: Value, batches: { x: Value; y: Value; mask: Value }, k: number): ClassificationSums {
  const zero = { correct: ops.zeros([]), topKCorrect: ops.zeros([]), loss: ops.zeros([]), confusion: ops.zeros([model.classes, model.classes]) };
  const [sums] = ops.scan(zero, batches, (acc: Value, b: Value) => {
    const logits = model.logits(params, b.x);
    const labels = ops.oneHot(b.y, model.classes);
    const predicted = ops.argmax(logits);
    const hits = ops.cast(ops.equal(predicted, b.y), "float32");
    const maskedLabels = ops.mul(labels, ops.expandDims(b.mask, 1));
    return [
      {
        correct: ops.add(acc.correct, ops.sum(ops.mul(hits, b.mask))),
        topKCorrect: ops.add(acc.topKCorrect, ops.sum(ops.mul(topKHits(model, logits, b.y, labels, k), b.mask))),
        loss: ops.add(acc.loss, ops.sum(ops.mul(exampleLosses(model, logits, b.y), b.mask))),
        confusion: ops.add(acc.confusion, ops.matmul(ops.transpose(maskedLabels), ops.oneHot(predicted, model.classes))),
      },
      undefined,
    ];
  });
  return { examples: ops.sum(batches.mask), ...sums };
}

/** Accuracy, top-k accuracy and mean loss from sums: ratios to the real examples (0 when there are none). */
export function ratiosOf(sums: ClassificationSums): { accuracy: Value; topKAccuracy: Value; loss: Value } {
  const examples = ops.maximum(sums.examples, 1);
  return { accuracy: ops.div(sums.correct, examples), topKAccuracy: ops.div(sums.topKCorrect, examples), loss: ops.div(sums.loss, examples) };
}

/**
 * A classification evaluation's result: accuracy, top-k accuracy, the mean loss and the confusion
 * counts.
 *
 * @example
 * import { classificationEvaluationProgram, logistic, type ClassificationEvaluation } from "fedtensor/lib";
 * const evaluate = classificationEvaluationProgram(logistic);
 * const names: (keyof ClassificationEvaluation<10>)[] = ["accuracy", "topKAccuracy", "loss", "confusion"]; // what evaluate.run resolves to
 */
export interface ClassificationEvaluation<Classes extends number = number> {
  readonly accuracy: Tensor<[], "float32", "local">;
  /** The share of real examples whose label is among the k highest logits. */
  readonly topKAccuracy: Tensor<[], "float32", "local">;
  readonly loss: Tensor<[], "float32", "local">;
  /** Counts of real examples by [true label, predicted class]; it sums to their number. */
  readonly confusion: Tensor<[Classes, Classes], "float32", "local">;
}

/**
 * classificationEvaluationProgram's type: (params, x, y, mask) to a ClassificationEvaluation.
 *
 * @example
 * const evaluation: ClassificationEvaluationProgram<typeof logistic> = classificationEvaluationProgram(logistic, { topK: 3 });
 */
export type ClassificationEvaluationProgram<M extends AnyModel> = Program<
  { readonly params: M["params"] } & EvaluationBatchSpecs<M["inputShape"], InputDTypeOf<M>>,
  ClassificationEvaluation<M["classes"]>
>;

/**
 * Central evaluation with top-k accuracy and the confusion matrix: (params, x, y, mask), all local.
 *
 * @example
 * import { batchEvaluation, classificationEvaluationProgram, loadMnist, mlp2nn, Rng } from "fedtensor/lib";
 * const evaluate = classificationEvaluationProgram(mlp2nn, { topK: 3 });
 * const test = batchEvaluation(loadMnist("test"), 1000);
 * const flat = { ...test.x, shape: [10, 1000, 784] };
 * const { accuracy, topKAccuracy, confusion } = await evaluate.run({ params: mlp2nn.init(Rng.fromSeed(0)), ...test, x: flat });
 * console.log(await accuracy.data(), await topKAccuracy.data()); // about 0.1 and 0.3 before training
 */
export function classificationEvaluationProgram<M extends AnyModel>(model: M, options: ClassificationOptions = {}): ClassificationEvaluationProgram<M> {
  const k = topKOf(model, options);
  const traced = program(
    evaluationInputs(model) as never,
    ({ params, x, y, mask }: Value) => {
      const sums = classificationSums(model, params, { x, y, mask }, k);
      return { ...ratiosOf(sums), confusion: sums.confusion };
    },
    { name: `evaluate_top${k}_${model.name}` },
  );
  return new CheckedProgram(traced, model) as never;
}
