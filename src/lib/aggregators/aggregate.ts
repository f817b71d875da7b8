/**
 * An aggregator's `next` on traced values: the clients' updates through the client stages
 * (inside one map, each client its own), then through the server stages to one value at the
 * SERVER, with the aggregator's next state.
 *
 * The server stages, by what the chain holds:
 * - mean: the weighted mean (the weights are the example counts unless the algorithm gives
 *   its own, as AFL's and q-FFL's);
 * - median, trimmed-mean, krum: the robust aggregators of src/front/robust.ts, clients
 *   weighed alike, as the papers do;
 * - dp: DP-FedAvg's fixed-denominator Gaussian mean, dpSum / m, clients weighed alike (McMahan
 *   et al. 2018), with Andrew et al.'s adaptive clip when the clip is adaptive;
 * - secure: the weighted mean from two secure sums, sum_i n_i clip(u_i) and sum_i n_i (TFF's
 *   secure MeanFactory); with dp before it, the updates clipped to C are secure-summed, and the
 *   server adds the noise to that sum: central DP whose server sees only the sum;
 * - distributed-dp: distributedDpSum of the updates (each client clips, rotates, rounds and
 *   noises its own; the server learns the sum mod 2^bits) over the number of clients that took
 *   part, clients weighed alike (in distributed DP the server sees who took part: the count is
 *   no secret). Its rotation key is the round's key itself, its clients' keys a CLIENTS input.
 */
import { distributedDpSum } from "../../front/distributed-dp.js";
import * as privacy from "../../front/privacy.js";
import * as quantization from "../../front/quantize.js";
import * as random from "../../front/random.js";
import * as robust from "../../front/robust.js";
import { inverseRandomHadamard, randomHadamard } from "../../front/rotation.js";
import * as secureOps from "../../front/secure.js";
import { isTracer } from "../../front/trace.js";
import { flatten, unflatten } from "../../front/tree.js";
import { ops, type Value } from "../algorithms/loose.js";
import type { RoundData } from "../algorithms/types.js";
import { isAdaptive, type Attack, type DistributedDpStage, type SecureStage, type Stage } from "./stages.js";

// Through loose signatures, as loose.ts gives the other operations: checked while tracing.
type Loose = (...args: Value[]) => Value;
const draw = random as unknown as Record<"split" | "foldIn" | "normal" | "clientIndex", Loose>;
const robustOps = robust as unknown as Record<"reduceMedian" | "reduceTrimmedMean" | "krum" | "clipByNorm" | "zeroAboveNorm" | "globalNorm", Loose>;
const release = { ...privacy, ...secureOps, distributedDpSum } as unknown as Record<"dpSum" | "secureSum" | "gaussianTreeNoise" | "distributedDpSum", Loose>;
const stochasticQuantize = quantization.stochasticQuantize as unknown as Loose;
const hadamard = { forward: randomHadamard, inverse: inverseRandomHadamard } as unknown as Record<"forward" | "inverse", Loose>;

/** What an aggregator needs of each client's round data: its batch mask (dp counts a client with no example as absent) and its example count. */
export type ClientRoundData = Pick<RoundData, "mask" | "count">;

/** What the algorithm hands its aggregator: the updates, the round's data (masks, counts), and its own weights when not the counts. */
export interface Aggregand {
  readonly updates: Value;
  readonly data: ClientRoundData;
  readonly weights?: Value;
}

/** What aggregate() reads of an aggregator (aggregator.ts): its stages, and its inputs' names. */
export interface Chain {
  readonly stages: readonly Stage[];
  readonly inputs: object;
}

/** One aggregation's result: the value at the SERVER and the aggregator's next state (by state name). */
export interface Aggregated {
  readonly value: Value;
  readonly state: Record<string, Value>;
}

/**
 * The quantization scale of a secure sum of values in [-bound, bound] over maxClients
 * clients: (nearly) the largest whose sum fits 2^bits; 0.1% headroom absorbs float32
 * rounding of the scale.
 */
