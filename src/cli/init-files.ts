/**
 * The files `fedtensor init` writes: a project that depends on fedtensor, type-checks with the
 * checker plugin, runs its example with `npm start` (fedtensor exec) and tests it with
 * `npm test` (vitest for what it computes, tsd for what tsc must reject).
 *
 * The versions of TypeScript, vitest, tsd and @types/node are fedtensor's own (its package.json's
 * devDependencies), so a new project gets the versions fedtensor is tested with.
 */

/** What the files depend on: fedtensor's version and its own tool versions. */
export interface InitVersions {
  readonly fedtensor: string;
  readonly typescript: string;
  readonly vitest: string;
  readonly tsd: string;
  readonly typesNode: string;
  /** The packages whose install scripts a project never needs (fedtensor's own allowScripts). */
  readonly deniedScripts: readonly string[];
}

const json = (value: unknown): string => `${JSON.stringify(value, null, 2)}\n`;

function packageJson(name: string, v: InitVersions): string {
  return json({
    name,
    version: "0.1.0",
    private: true,
    type: "module",
    scripts: {
      start: "fedtensor exec src/main.ts",
      test: "vitest run && tsd --typings src/round.ts",
      check: "fedtensor check",
    },
    dependencies: { fedtensor: `^${v.fedtensor}` },
    devDependencies: { "@types/node": v.typesNode, tsd: v.tsd, typescript: v.typescript, vitest: v.vitest },
    tsd: { directory: "test-d" },
    // npm 11 runs no dependency's install script that is denied here, and lists any other it skipped.
    allowScripts: Object.fromEntries(v.deniedScripts.map((pkg) => [pkg, false])),
  });
}

// npm 10 does not read allowScripts; ignore-scripts is a setting both npm 10 and 11 know. No
// dependency of fedtensor needs its install script: onnxruntime-node's would fetch its CUDA
// provider from NuGet (docs/guide.md, "Your own project"); the others only print or check.
const npmrc = `# No dependency install scripts (npm 10 and 11): onnxruntime-node's would download its CUDA
# provider from NuGet; fedtensor needs none of them. \`npm start\` and \`npm test\` still run.
ignore-scripts=true
`;

const tsconfig = json({
  compilerOptions: {
    target: "ES2022",
    module: "NodeNext",
    moduleResolution: "NodeNext",
    // The DOM too: tfjs-core's declarations name its types (ImageData, WebGLTexture).
    lib: ["ES2022", "DOM"],
    types: ["node"],
    strict: true,
    noUncheckedIndexedAccess: true,
    verbatimModuleSyntax: true,
    noEmit: true,
    // As `tsc --init` sets it: the libraries' 679 declaration files are not re-checked on every
    // `npm start` (26 s of a check's 30 here); fedtensor's own are checked where it is built.
    skipLibCheck: true,
    plugins: [{ name: "fedtensor/checker-plugin" }],
  },
  include: ["src", "test", "vitest.config.ts"],
});

const vitestConfig = `import { defineConfig } from "vitest/config";

// This project's tests only, whatever folder it sits in.
export default defineConfig({ test: { include: ["test/**/*.test.ts"], testTimeout: 60_000 } });
`;

const round = `/**
 * One round of federated SGD for softmax regression: each client computes the gradient of its
 * mean loss on its own examples, the server averages the gradients weighted by example count
 * and steps. Placements are types: tsc rejects a SERVER value given to map without broadcast.
 */
import {
  argmax, atClients, atServer, broadcast, cast, div, equal, f32, grad, i32, map, matmul, mul, program,
  reduceSum, reduceWeightedMean, sparseSoftmaxCrossEntropy, sub, sum,
} from "fedtensor";

const inputs = {
  w: atServer(f32([2, 2])),
  x: atClients(f32(["N", 2])),
  y: atClients(i32(["N"])),
  mask: atClients(f32(["N"])),
  count: atClients(f32([])),
};

export const round = program({ ...inputs, lr: atServer(f32([])) }, ({ w, x, y, mask, count, lr }) => {
  const gradients = map(
    (wm, xm, ym, mm, cm) => {
      // Padding has mask 0: the loss is the mean over the client's real examples.
      const loss = (v: typeof wm) => div(sum(mul(sparseSoftmaxCrossEntropy(matmul(xm, v), ym), mm)), cm);
      return grad(loss)(wm);
    },
    broadcast(w),
    x,
    y,
    mask,
    count,
  );
  return sub(w, mul(lr, reduceWeightedMean(gradients, count)));
});

/** The fraction of all clients' examples the model classifies right. */
export const accuracy = program(inputs, ({ w, x, y, mask, count }) => {
  const correct = map((wm, xm, ym, mm) => sum(mul(cast(equal(argmax(matmul(xm, wm), -1), ym), "float32"), mm)), broadcast(w), x, y, mask);
  return div(reduceSum(correct), reduceSum(count));
});
`;

