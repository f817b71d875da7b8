/**
 * bench/pld-compose: the PLD accountant's cost (src/lib/privacy/pld), for the goal of
 * 10,000 compositions in under one second: the Poisson-subsampled Gaussian (q 0.01, sigma 1),
 * both sides of add/remove adjacency, its per-step PLDs built once and then composed 10,000
 * times by one FFT power each, and epsilon read at delta 1e-5. Prints the build and
 * composition times separately (the median of --repeats runs) and the epsilon.
 *
 * usage: node dist/bench/pld-compose.js [--steps 10000] [--repeats 5] [--interval 1e-4]
 */
import { parseArgs } from "node:util";
import { subsampledGaussianCurve } from "../src/lib/privacy/pld/mechanisms.js";
import { epsilonForDelta, pldFromCurve, selfCompose } from "../src/lib/privacy/pld/pmf.js";
import { median } from "./stats.js";

const { values } = parseArgs({ options: { steps: { type: "string", default: "10000" }, repeats: { type: "string", default: "5" }, interval: { type: "string", default: "1e-4" } } });
const [steps, repeats, interval] = [Number(values.steps), Number(values.repeats), Number(values.interval)];
const [q, sigma, delta] = [0.01, 1, 1e-5];

const builds: number[] = [];
const compositions: number[] = [];
let epsilon = NaN;
for (let r = 0; r < repeats; r++) {
  const t0 = performance.now();
  const remove = pldFromCurve(subsampledGaussianCurve(q, sigma, "remove"), interval);
  const add = pldFromCurve(subsampledGaussianCurve(q, sigma, "add"), interval);
  const t1 = performance.now();
  epsilon = Math.max(epsilonForDelta(selfCompose(remove, steps), delta), epsilonForDelta(selfCompose(add, steps), delta));
  const t2 = performance.now();
  builds.push(t1 - t0);
  compositions.push(t2 - t1);
}
console.log(`q ${q}, sigma ${sigma}, ${steps} steps, grid ${interval}: epsilon ${epsilon.toFixed(4)} at delta ${delta}`);
console.log(`per-step PLDs (both sides): median ${median(builds).toFixed(0)} ms; ${steps} compositions and epsilon (both sides): median ${median(compositions).toFixed(0)} ms, fastest ${Math.min(...compositions).toFixed(0)} ms`);