export function secureScale(bits: number, maxClients: number, bound: number): number {
  return Math.fround((0.999 * (2 ** bits - 1)) / (maxClients * 2 * bound));
}

/** One key per leaf of `tree`, split from `key` (at the SERVER where the key is shared: a key equal on every client may not be split inside map(), FT317). */
function leafKeys(key: Value, tree: Value): Value[] {
  const n = flatten(tree, isTracer, "update tree").leaves.length;
  return n === 1 ? [key] : draw.split(key, n);
}

/** What a malicious client sends instead of its update. */
function attacked(kind: Attack, update: Value, scale: Value, key: Value): Value {
  if (kind === "sign-flip") return ops.mul(update, ops.neg(scale));
  if (kind === "scale") return ops.mul(update, scale);
  const { leaves, def } = flatten(update, isTracer, "update tree");
  const keys = leafKeys(key, update);
  return unflatten(def, leaves.map((leaf, i) => ops.mul(draw.normal(keys[i], leaf.shape), scale)));
}

/**
 * The random Hadamard rotation of a whole update tree before quantization (Suresh et al. 2017;
 * TFF's HadamardTransform): each leaf rotated by src/front/rotation.ts's randomHadamard with
 * its key of `keys` (split from the cohort's shared one), so that a coordinate far from the
 * others is spread over all of them and few bits lose less; each leaf zero-padded to a power of two.
 */
function rotate(tree: Value, keys: readonly Value[]): Value {
  const { leaves, def } = flatten(tree, isTracer, "update tree");
  return unflatten(def, leaves.map((leaf, i) => hadamard.forward(leaf, keys[i])));
}

/** rotate's inverse: each rotated leaf back to the shape of `like`'s leaf. */
function unrotate(rotated: Value, keys: readonly Value[], like: Value): Value {
  const { leaves, def } = flatten(rotated, isTracer, "rotated tree");
  const shapes = flatten(like, isTracer, "update tree").leaves.map((leaf) => leaf.shape);
  return unflatten(def, leaves.map((leaf, i) => hadamard.inverse(leaf, keys[i], shapes[i])));
}

const stageOf = <K extends Stage["kind"]>(stages: readonly Stage[], kind: K) => stages.find((s) => s.kind === kind) as Extract<Stage, { kind: K }> | undefined;

/**
 * The aggregator's next on traced values: `slot` of `slots` names this aggregation among the
 * round's (Mime aggregates twice), so that each draws from its own keys.
 */
export function aggregate(agg: Chain, { updates, data, weights = data.count }: Aggregand, inputs: Value, slot = 0, slots = 1): Aggregated {
  const { stages } = agg;
  const dp = stages.some((s) => s.kind === "dp");
  const secure = stageOf(stages, "secure");
  const distributed = stageOf(stages, "distributed-dp");
  const adaptive = isAdaptive(stages);
  // A round function given the round's key (folded already) has no round input.
  const base = !("key" in agg.inputs) ? undefined : inputs.round === undefined ? inputs.key : draw.foldIn(inputs.key, inputs.round);
  const call = base === undefined || slots === 1 ? base : draw.split(base, slots)[slot];
  const [attackKey, quantizeKey, rotationKey, noiseKey, maskKey] = call === undefined ? [] : draw.split(call, 5);
  const serverClip = dp ? inputs.clip : undefined;

  const plainMean = stages.every((s) => s.kind === "mean");
  if (plainMean) return { value: ops.reduceWeightedMean(updates, weights), state: {} };
  const members: Record<string, Value> = { update: updates, mask: data.mask, weight: weights };
  if (attackKey !== undefined && stageOf(stages, "attack")) Object.assign(members, { malicious: inputs.malicious, attackKey: ops.broadcast(attackKey) });
  const quantizing = stageOf(stages, "quantize");
  if (quantizeKey !== undefined && quantizing) members.quantizeKey = ops.broadcast(quantizeKey);
  if (quantizing?.rotation) members.rotationKeys = leafKeys(rotationKey, updates).map((key) => ops.broadcast(key));
  if (serverClip !== undefined) members.clip = ops.broadcast(serverClip);
  const local = ops.map((m: Value) => clientSide(stages, m, inputs, secure, adaptive), members);

  // Only a dp stage keeps a state (its clip: dp always has a clip stage before it).
  if (dp) return dpMean(local, inputs, noiseKey, maskKey, secure, adaptive);
  if (distributed !== undefined) return { value: distributedDpMean(distributed, local, call, inputs.clientKeys), state: {} };
  if (secure !== undefined) return { value: secureWeightedMean(secure, local, maskKey), state: {} };
  const robustStage = stages.find((s) => s.kind === "median" || s.kind === "trimmed-mean" || s.kind === "krum");
  if (robustStage?.kind === "median") return { value: robustOps.reduceMedian(local.update), state: {} };
  if (robustStage?.kind === "trimmed-mean") return { value: robustOps.reduceTrimmedMean(local.update, { trim: robustStage.trim }), state: {} };
  if (robustStage?.kind === "krum") return { value: robustOps.krum(local.update, { byzantine: robustStage.byzantine, select: robustStage.select }), state: {} };
  return { value: ops.reduceWeightedMean(local.update, weights), state: {} };
}

