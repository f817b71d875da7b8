/**
 * bench/pld-vs-rdp: the table of docs/algorithms.md ("Accounting: PLD and RDP"): epsilon at
 * delta 1e-5 of the Poisson-subsampled Gaussian by the RDP accountant (src/lib/privacy/rdp.ts)
 * and the PLD accountant (src/lib/privacy/pld) over common settings, as a markdown table.
 *
 * usage: node dist/bench/pld-vs-rdp.js
 */
import { PldAccountant } from "../src/lib/privacy/pld/accountant.js";
import { sampledGaussianEpsilon } from "../src/lib/privacy/rdp.js";

const settings: [number, number, number][] = [
  [0.001, 0.8, 1000],
  [0.01, 0.8, 1000],
  [0.01, 1.0, 1000],
  [0.01, 2.0, 1000],
  [0.1, 1.0, 100],
  [0.1, 2.0, 100],
  [0.05, 1.1, 500],
  [0.25, 1.1, 100],
  [1, 2.0, 100],
];
const delta = 1e-5;
console.log("| q | sigma | steps | RDP | PLD | RDP / PLD |");
console.log("|---|---|---|---|---|---|");
for (const [q, sigma, steps] of settings) {
  const rdp = sampledGaussianEpsilon({ samplingRate: q, noiseMultiplier: sigma, steps }, delta).epsilon;
  const pld = new PldAccountant().step(q, sigma, steps).epsilon(delta);
  console.log(`| ${q} | ${sigma} | ${steps} | ${rdp.toFixed(3)} | ${pld.toFixed(3)} | ${(rdp / pld).toFixed(3)} |`);
}
