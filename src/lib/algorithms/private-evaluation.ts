/**
 * Federated and personalization evaluation on private data: each client's held-out accuracy
 * is computed on the client and stays there; what reaches the SERVER is a DP histogram of the
 * accuracies (`bins` equal bins of [0, 1]), released by dpSum: each client contributes the
 * one-hot vector of its accuracy's bin (zero for a client holding nothing out), L2 norm at most
 * 1, and the server adds N(0, z^2) to each bin. One client changes the histogram by at most 1
 * in L2 norm, so a release is the Gaussian mechanism of noise multiplier z, which the run's
 * accountant composes with the training rounds (src/lib/run/privacy.ts).
 *
 * Personalization releases the histograms before and after fine-tuning as one tree of norm
 * sqrt 2 per client, clipped to sqrt 2 and noised as one release of multiplier z.
 *
 * The client data inputs are private (docs/language.md "Privacy"): tracing proves that no
 * per-client value leaves except through the release.
 */
import { program } from "../../front/program.js";
import { dpSum } from "../../front/privacy.js";
import { foldIn } from "../../front/random.js";
import { atClients, atServer, f32, i32 } from "../../front/specs.js";
import { CheckedProgram } from "./checked-inputs.js";
import { classificationSums, ratiosOf } from "./classification.js";
import { clientBatchSpecs, featureSpec, localTrain, plainSgd, serverParamSpecs, type ClientTrainingOptions } from "./local.js";
import { ops, type Value } from "./loose.js";
import type { AnyModel } from "./types.js";

/** The bins of the released accuracy histograms: [0, 0.1), [0.1, 0.2), ..., [0.9, 1]. */
export const accuracyBins = 10;

const release = dpSum as unknown as (x: Value, options: Value) => Value;

function privateHeldOutSpecs(model: AnyModel) {
  const own = { private: true } as const;
  return { x: atClients(featureSpec(model, "T"), own), y: atClients(i32(["T", "B"]), own), mask: atClients(f32(["T", "B"]), own) };
}

/**
 * The inputs of the release: its secret SERVER key, its noise multiplier, and the part of the
 * evaluated clients this run covers (the key is folded with it: every part of one evaluation
 * draws its own noise, and a client is in one part only, so the parts' sum is as private as one release).
 */
const releaseSpecs = () => ({ key: atServer(i32([2])), noiseMultiplier: f32([]), part: i32([]) });
const partKey = foldIn as unknown as (key: Value, part: Value) => Value;

/** One client's bin vector: the one-hot of its accuracy's bin, zero when it holds no example out. */
function binOf(model: AnyModel, params: Value, batches: { x: Value; y: Value; mask: Value }): Value {
  const sums = classificationSums(model, params, batches, 1);
  const { accuracy } = ratiosOf(sums);
  const bin = ops.minimum(ops.floor(ops.mul(accuracy, accuracyBins)), accuracyBins - 1);
  const holds = ops.cast(ops.greater(sums.examples, 0), "float32");
  return ops.mul(ops.oneHot(ops.cast(bin, "int32"), accuracyBins), holds);
}

/** (params@SERVER, private held-out batches, key, noiseMultiplier) -> { histogram: the DP histogram of the clients' accuracies }. */
export function privateEvaluationProgram(model: AnyModel): CheckedProgram<unknown, unknown> {
  const traced = program(
    { params: serverParamSpecs(model), ...privateHeldOutSpecs(model), ...releaseSpecs() } as never,
    ({ params, x, y, mask, key, noiseMultiplier, part }: Value) => {
      const bins = ops.map((w: Value, cx: Value, cy: Value, cm: Value) => binOf(model, w, { x: cx, y: cy, mask: cm }), ops.broadcast(params), x, y, mask);
      return { histogram: release(bins, { clip: 1, noiseMultiplier, key: partKey(key, part) }) };
    },
    { name: `private_evaluate_${model.name}` },
  );
  return new CheckedProgram(traced, model);
}

/**
 * (params@SERVER, lr, private training and held-out batches, key, noiseMultiplier) -> the DP
 * histograms of the clients' held-out accuracies before and after each fine-tunes the model
 * over its training batches (the clients' optimiser, its state fresh), in one release.
 */
export function privatePersonalizationProgram(model: AnyModel, options: ClientTrainingOptions = {}): CheckedProgram<unknown, unknown> {
  const optimizer = options.clientOptimizer ?? plainSgd;
  const batches = clientBatchSpecs(model, { private: true });
  const traced = program(
    { params: serverParamSpecs(model), lr: f32([]), trainX: batches.x, trainY: batches.y, trainMask: batches.mask, ...privateHeldOutSpecs(model), ...releaseSpecs() } as never,
    ({ params, lr, trainX, trainY, trainMask, x, y, mask, key, noiseMultiplier, part }: Value) => {
      const bins = ops.map(
        (w: Value, tx: Value, ty: Value, tm: Value, hx: Value, hy: Value, hm: Value) => {
          const heldOut = { x: hx, y: hy, mask: hm };
          const tuned = localTrain(model, w, { x: tx, y: ty, mask: tm }, optimizer, lr);
          return { before: binOf(model, w, heldOut), after: binOf(model, tuned.params, heldOut) };
        },
        ops.broadcast(params),
        trainX,
        trainY,
        trainMask,
        x,
        y,
        mask,
      );
      return release(bins, { clip: Math.SQRT2, noiseMultiplier, key: partKey(key, part) });
    },
    { name: `private_personalize_${model.name}` },
  );
  return new CheckedProgram(traced, model);
}
