/**
 * The checker plugin's extra cost on diagnostics: the same files checked by the plain
 * LanguageService and by the one the plugin decorates, in one process, after an edit to every
 * file each round (so both really re-check, as an editor does while typing). Prints the median
 * CPU times and their ratio; the target is under 20% extra.
 *
 * usage: node dist/bench/plugin-overhead.js [--rounds N]   (after npm run build)
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import ts from "typescript";
import { explainDiagnostics } from "../checker-plugin/diagnostics.js";
import { defaultOptions } from "../checker-plugin/options.js";
import { createServices, fixtureProject, linkFedTensor, readProject, repoRoot } from "../checker-plugin/test/language-service.js";

const { values } = parseArgs({ options: { rounds: { type: "string", default: "15" } } });
const rounds = Number(values.rounds);
/** Rounds run first and not counted: they load the library and warm up the JIT for both services alike. */
const warmUpRounds = 3;

/** The projects benchmarked: the plugin's fixture programs, and examples/ when it is a project. */
const projects = [fixtureProject, join(repoRoot, "examples")].filter((dir) => existsSync(join(dir, "tsconfig.json")));
linkFedTensor(fixtureProject);

const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/**
 * Milliseconds of this process's CPU time that `work` takes: unlike wall time, it hardly grows
 * when other processes load the machine, and the checker runs on this one thread.
 */
function cpuTime(work: () => void): number {
  const start = process.cpuUsage();
  work();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
}

/** Per round, summed over the projects: milliseconds for the plain service, the plugin's, and explaining alone. */
const plainTimes: number[] = [];
const pluginTimes: number[] = [];
const explainTimes: number[] = [];
const add = (into: number[], round: number, ms: number): void => void (into[round] = (into[round] ?? 0) + ms);
let fileCount = 0;
for (const project of projects) {
  const { files } = readProject(project);
  const fileNames = Object.keys(files);
  fileCount += fileNames.length;
  const services = createServices(files, project);
  for (let round = -warmUpRounds; round < rounds; round++) {
    for (const fileName of fileNames) services.setFile(fileName, `${files[fileName]}\n// edit ${round}\n`);
    // File by file, the two services take turns going first: the pairs then share the machine's
    // load of the moment, and warm caches and garbage collection fall on both alike.
    const times = { plain: 0, plugin: 0 };
    fileNames.forEach((fileName, i) => {
      const order = (round + i) % 2 === 0 ? (["plain", "plugin"] as const) : (["plugin", "plain"] as const);
      for (const which of order) times[which] += cpuTime(() => services[which].getSemanticDiagnostics(fileName));
    });
    const found = fileNames.map((f) => services.plain.getSemanticDiagnostics(f));
    const explaining = cpuTime(() => found.forEach((d) => explainDiagnostics(ts, services.plain.getProgram(), d, defaultOptions)));
    if (round < 0) continue;
    add(explainTimes, round, explaining);
    add(plainTimes, round, times.plain);
    add(pluginTimes, round, times.plugin);
  }
}

// The median of the per-round ratios: each round's pair ran under the same machine load.
const ratio = median(pluginTimes.map((t, round) => t / plainTimes[round]!));
const extra = (ratio - 1) * 100;
console.log(`semantic diagnostics of ${fileCount} files in ${projects.length} project(s), ${rounds} rounds (medians):`);
console.log(`  plain LanguageService     ${median(plainTimes).toFixed(1)} ms`);
console.log(`  with the checker plugin   ${median(pluginTimes).toFixed(1)} ms`);
console.log(`  explaining alone          ${median(explainTimes).toFixed(3)} ms`);
console.log(`  ratio ${ratio.toFixed(3)} (${extra >= 0 ? "+" : ""}${extra.toFixed(1)}% extra; target under 20%)`);
