/**
 * bench/dp-accountants-mnist: docs/algorithms.md's table "DP-FedAvg on MNIST, calibrated by RDP
 * and by PLD". For each target epsilon (1, 3, 8 at delta 1e-5 over the run's rounds) and each
 * accountant, the smallest noise multiplier that meets the target (`fedtensor plan
 * --target-epsilon`'s calibration), then one DP-FedAvg run with it: the same config and --seed
 * for every run (the noise and cohorts come from each run's secret, as in any private run).
 * Prints the table in markdown, and each run's line as it finishes.
 *
 * usage: npm run build && node dist/bench/dp-accountants-mnist.js [rounds (default 10)] [runs folder (default runs/dp-accountants)]
 */
import { join } from "node:path";
import { validateRunConfig } from "../src/lib/run/config.js";
import { parameterCount, privacyPlan } from "../src/lib/run/plan.js";
import { train } from "../src/lib/run/train.js";

const rounds = Number(process.argv[2] ?? 10);
const folder = process.argv[3] ?? "runs/dp-accountants";
const targets = [1, 3, 8];
const accountants = ["rdp", "pld"] as const;
const base = {
  algorithm: "fedavg",
  aggregator: "dp",
  model: "logistic",
  dataset: "mnist",
  partition: "iid",
  clients: 1000,
  clientsPerRound: 100,
  localEpochs: 1,
  batchSize: 20,
  lr: 0.1,
  rounds,
  dpClip: 1,
  dpDelta: 1e-5,
  evalEvery: rounds,
  checkpointEvery: 0,
  seed: 0,
};

const silent = { write: () => true, isTTY: false };
const rows: string[] = [];
for (const target of targets) {
  const cells: string[] = [];
  for (const accountant of accountants) {
    const planned = validateRunConfig({ ...base, accountant, out: join(folder, "plan") }, "bench");
    // Four significant digits, rounded up by the calibration: printed as such.
    const noise = Number(privacyPlan(planned, parameterCount(planned), target)!.target!.noiseMultiplier.toPrecision(4));
    const config = validateRunConfig({ ...base, accountant, dpNoise: noise, out: join(folder, `${accountant}-eps${target}`), overwrite: true }, "bench");
    const result = await train(config, silent);
    console.log(`epsilon ${target}, ${accountant}: noise multiplier ${noise}, epsilon spent ${result.epsilon?.toFixed(3)}, test accuracy ${((result.accuracy ?? NaN) * 100).toFixed(2)}% (${result.seconds.toFixed(0)} s)`);
    cells.push(`${noise}`, `${((result.accuracy ?? NaN) * 100).toFixed(2)}%`);
  }
  rows.push(`| ${target} | ${cells.join(" | ")} |`);
}
console.log(`\nDP-FedAvg, MNIST logistic regression, ${base.clients} clients, ${base.clientsPerRound} a round (q ${base.clientsPerRound / base.clients}), ${rounds} rounds, clip ${base.dpClip}, delta ${base.dpDelta}, seed ${base.seed}:\n`);
console.log("| epsilon | z (RDP) | accuracy (RDP) | z (PLD) | accuracy (PLD) |");
console.log("|---|---|---|---|---|");
for (const row of rows) console.log(row);