/** One client's side of the chain: its update through the client stages, and what the server stages need of it. */
function clientSide(stages: readonly Stage[], m: Value, inputs: Value, secure: SecureStage | undefined, adaptive: boolean): Value {
  let update = m.update;
  const dp = stages.some((s) => s.kind === "dp");
  for (const stage of stages) {
    if (stage.kind === "attack") {
      const sent = attacked(stage.attack, update, inputs.attackScale, draw.foldIn(m.attackKey, draw.clientIndex()));
      update = ops.add(update, ops.mul(ops.sub(sent, update), m.malicious));
    } else if (stage.kind === "quantize") {
      // One rotation for the whole cohort (a shared key), so the server's inverse of the sum is the sum of the inverses.
      const key = draw.foldIn(m.quantizeKey, draw.clientIndex());
      update = stage.rotation
        ? unrotate(stochasticQuantize(rotate(update, m.rotationKeys), key, { bits: stage.bits }), m.rotationKeys, update)
        : stochasticQuantize(update, key, { bits: stage.bits });
    } else if (stage.kind === "zeroing") {
      update = robustOps.zeroAboveNorm(update, stage.bound);
    } else if (stage.kind === "clip" && !dp) {
      update = robustOps.clipByNorm(update, stage.bound);
    }
  }
  if (stages.some((s) => s.kind === "distributed-dp")) return { update, one: ops.full([], 1) };
  if (!dp && secure === undefined) return { update };
  if (secure !== undefined && !dp) {
    // The declared range: each coordinate clipped to [-clip, clip], then weighted by the client's example count.
    const clipped = ops.minimum(ops.maximum(update, -secure.clip), secure.clip);
    return { update: ops.mul(clipped, m.weight), weight: ops.cast(m.weight, "int32") };
  }
  // DP: a member with no example (the stand-in of an empty Poisson cohort) contributes exactly
  // nothing, not even its clipped-count bit: the round then releases the noise alone.
  const present = ops.minimum(ops.sum(m.mask), 1);
  update = ops.mul(update, present);
  const norm = adaptive ? robustOps.globalNorm(update) : undefined;
  if (secure !== undefined) {
    // Clipped here rather than in dpSum; clamping coordinates after it only shortens the update, so the sensitivity stays C.
    const clipped = robustOps.clipByNorm(update, m.clip);
    update = ops.minimum(ops.maximum(clipped, -secure.clip), secure.clip);
  }
  // The clipped-count bit only with adaptive clipping: an unused output of map is still computed.
  if (!adaptive) return { update };
  return { update, below: ops.mul(ops.sub(ops.cast(ops.lessEqual(norm, m.clip), "float32"), 0.5), present) };
}

