/**
 * bench/type-cost: what FedTensor's types cost the checker on a user's code. Type-checks the
 * federated-learning programs of test/fixtures/type-cost/ (about 1,000 lines, no errors) through
 * the compiler API, against the library's built declarations as a user's project reads them,
 * and prints check time, instantiations, types and memory next to the same figures for a
 * baseline program that imports the library and uses nothing. Targets: under 2 s of check time
 * and under 500k instantiations for the fixture.
 *
 * With --constructs it also prints the cost of single constructs (each used in 20 programs, less
 * the same programs without it), to find the expensive ones: the instantiations are exact, the
 * milliseconds (a few per use) are near the noise of the machine.
 *
 * Check time is the wall time the checker takes, as tsc's "Check time" (--extendedDiagnostics):
 * parsing and binding are outside it (parsed files are shared between runs). The CPU column is
 * this process's CPU time over the same span, the garbage collector's helper threads included,
 * so it exceeds the check time where cores are idle; where other work loads the machine, the
 * check time grows with the load: compare figures taken on the same, preferably quiet, machine.
 * Each figure is the best of --repeat runs, each with a fresh checker; "first ms" is the first
 * run's check time, which also pays for the JIT compiler's warm-up, as a single tsc run does.
 *
 * usage: node dist/bench/type-cost.js [--repeat N] [--constructs]   (after npm run build)
 */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import ts from "typescript";

const { values } = parseArgs({ options: { repeat: { type: "string", default: "3" }, constructs: { type: "boolean", default: false } } });
const repeat = Number(values.repeat);

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), "../..");
const fixtureDir = join(repoRoot, "test/fixtures/type-cost");

setFlagsFromString("--expose-gc");
const collectGarbage = runInNewContext("gc") as () => void;

const config = ts.getParsedCommandLineOfConfigFile(join(fixtureDir, "tsconfig.json"), {}, {
  ...ts.sys,
  onUnRecoverableConfigFileDiagnostic: (d) => {
    throw new Error(ts.flattenDiagnosticMessageText(d.messageText, "\n"));
  },
});
if (config === undefined) throw new Error("cannot read test/fixtures/type-cost/tsconfig.json");
const options = config.options;
const fixtureFiles = config.fileNames;

/** Parsed files, shared by every program measured: parsing is not what this bench measures. */
const parsed = new Map<string, ts.SourceFile>();
const baseHost = ts.createCompilerHost(options, true);

/** A host that serves `generated` (absolute path to text) as files, and caches parsed files. */
function hostWith(generated: ReadonlyMap<string, string>): ts.CompilerHost {
  return {
    ...baseHost,
    fileExists: (f) => generated.has(f) || baseHost.fileExists(f),
    readFile: (f) => generated.get(f) ?? baseHost.readFile(f),
    getSourceFile: (fileName, languageVersion, onError) => {
      const text = generated.get(fileName);
      if (text !== undefined) return ts.createSourceFile(fileName, text, languageVersion, true);
      let file = parsed.get(fileName);
      if (file === undefined) {
        file = baseHost.getSourceFile(fileName, languageVersion, onError);
        if (file !== undefined) parsed.set(fileName, file);
      }
      return file;
    },
  };
}

interface Figures {
  /** Milliseconds of wall time in the checker. */
  readonly checkMs: number;
  /** Milliseconds of CPU time over the same span, all threads of the process. */
  readonly cpuMs: number;
  readonly instantiations: number;
  readonly types: number;
  /** Heap in use after the check, after garbage collection, in MB. */
  readonly heapMB: number;
}

/** Checks the roots once with a fresh checker; a diagnostic in them is a broken fixture. */
function checkOnce(roots: readonly string[], generated: ReadonlyMap<string, string>): Figures {
  const program = ts.createProgram({ rootNames: roots, options, host: hostWith(generated) });
  // Binding happens here, outside the timed part, as tsc counts it apart from the check.
  program.getTypeChecker();
  collectGarbage();
  const cpuStart = process.cpuUsage();
  const start = performance.now();
  const diagnostics = roots.flatMap((f) => program.getSemanticDiagnostics(program.getSourceFile(f)));
  const checkMs = performance.now() - start;
  const cpu = process.cpuUsage(cpuStart);
  if (diagnostics.length > 0) {
    const text = ts.formatDiagnostics(diagnostics, { ...baseHost, getNewLine: () => "\n" });
    throw new Error(`the measured code must type-check without errors:\n${text}`);
  }
  collectGarbage();
  return {
    checkMs,
    cpuMs: (cpu.user + cpu.system) / 1000,
    instantiations: program.getInstantiationCount(),
    types: program.getTypeCount(),
    heapMB: process.memoryUsage().heapUsed / 2 ** 20,
  };
}

