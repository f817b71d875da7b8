/**
 * The robustness table of docs/algorithms.md: FedAvg against the coordinate-wise median, the
 * trimmed mean, Krum and norm clipping on MNIST (2NN, 100 IID clients, 10 per round) with 0%,
 * 10% and 20% of each cohort sending sign-flipped updates (-10x their own), from real runs.
 * Prints the final test accuracy of each run as a Markdown table.
 *
 *   npm run build && node dist/examples/robustness-table.js [--rounds 20] [--backend onnx]
 */
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { FedTensorError } from "fedtensor";
// The run engine behind `fedtensor run` is the checkout's own tool, not a package export.
import { validateRunConfig, type RunConfig } from "../src/lib/run/config.js";
import { train } from "../src/lib/run/train.js";

const outDir = "runs/robustness";

/** Each aggregator with the options that make it tolerate 2 attackers of 10. */
const aggregators: readonly { name: string; options: Record<string, unknown> }[] = [
  { name: "FedAvg (mean)", options: { aggregator: "fedavg" } },
  { name: "median", options: { aggregator: "median" } },
  { name: "trimmed mean (20%)", options: { aggregator: "trimmed-mean", trimFraction: 0.2 } },
  { name: "Krum (f = 2)", options: { aggregator: "krum", krumByzantine: 2 } },
  { name: "multi-Krum (f = 2, m = 5)", options: { aggregator: "krum", krumByzantine: 2, krumSelect: 5 } },
  { name: "norm clipping (bound 1)", options: { aggregator: "norm-clip", normBound: 1 } },
];
const attackerFractions = [0, 0.1, 0.2];

/** The run's final test accuracy, or where it diverged (FT303: the model's weights left the floats). */
async function finalAccuracy(config: RunConfig): Promise<string> {
  try {
    const result = await train(config, process.stdout);
    return `${((result.accuracy ?? 0) * 100).toFixed(2)}%`;
  } catch (error) {
    if (error instanceof FedTensorError && error.code === "FT303") return `diverged (NaN in round ${String(error.params.round)})`;
    throw error;
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { rounds: { type: "string", default: "20" }, backend: { type: "string", default: "onnx" } } });
  const rows: string[] = [];
  for (const { name, options } of aggregators) {
    const cells: string[] = [];
    for (const byzantine of attackerFractions) {
      const out = join(outDir, `${String(options.aggregator)}${options.krumSelect === undefined ? "" : "-multi"}-${byzantine}`);
      const config = validateRunConfig(
        {
          algorithm: "fedavg",
          model: "2nn",
          dataset: "mnist",
          rounds: Number(values.rounds),
          clientsPerRound: 10,
          batchSize: 10,
          lr: 0.1,
          evalEvery: Number(values.rounds),
          checkpointEvery: 0,
          backend: values.backend,
          ...options,
          ...(byzantine === 0 ? {} : { attack: "sign-flip", byzantine, attackScale: 10 }),
          out,
          overwrite: true,
        },
        "robustness-table",
      );
      console.log(`\n${name}, ${byzantine * 100}% sign-flipping clients:`);
      cells.push(await finalAccuracy(config));
    }
    rows.push(`| ${name} | ${cells.join(" | ")} |`);
  }
  console.log(`\nTest accuracy after ${values.rounds} rounds (MNIST, 2NN, 100 IID clients, 10 per round, sign-flip x10):\n`);
  console.log(`| aggregator | ${attackerFractions.map((f) => `${f * 100}% attackers`).join(" | ")} |`);
  console.log(`|---|${attackerFractions.map(() => "---").join("|")}|`);
  for (const row of rows) console.log(row);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) await main();
