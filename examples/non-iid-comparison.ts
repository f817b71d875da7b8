/**
 * Non-IID data: MNIST in label shards (each client holds about two digits, the FedAvg paper's
 * pathological split), trained with FedAvg, with FedAvgM (server momentum, which Hsu et al.
 * 2019 proposed for such skew) and with SCAFFOLD, whose control variates correct the clients'
 * drift towards their own labels. The runs go to runs/non-iid/<algorithm>/, and one plot
 * compares them: runs/non-iid/plot.png.
 *
 *   npm run build && node dist/examples/non-iid-comparison.js [--rounds N]
 */
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
// The run engine behind `fedtensor run` is the checkout's own tool, not a package export.
import { validateRunConfig } from "../src/lib/run/config.js";
import { metricsFiles, readMetrics } from "../src/lib/run/metrics.js";
import { writePlots } from "../src/lib/run/plot.js";
import { plottedMetrics, train } from "../src/lib/run/train.js";

const outDir = "runs/non-iid";

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { rounds: { type: "string", default: "30" } } });
  const series = [];
  for (const algorithm of ["fedavg", "fedavgm", "scaffold"]) {
    const config = validateRunConfig(
      {
        algorithm,
        model: "2nn",
        dataset: "mnist",
        partition: "shards",
        rounds: Number(values.rounds),
        clientsPerRound: 10,
        batchSize: 50,
        lr: 0.05,
        evalEvery: 2,
        checkpointEvery: 0,
        out: join(outDir, algorithm),
        // A fresh comparison each time the example runs.
        overwrite: true,
      },
      "non-iid-comparison",
    );
    console.log(`\n${algorithm}:`);
    const result = await train(config, process.stdout);
    console.log(`${algorithm}: test accuracy ${((result.accuracy ?? 0) * 100).toFixed(2)}% after ${result.rounds} rounds`);
    series.push({ name: algorithm, rows: readMetrics(join(config.out, metricsFiles.jsonl)) });
  }
  const files = await writePlots(outDir, series, { title: "FedAvg, FedAvgM and SCAFFOLD on MNIST label shards (2NN)", metrics: plottedMetrics });
  console.log(`\nplot: ${files.png}`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) await main();
