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
 * With `mechanism: "secure"` (a run whose chain is secure without dp) the histograms are exact
 * counts through secureSum instead: the server learns the sum only, with no noise and no
 * epsilon, as the run's updates are.
 *
 * With a distributed-dp mechanism (a run whose chain has distributed-dp) they go through
 * distributedDpSum as the run's updates do: each client clips its bin vector to its norm (1, or
 * sqrt 2), rotates, rounds and adds its own discrete Gaussian noise from its own key, and the
 * server learns only the noised sum mod 2^bits, never an exact count. The options are fixed
 * when the program is traced; the run's distributed-DP accountant prices each release from the
 * same calibration (src/lib/run/distributed-dp-run.ts evaluationCalibration).
 *
 * The client data inputs are private (docs/language.md "Privacy"): tracing proves that no
 * per-client value leaves except through the release.
 */
import { program } from "../../front/program.js";
import { distributedDpSum, type DistributedDpSumOptions } from "../../front/distributed-dp.js";
import { dpSum } from "../../front/privacy.js";
import { foldIn } from "../../front/random.js";
import { secureSum } from "../../front/secure.js";
import { isTracer } from "../../front/trace.js";
import { atClients, atServer, f32, i32 } from "../../front/specs.js";
import { CheckedProgram } from "./checked-inputs.js";
import { classificationSums, ratiosOf } from "./classification.js";
import { clientBatchSpecs, featureSpec, localTrain, plainSgd, serverParamSpecs, type ClientTrainingOptions } from "./local.js";
import { ops, type Value } from "./loose.js";
import type { AnyModel } from "./types.js";

/** The bins of the released accuracy histograms: [0, 0.1), [0.1, 0.2), ..., [0.9, 1]. */
export const accuracyBins = 10;

/** How the histograms leave the clients: dpSum (noised, priced in epsilon), secureSum (exact counts, masked) or distributedDpSum (noised by each client, priced in epsilon). */
export type HistogramMechanism = "dp" | "secure" | DistributedDpHistograms;

/** The distributed-dp mechanism: distributedDpSum with these options, the clip each release's norm. */
export interface DistributedDpHistograms {
  readonly kind: "distributed-dp";
  readonly options: Pick<DistributedDpSumOptions<unknown, unknown>, "noiseMultiplier" | "bits" | "minClients" | "maxClients">;
}

const partKey = foldIn as unknown as (key: Value, part: Value) => Value;
const noised = dpSum as unknown as (x: Value, options: Value) => Value;
const masked = secureSum as unknown as (x: Value, options: Value) => Value;
const clientNoised = distributedDpSum as unknown as (x: Value, options: Value) => Value;

/** The mechanism as program names say it. */
const mechanismName = (mechanism: HistogramMechanism): string => (typeof mechanism === "string" ? mechanism : "distributed_dp");

/** The release of the clients' bin vectors (`norm`: their largest L2 norm) under the mechanism. */
function release(mechanism: HistogramMechanism, bins: Value, norm: number, inputs: Value): Value {
  const key = partKey(inputs.key, inputs.part);
  if (mechanism === "dp") return noised(bins, { clip: norm, noiseMultiplier: inputs.noiseMultiplier, key });
  if (typeof mechanism === "object") return clientNoised(bins, { ...mechanism.options, clip: norm, rotationKey: key, clientKeys: inputs.clientKeys });
  const counts = ops.map((b: Value) => castLeaves(b, "int32"), bins);
  return castLeaves(masked(counts, { bits: 24, key, range: [0, 1] }), "float32");
}

/** A tensor, or a record of them (personalization's before and after), cast leaf by leaf. */
const castLeaves = (x: Value, dtype: "int32" | "float32"): Value =>
  isTracer(x) ? ops.cast(x, dtype) : Object.fromEntries(Object.entries(x as Record<string, Value>).map(([name, leaf]) => [name, ops.cast(leaf, dtype)]));

function privateHeldOutSpecs(model: AnyModel) {
  const own = { private: true } as const;
  return { x: atClients(featureSpec(model, "T"), own), y: atClients(i32(["T", "B"]), own), mask: atClients(f32(["T", "B"]), own) };
}

/**
 * The inputs of the release: its secret SERVER key, its noise multiplier under dp, each client's
 * own key under distributed DP, and the part of the evaluated clients this run covers (the key
 * is folded with it: every part of one evaluation draws its own noise, or rotation, and a client
 * is in one part only, so the parts' sum is as private as one release).
 */
const releaseSpecs = (mechanism: HistogramMechanism) => ({
  key: atServer(i32([2])),
  part: i32([]),
  ...(mechanism === "dp" ? { noiseMultiplier: f32([]) } : {}),
  ...(typeof mechanism === "object" ? { clientKeys: atClients(i32([2]), { private: true }) } : {}),
});


/** One client's bin vector: the one-hot of its accuracy's bin, zero when it holds no example out. */
function binOf(model: AnyModel, params: Value, batches: { x: Value; y: Value; mask: Value }): Value {
  const sums = classificationSums(model, params, batches, 1);
  const { accuracy } = ratiosOf(sums);
  const bin = ops.minimum(ops.floor(ops.mul(accuracy, accuracyBins)), accuracyBins - 1);
  const holds = ops.cast(ops.greater(sums.examples, 0), "float32");
  return ops.mul(ops.oneHot(ops.cast(bin, "int32"), accuracyBins), holds);
}

/** (params@SERVER, private held-out batches, key, part, noiseMultiplier under dp, clientKeys under distributed DP) -> { histogram: the released histogram of the clients' accuracies }. */
export function privateEvaluationProgram(model: AnyModel, mechanism: HistogramMechanism = "dp"): CheckedProgram<unknown, unknown> {
  const traced = program(
    { params: serverParamSpecs(model), ...privateHeldOutSpecs(model), ...releaseSpecs(mechanism) } as never,
    (inputs: Value) => {
      const { params, x, y, mask } = inputs;
      const bins = ops.map((w: Value, cx: Value, cy: Value, cm: Value) => binOf(model, w, { x: cx, y: cy, mask: cm }), ops.broadcast(params), x, y, mask);
      return { histogram: release(mechanism, bins, 1, inputs) };
    },
    { name: `${mechanismName(mechanism)}_evaluate_${model.name}` },
  );
  return new CheckedProgram(traced, model);
}

/**
 * (params@SERVER, lr, private training and held-out batches, key, noiseMultiplier) -> the DP
 * histograms of the clients' held-out accuracies before and after each fine-tunes the model
 * over its training batches (the clients' optimiser, its state fresh), in one release.
 */
export function privatePersonalizationProgram(model: AnyModel, options: ClientTrainingOptions = {}, mechanism: HistogramMechanism = "dp"): CheckedProgram<unknown, unknown> {
  const optimizer = options.clientOptimizer ?? plainSgd;
  const batches = clientBatchSpecs(model, { private: true });
  const traced = program(
    { params: serverParamSpecs(model), lr: f32([]), trainX: batches.x, trainY: batches.y, trainMask: batches.mask, ...privateHeldOutSpecs(model), ...releaseSpecs(mechanism) } as never,
    (inputs: Value) => {
      const { params, lr, trainX, trainY, trainMask, x, y, mask } = inputs;
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
      return release(mechanism, bins, Math.SQRT2, inputs);
    },
    { name: `${mechanismName(mechanism)}_personalize_${model.name}` },
  );
  return new CheckedProgram(traced, model);
}