/** secureSum of values in `range` with the stage's modulus, cohort bound and mask graph; float values quantized by `scale`. */
function stageSecureSum(s: SecureStage, values: Value, key: Value, range: [number, number], scale?: number): Value {
  const graph = { ...(s.neighbours === undefined ? {} : { neighbours: s.neighbours }), ...(s.minClients === undefined ? {} : { minClients: s.minClients }) };
  return release.secureSum(values, { bits: s.bits, maxClients: s.maxClients, ...graph, key, range, ...(scale === undefined ? {} : { scale }) });
}

/** The secure weighted mean: sum_i n_i u_i / sum_i n_i, both sums masked. */
function secureWeightedMean(s: SecureStage, local: Value, key: Value): Value {
  const [updateKey, weightKey] = draw.split(key, 2);
  const bound = s.clip * s.maxWeight;
  const weightedSum = stageSecureSum(s, local.update, updateKey, [-bound, bound], secureScale(s.bits, s.maxClients, bound));
  const totalWeight = stageSecureSum(s, local.weight, weightKey, [0, s.maxWeight]);
  return ops.div(weightedSum, ops.maximum(ops.cast(totalWeight, "float32"), 1));
}

/** Distributed DP's mean: the distributed sum of the updates, rotated with `rotationKey`, over the clients that took part (at least 1). */
function distributedDpMean(stage: DistributedDpStage, local: Value, rotationKey: Value, clientKeys: Value): Value {
  const sum = release.distributedDpSum(local.update, { ...stage, rotationKey, clientKeys });
  return ops.div(sum, ops.maximum(ops.reduceSum(local.one), 1));
}

/**
 * DP's mean: the clipped updates' sum plus N(0, (z C)^2), over the expected cohort m; the sum
 * is dpSum's, or secure sums' when secure follows. Adaptive clipping (Andrew et al. 2021)
 * sums the clipped-count bits b_i = [||u_i|| <= C] - 1/2 with noise of std sigma_b and moves
 * C <- C exp(-eta (b - gamma)), b = sum / m + 1/2.
 */
function dpMean(local: Value, inputs: Value, noiseKey: Value, maskKey: Value, secure: SecureStage | undefined, adaptive: boolean): Aggregated {
  const [updateNoise, countNoise] = draw.split(noiseKey, 2);
  const clip = inputs.clip;
  let sum: Value;
  let belowSum: Value;
  if (secure === undefined) {
    sum = release.dpSum(local.update, { clip, noiseMultiplier: inputs.noiseMultiplier, key: updateNoise });
    if (adaptive) belowSum = release.dpSum(local.below, { clip: 0.5, noiseMultiplier: ops.mul(inputs.countStddev, 2), key: countNoise });
  } else {
    const [updateMask, countMask] = draw.split(maskKey, 2);
    const masked = stageSecureSum(secure, local.update, updateMask, [-secure.clip, secure.clip], secureScale(secure.bits, secure.maxClients, secure.clip));
    sum = ops.add(masked, release.gaussianTreeNoise(masked, ops.mul(inputs.noiseMultiplier, clip), updateNoise));
    if (adaptive) {
      const bits = stageSecureSum(secure, local.below, countMask, [-0.5, 0.5], 2);
      belowSum = ops.add(bits, ops.mul(draw.normal(countNoise, []), inputs.countStddev));
    }
  }
  const value = ops.div(sum, inputs.expectedClients);
  if (!adaptive) return { value, state: { clip } };
  const fractionBelow = ops.add(ops.div(belowSum, inputs.expectedClients), 0.5);
  const next = ops.mul(clip, ops.exp(ops.mul(ops.neg(inputs.clipLr), ops.sub(fractionBelow, inputs.targetQuantile))));
  return { value, state: { clip: next } };
}
