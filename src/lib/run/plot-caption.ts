/**
 * The caption under a run's plot title: what the curves depend on that the title (algorithm,
 * data set, model) does not say. Training: clients per round, local epochs, batch size,
 * learning rates, the aggregator (with a DP run's clip, noise and delta, a secure run's sum
 * width) and attacks; then which rounds were evaluated on the test set, so one point in a
 * test panel reads as intended. Only settings, never a run's secret.
 */
import type { RunConfig } from "./config.js";
import { chainHas } from "./aggregator-chain.js";

/** The longest caption line, in characters: about the width of a panel at the caption's font size. */
const maxLineChars = 95;
const separator = " · ";

const plural = (n: number, one: string) => `${n} ${one}${n === 1 ? "" : "s"}`;

function partitionPart(config: RunConfig): string {
  if (config.dataset === "synthetic") return `Synthetic(${config.syntheticAlpha ?? 1}, ${config.syntheticBeta ?? 1}) clients`;
  if (config.partition === "dirichlet") return `Dirichlet(${config.alpha ?? 0.5}) clients`;
  if (config.partition === "quantity") return `quantity-skewed (Dirichlet(${config.alpha ?? 0.5})) clients`;
  return config.partition === "iid" ? "IID clients" : "non-IID shards";
}

function samplingParts(config: RunConfig): string[] {
  // DP cohorts are Poisson: each client joins with probability clientsPerRound / clients.
  const cohort = chainHas(config.aggregator, "dp") ? `about ${config.clientsPerRound} of ${config.clients} clients per round (Poisson)` : `${config.clientsPerRound} of ${config.clients} clients per round`;
  return [cohort, partitionPart(config), ...(config.dropout > 0 ? [`dropout ${config.dropout}`] : [])];
}

function localTrainingParts(config: RunConfig): string[] {
  const schedule = config.lrSchedule === "constant" ? "" : ` (${config.lrSchedule})`;
  // FedSGD trains nothing locally: its batches only bound memory, and --lr is the server's step.
  const serverLr = config.serverLr === 1 ? [] : [`server lr ${config.serverLr}`];
  if (config.algorithm === "fedsgd") return ["one full-batch gradient per client", `step ${config.lr}${schedule}`, ...serverLr];
  const optimizer = config.clientOptimizer === undefined || config.clientOptimizer === "sgd" ? [] : [`client ${config.clientOptimizer}`];
  return [plural(config.localEpochs, "local epoch"), `batch ${config.batchSize}`, ...optimizer, `lr ${config.lr}${schedule}`, ...serverLr];
}

function aggregationParts(config: RunConfig): string[] {
  if (config.aggregator === "fedavg" || config.aggregator === "mean") return ["weighted-mean aggregation"];
  const parts: string[] = [];
  if (chainHas(config.aggregator, "distributed-dp")) {
    const noise = (config.ddpTargetEpsilon ?? 0) > 0 ? `noise for epsilon ${config.ddpTargetEpsilon} in ${config.rounds} rounds` : `noise multiplier ${config.ddpNoise}`;
    parts.push(`distributed DP (discrete Gaussian from the clients, simulated secure sum): clip ${config.ddpClip}, ${noise} at ${config.minClients} clients, ${config.ddpBits}-bit sums, delta ${config.ddpDelta}`);
  }
  if (chainHas(config.aggregator, "dp")) {
    const clip = config.dpClip === "adaptive" ? `adaptive clip from ${config.dpInitialClip}` : `clip ${config.dpClip}`;
    parts.push(`${config.algorithm === "fedavg" ? "DP-FedAvg" : "DP"}: ${clip}, noise multiplier ${config.dpNoise}, delta ${config.dpDelta}`);
  }
  if (chainHas(config.aggregator, "secure")) parts.push(`secure aggregation (simulated): ${config.secureBits}-bit sums, clip ${config.secureClip}`);
  return parts.length > 0 && config.aggregator.split(",").every((name) => ["dp", "clip", "secure", "distributed-dp"].includes(name)) ? parts : [...parts, `${config.aggregator} aggregation`];
}

function robustnessParts(config: RunConfig): string[] {
  const attack = config.attack === "none" ? [] : [`${config.attack} attack (scale ${config.attackScale}) by ${config.byzantine} of each cohort`];
  const rotated = config.quantizeRotation ? " after a random Hadamard rotation" : "";
  return [...attack, ...(config.quantizeBits > 0 ? [`updates quantized to ${config.quantizeBits} bits${rotated}`] : [])];
}

/** Which rounds have test metrics: every --eval-every-th and the last (train.ts, isEvaluatedRound). */
function evaluationPart(config: RunConfig): string {
  if (config.evalEvery === 1) return "test set evaluated every round";
  if (config.rounds < config.evalEvery) return `test set evaluated at the last round only (--eval-every ${config.evalEvery})`;
  return `test set evaluated every ${config.evalEvery} rounds and at the last`;
}

/** Packs the parts into lines of at most maxLineChars (a longer part gets a line of its own). */
function wrap(parts: readonly string[]): string[] {
  const lines: string[] = [];
  for (const part of parts) {
    const line = lines.at(-1);
    if (line !== undefined && line.length + separator.length + part.length <= maxLineChars) lines[lines.length - 1] = `${line}${separator}${part}`;
    else lines.push(part);
  }
  return lines;
}

/** The caption of a run's plot, as lines. */
export function plotCaption(config: RunConfig): string[] {
  return [
    ...wrap([...samplingParts(config), ...localTrainingParts(config)]),
    ...wrap([...aggregationParts(config), ...robustnessParts(config), evaluationPart(config)]),
  ];
}
