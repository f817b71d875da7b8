/**
 * bench/served-hot-paths: two pieces of a served round's CPU, each against the form it replaced,
 * timed in one process (compare the ratios):
 *   shuffle   a client's batches for a round (src/deploy/client/batches.ts clientBatches, 2,727
 *             MNIST-sized examples, B=10): its Fisher-Yates shuffle draws the CSPRNG's words a
 *             block at a time, against one crypto.getRandomValues call per index (the old form,
 *             written out here with the same copying of the examples into batches)
 *   unscale   the server's secure sum divided by the round's scale into float32 (199,210 values,
 *             the 2NN's): a plain loop, against Float32Array.from with a mapping function
 *   quantize  a client's masked-input quantization of those 199,210 values (SecAgg+'s default
 *             ranges): its coins compared as 32-bit words with the fraction times 2^32, against
 *             the replaced form that first divided every coin into an array of float64
 *
 * usage: node dist/bench/served-hot-paths.js [--rounds 20]
 */
import { parseArgs } from "node:util";
import { clientBatches } from "../src/deploy/client/batches.js";
import { SECAGG_DEFAULTS, resolveSecAggParams } from "../src/deploy/secagg/params.js";
import { quantizeVector } from "../src/deploy/secagg/quantize.js";
import { prgWords, webCryptoRandomBytes } from "../src/deploy/secagg/random.js";
import { median } from "./stats.js";

const { values } = parseArgs({ options: { rounds: { type: "string", default: "20" } } });
const rounds = Number(values.rounds);
const [examples, features, batchSize] = [2727, 784, 10];
const x = Float32Array.from({ length: examples * features }, (_, i) => (i % 255) / 255);
const y = Int32Array.from({ length: examples }, (_, i) => i % 10);
const steps = Math.ceil(examples / batchSize);

/** The replaced shuffle: one CSPRNG call per index. */
function oneCallPerIndex(): Float32Array {
  const order = Int32Array.from({ length: examples }, (_, i) => i);
  const word = new Uint32Array(1);
  for (let i = examples - 1; i > 0; i--) {
    const limit = Math.floor(2 ** 32 / (i + 1)) * (i + 1);
    do crypto.getRandomValues(word);
    while (word[0]! >= limit);
    const j = word[0]! % (i + 1);
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  const out = new Float32Array(steps * batchSize * features);
  order.forEach((example, slot) => out.set(x.subarray(example * features, (example + 1) * features), slot * features));
  return out;
}

const total = Float64Array.from({ length: 199_210 }, (_, i) => Math.sin(i));
const scale = 1 / 2727;
const unscaleLoop = (): Float32Array => {
  const out = new Float32Array(total.length);
  for (let i = 0; i < total.length; i++) out[i] = total[i]! / scale;
  return out;
};
const unscaleFrom = (): Float32Array => Float32Array.from(total, (v) => v / scale);

const update = Float32Array.from(total, (v) => v * 1e-3);
const ranges = resolveSecAggParams({ round: 1, vector_length: update.length, num_shares: 9, reconstruction_threshold: 5, ...SECAGG_DEFAULTS }, 10);
/** The replaced quantization: float64 coins, then the same rounding. */
function quantizeWithFloatCoins(): Uint32Array {
  const c = ranges.clipping_range;
  const scale = ranges.quantization_range / (2 * c);
  const words = prgWords(webCryptoRandomBytes(32), update.length);
  const coins = new Float64Array(update.length);
  for (let i = 0; i < update.length; i++) coins[i] = words[i]! / 2 ** 32;
  const values = new Uint32Array(update.length);
  for (let i = 0; i < update.length; i++) {
    const v = Math.min(c, Math.max(-c, update[i]!));
    const scaled = Math.min(ranges.quantization_range, (v + c) * scale);
    const floor = Math.floor(scaled);
    values[i] = Math.min(ranges.quantization_range, floor + (coins[i]! < scaled - floor ? 1 : 0));
  }
  return values;
}

const timed = (run: () => unknown): number => {
  const start = performance.now();
  run();
  return performance.now() - start;
};
const pairs = {
  shuffle: { now: () => clientBatches({ x, y }, { steps, batchSize, epochs: 1, featureShape: [features] }), before: oneCallPerIndex },
  unscale: { now: unscaleLoop, before: unscaleFrom },
  quantize: { now: () => quantizeVector(update, ranges, webCryptoRandomBytes), before: quantizeWithFloatCoins },
};
console.log(`served-hot-paths: ${rounds} alternating rounds each, milliseconds (median)`);
for (const [name, { now, before }] of Object.entries(pairs)) {
  const times = { now: [] as number[], before: [] as number[] };
  for (let r = 0; r < rounds + 2; r++) {
    const [a, b] = [timed(now), timed(before)];
    if (r >= 2) times.now.push(a), times.before.push(b); // two warm-up rounds
  }
  const [m, mb] = [median(times.now), median(times.before)];
  console.log(`  ${name.padEnd(8)} now ${m.toFixed(2).padStart(7)}   before ${mb.toFixed(2).padStart(7)}   ratio now / before = ${(m / mb).toFixed(3)}`);
}