/**
 * The fastest of `repeat` checks (the counts are the same each time), and the check time of the
 * first: that one also runs the checker's code before the JIT compiler has optimised it, as a
 * user's single tsc run does.
 */
function measure(roots: readonly string[], generated: ReadonlyMap<string, string> = new Map()): Figures & { firstMs: number } {
  const runs = Array.from({ length: repeat }, () => checkOnce(roots, generated));
  const best = runs.reduce((fastest, run) => (run.checkMs < fastest.checkMs ? run : fastest));
  return { ...best, firstMs: runs[0]!.checkMs };
}

/** One construct of user code, written as an expression in a program body (see constructUse). */
interface Construct {
  readonly name: string;
  readonly expression: string;
}

const constructs: readonly Construct[] = [
  { name: "add in map", expression: "map((xm) => add(xm, 1), x)" },
  { name: "matmul in map", expression: "map((wm, xm) => matmul(xm, wm), broadcast(params.w), x)" },
  { name: "dense layer in map", expression: "map((p, xm) => relu(add(matmul(xm, p.w), p.b)), broadcast(params), x)" },
  { name: "loss in map", expression: "map((p, xm, ym) => loss(p, xm, ym), broadcast(params), x, y)" },
  { name: "grad in map", expression: "map((p, xm, ym) => grad(loss)(p, xm, ym), broadcast(params), x, y)" },
  {
    name: "scan of SGD steps in map",
    expression: "map((p, xs, ys) => scan(p, { xs, ys }, (q, b) => [sub(q, mul(grad(loss)(q, b.xs, b.ys), 0.1)), undefined] as const)[0], broadcast(params), batches, batchLabels)",
  },
  { name: "conv2d + maxPool2d in map", expression: "map((f, im) => maxPool2d(relu(conv2d(im, f)), 2), broadcast(filter), images)" },
  { name: "reshape in map", expression: "map((xm) => reshape(xm, [-1, 28, 28, 1]), x)" },
  { name: "accuracy in map", expression: "map((p, xm, ym) => mean(cast(equal(argmax(matmul(xm, p.w)), ym), \"float32\")), broadcast(params), x, y)" },
  { name: "reduceMean(map(mean))", expression: "reduceMean(map((xm) => mean(xm), x))" },
  { name: "tree update at the server", expression: "sub(params, mul(div(params, add(sqrt(mul(params, params)), 1e-3)), 0.01))" },
  { name: "reduceWeightedMean of a tree", expression: "reduceWeightedMean(broadcast(params), n)" },
  {
    name: "aggregate histogram",
    expression: "aggregate(y, { zero: () => zeros([10]), accumulate: (acc, ym) => add(acc, sum(oneHot(ym, 10), 0)), merge: (a, b) => add(a, b), report: (acc) => acc })",
  },
];

const constructImports = `import {
  add, aggregate, argmax, atClients, atServer, broadcast, cast, conv2d, div, equal, f32, grad, i32, map, matmul, maxPool2d,
  mean, mul, oneHot, program, reduceMean, reduceWeightedMean, relu, reshape, scan, sparseSoftmaxCrossEntropy, sqrt, sub, sum,
  zeros, type Tensor,
} from "../../../dist/src/index.js";
type Params = { w: Tensor<[784, 10], "float32", "member">; b: Tensor<[10], "float32", "member"> };
`;

/**
 * One use of the construct (none for undefined) in a program of its own. Each use names its
 * batch dim apart ("B0", "B1", ...), so that its types are new to the checker, as in real code,
 * rather than found in the caches that the use before it filled.
 */
