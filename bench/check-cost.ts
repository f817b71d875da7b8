/**
 * bench/check-cost: what the library's data check costs per round now that nothing is
 * remembered as checked (src/lib/data/verified.ts): the finiteness scan of MNIST-size features
 * (60,000 examples of 784 float32 pixels) and the range check of their labels, the fastest of
 * --rounds repeats (on a shared machine other work only adds time).
 *
 * usage: node dist/bench/check-cost.js [--rounds 20] [--examples 60000]
 */
import { parseArgs } from "node:util";
import { firstNonFinite } from "../src/lib/data/verified.js";
import { Rng } from "../src/lib/random.js";
import { fastest } from "./stats.js";

const { values } = parseArgs({ options: { rounds: { type: "string", default: "20" }, examples: { type: "string", default: "60000" } } });
const rounds = Number(values.rounds);
const examples = Number(values.examples);
const rng = Rng.fromSeed(0);
const x = new Float32Array(examples * 784).map(() => rng.float());
const y = Int32Array.from({ length: examples }, () => Math.floor(rng.float() * 10));

function time(work: () => unknown): number {
  const times: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const start = process.hrtime.bigint();
    work();
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  return fastest(times);
}

// The label check of checked-inputs.ts: a whole number in [0, classes).
const labelsOk = (labels: Int32Array, classes: number) => labels.every((label) => Number.isInteger(label) && label >= 0 && label < classes);
console.log(`check of ${examples} MNIST-size examples, fastest of ${rounds}:`);
console.log(`  features (${x.length} float32, finiteness): ${time(() => firstNonFinite(x)).toFixed(1)} ms`);
console.log(`  labels   (${y.length} int32, range):        ${time(() => labelsOk(y, 10)).toFixed(1)} ms`);
