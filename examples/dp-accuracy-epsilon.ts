/**
 * The figure of docs/algorithms.md's DP-FedAvg section: test accuracy against the epsilon
 * spent, one line per DP run (each run folder's metrics.jsonl), written as an SVG.
 *
 *   npm run build && node dist/examples/dp-accuracy-epsilon.js out.svg name=runs/a other=runs/b
 *
 * A first argument --title=... replaces the title (docs/language.md's distributed-DP figure).
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
// The run engine behind `fedtensor run` is the checkout's own tool, not a package export.
import { metricsFiles, readMetrics } from "../src/lib/run/metrics.js";
import { renderPlotSvg } from "../src/lib/run/plot.js";

export async function accuracyAgainstEpsilon(runs: readonly { name: string; folder: string }[], title = "DP-FedAvg, MNIST, 1,000 clients (delta 1e-5)"): Promise<string> {
  const series = runs.map(({ name, folder }) => ({ name, rows: readMetrics(join(folder, metricsFiles.jsonl)) }));
  return renderPlotSvg(series, {
    title,
    metrics: [{ key: "test_accuracy", title: "Test accuracy", format: ".0%" }],
    x: { key: "epsilon", title: "Epsilon" },
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const given = process.argv.slice(2);
  const title = given[0]?.startsWith("--title=") ? given.shift()!.slice("--title=".length) : undefined;
  const [out, ...runs] = given;
  if (out === undefined || runs.length === 0) throw new Error("usage: dp-accuracy-epsilon.js out.svg name=run-folder ...");
  const named = runs.map((run) => {
    const at = run.lastIndexOf("=");
    return at < 0 ? { name: run, folder: run } : { name: run.slice(0, at), folder: run.slice(at + 1) };
  });
  writeFileSync(out, await accuracyAgainstEpsilon(named, ...(title === undefined ? [] : [title])));
}