function constructUse(use: number, construct: Construct | undefined): string {
  const batch = `"B${use}"`;
  const computed = construct === undefined ? "" : `, ${construct.expression}`;
  return `export const measured${use} = program(
  {
    params: atServer({ w: f32([784, 10]), b: f32([10]) }),
    filter: atServer(f32([5, 5, 1, 32])),
    x: atClients(f32([${batch}, 784])),
    y: atClients(i32([${batch}])),
    n: atClients(f32([])),
    images: atClients(f32([${batch}, 28, 28, 1])),
    batches: atClients(f32(["S", ${batch}, 784])),
    batchLabels: atClients(i32(["S", ${batch}])),
  },
  ({ params, filter, x, y, n, images, batches, batchLabels }) => {
    const loss = (p: Params, xb: Tensor<[${batch}, 784], "float32", "member">, yb: Tensor<[${batch}], "int32", "member">) =>
      mean(sparseSoftmaxCrossEntropy(add(matmul(xb, p.w), p.b), yb));
    return [params, filter, x, y, n, images, batches, batchLabels, loss${computed}];
  },
);
`;
}

const constructUses = 20;

/** A generated file of constructUses programs, each using the construct once (or not at all). */
function constructProgram(construct: Construct | undefined): { file: string; files: Map<string, string> } {
  const uses = Array.from({ length: constructUses }, (_, use) => constructUse(use, construct));
  const file = join(fixtureDir, "construct.generated.ts");
  return { file, files: new Map([[file, constructImports + uses.join("")]]) };
}

const baselineFile = join(fixtureDir, "baseline.generated.ts");
const baselineSource = new Map([[baselineFile, `import { program } from "../../../dist/src/index.js";\nexport type Unused = typeof program;\n`]]);

const countLines = (file: string): number => readFileSync(file, "utf8").split("\n").filter((line) => line.trim() !== "").length;
const fixtureLines = fixtureFiles.reduce((total, f) => total + countLines(f), 0);

const row = (name: string, f: Figures & { firstMs: number }): string =>
  `  ${name.padEnd(30)} ${f.checkMs.toFixed(0).padStart(8)} ${f.firstMs.toFixed(0).padStart(8)} ${f.cpuMs.toFixed(0).padStart(8)} ` +
  `${String(f.instantiations).padStart(14)} ${String(f.types).padStart(8)} ${f.heapMB.toFixed(1).padStart(9)}`;
const header =
  `  ${"".padEnd(30)} ${"check ms".padStart(8)} ${"first ms".padStart(8)} ${"cpu ms".padStart(8)} ` +
  `${"instantiations".padStart(14)} ${"types".padStart(8)} ${"heap MB".padStart(9)}`;

const baseline = measure([baselineFile], baselineSource);
const fixture = measure(fixtureFiles);

console.log(`type cost of test/fixtures/type-cost (${fixtureFiles.length} files, ${fixtureLines} non-blank lines), best of ${repeat}:`);
console.log(header);
console.log(row("baseline (imports the library)", baseline));
console.log(row("fixture", fixture));
const checkMs = fixture.checkMs - baseline.checkMs;
const instantiations = fixture.instantiations - baseline.instantiations;
console.log(
  `  fixture less baseline: ${(checkMs / 1000).toFixed(2)} s check (first run ${((fixture.firstMs - baseline.firstMs) / 1000).toFixed(2)} s; target under 2 s), ` +
    `${instantiations} instantiations (target under 500000), ` +
    `${fixture.types - baseline.types} types, ${(fixture.heapMB - baseline.heapMB).toFixed(1)} MB heap`,
);

if (values.constructs) {
  const none = constructProgram(undefined);
  console.log(`\nper construct (${constructUses} programs with one use each, less the same programs without it), per use:`);
  console.log(`  ${"".padEnd(34)} ${"check ms".padStart(8)} ${"instantiations".padStart(14)}`);
  for (const construct of constructs) {
    const generated = constructProgram(construct);
    // The programs without it are measured again next to each construct: the JIT compiler keeps
    // optimising the checker, and a difference of a few milliseconds per use needs like with like.
    const empty = measure([none.file], none.files);
    const f = measure([generated.file], generated.files);
    const perUse = (x: number, y: number): string => ((x - y) / constructUses).toFixed(1);
    console.log(`  ${construct.name.padEnd(34)} ${perUse(f.checkMs, empty.checkMs).padStart(8)} ${perUse(f.instantiations, empty.instantiations).padStart(14)}`);
  }
}