const train = `import { clientsFrom, fixedSizeSample, padClients, Rng } from "fedtensor/lib";
import { accuracy, round } from "./round.js";

/** Twenty clients, each with its own number of points labelled by the sign of x0 + x1. */
export function makeClients(seed: number) {
  const rng = Rng.fromSeed(seed);
  const clients = Array.from({ length: 20 }, () => {
    const n = rng.int(5, 25);
    const x = Array.from({ length: n }, () => [rng.normal(), rng.normal()]);
    return { x, y: x.map(([a, b]) => (a! + b! > 0 ? 1 : 0)) };
  });
  return clientsFrom(clients, { dtypes: { y: "int32" } });
}

/** The padded tensors of some clients (every client by default), as the programs take them. */
function tensorsOf(data: ReturnType<typeof makeClients>, clients?: ArrayLike<number>) {
  const { x, y, mask, count } = padClients(data, clients);
  return { x, y, mask, count };
}

/** FedSGD for \`rounds\` rounds, five clients a round; returns the final accuracy over every client. */
export async function train(rounds: number, seed = 0): Promise<number> {
  const data = makeClients(seed);
  const rng = Rng.fromSeed(seed + 1);
  let w: Awaited<ReturnType<typeof round.run>> | number[][] = [[0, 0], [0, 0]];
  for (let r = 0; r < rounds; r++) {
    const cohort = fixedSizeSample(data.clientIds.length, 5, rng.fork(\`cohort:\${r}\`));
    const next = await round.run({ ...tensorsOf(data, cohort), w, lr: 1 });
    if (!Array.isArray(w)) w.dispose();
    w = next;
  }
  const result = await accuracy.run({ ...tensorsOf(data), w });
  if (!Array.isArray(w)) w.dispose();
  const [value] = await result.data();
  result.dispose();
  return value!;
}
`;

const main = `import { train } from "./train.js";

console.log(\`accuracy after 20 rounds: \${((await train(20)) * 100).toFixed(1)}%\`);
`;

const test = `import { expect, test } from "vitest";
import { train } from "../src/train.js";

test("federated SGD learns the sign of x0 + x1", async () => {
  const before = await train(0);
  const after = await train(20);
  expect(after).toBeGreaterThan(0.9);
  expect(after).toBeGreaterThan(before);
});
`;

const typeTest = `/**
 * What tsc must accept and reject: tsd fails when an expectError line type-checks.
 */
import { expectError, expectType } from "tsd";
import { atClients, atServer, broadcast, f32, map, mul, program, reduceMean, type Tensor } from "fedtensor";

program({ w: atServer(f32([2])), x: atClients(f32(["N", 2])) }, ({ w, x }) => {
  expectType<Tensor<["N", 2], "float32", "clients">>(map((wm, xm) => mul(xm, wm), broadcast(w), x));
  // FT102: map() takes CLIENTS values; w is at the SERVER, broadcast it first.
  expectError(map((wm, xm) => mul(xm, wm), w, x));
  return reduceMean(x);
});
`;

const gitignore = "node_modules/\nruns/\n";

function readme(name: string): string {
  return `# ${name}

A federated program written with [FedTensor](https://www.npmjs.com/package/fedtensor).

\`\`\`sh
npm install    # .npmrc skips dependency install scripts: nothing is downloaded but npm packages
npm start      # fedtensor exec src/main.ts: type-check with the plugin's rules, then run
npm test       # vitest (what it computes) and tsd (what tsc must reject)
npm run check  # fedtensor check: every FT error explained
\`\`\`

- \`src/round.ts\`: the programs (one round of federated SGD, and evaluation).
- \`src/train.ts\`: the loop of rounds on twenty clients' data; \`src/main.ts\` runs it.
- \`test/\`: vitest tests; \`test-d/\`: type tests.
`;
}

/** Every file of a new project called `name`, by path relative to its folder. */
export function initFiles(name: string, versions: InitVersions): Record<string, string> {
  return {
    "package.json": packageJson(name, versions),
    ".npmrc": npmrc,
    ".gitignore": gitignore,
    "tsconfig.json": tsconfig,
    "vitest.config.ts": vitestConfig,
    "README.md": readme(name),
    "src/round.ts": round,
    "src/train.ts": train,
    "src/main.ts": main,
    "test/train.test.ts": test,
    "test-d/round.test-d.ts": typeTest,
  };
}
