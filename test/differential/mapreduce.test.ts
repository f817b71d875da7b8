/**
 * Differential tests of MapReduce form: for random programs (forward and gradient programs,
 * their SERVER outputs), the parts run over a random grouping of the clients into chunks, on
 * the reference interpreter and on each backend, give what the reference interpreter gives for
 * the whole program. Programs that have no MapReduce form must be refused with FT313-FT315.
 */
import fc from "fast-check";
import { expect, test } from "vitest";
import * as tf from "@tensorflow/tfjs";
import { FedTensorError } from "../../src/errors/error.js";
import { interpret, type InputTree } from "../../src/interpret/reference.js";
import type { ProgramIR } from "../../src/ir/types.js";
import { driveRound, runStreamed, type PartRunner } from "../../src/runtime/mapreduce.js";
import { mapReduceForm, type MapReduceForm } from "../../src/transform/mapreduce.js";
import { differences, toHost } from "./compare.js";
import { propertySettings, type Backend } from "./harness.js";
import { forwardProgram, gradientProgram, type GeneratedProgram } from "./programs.js";
import { gradientRecipe, programRecipe } from "./recipe.js";
import { add, aggregate, atClients, div, f32, full, maximum, mul, program, sqrt, zeros } from "../../src/index.js";
import { dilocoProgram } from "../../src/lib/algorithms/diloco.js";
import { fedAvgProgram } from "../../src/lib/algorithms/fedavg.js";
import { fedOptProgram } from "../../src/lib/algorithms/fedopt.js";
import { fedProxProgram } from "../../src/lib/algorithms/fedprox.js";
import { fedSgdProgram } from "../../src/lib/algorithms/fedsgd.js";
import { initialAdaptiveState } from "../../src/lib/algorithms/server-optimizers.js";
import type { HostParam } from "../../src/lib/models/model.js";
import { batchInputs, host, separableCohort, tiny } from "../lib/helpers.js";
import { deadline } from "../helpers/deadline.js";

/**
 * The program with only its SERVER and local outputs (a forward program returns every value it
 * computes), or undefined when none is left.
 */
function serverOutputs(ir: ProgramIR): ProgramIR | undefined {
  const outputs = ir.graph.outputs.filter((id) => ir.values[id]!.placement === "server" || ir.values[id]!.placement === "local");
  if (outputs.length === 0) return undefined;
  return { ...ir, graph: { ...ir.graph, outputs }, outputTree: outputs.map((_, i) => i) };
}

/** Consecutive chunks of the clients, with sizes taken from `sizes` in turn. */
function chunksOf(g: GeneratedProgram, ir: ProgramIR, sizes: readonly number[]): InputTree[] {
  // The programs here take their CLIENTS inputs as top-level leaves.
  const tree = ir.inputTree as Record<string, unknown>;
  const atClients = Object.keys(tree).filter((name) => typeof tree[name] === "number" && ir.values[ir.graph.inputs[tree[name] as number]!]!.placement.startsWith("clients"));
  const chunks: InputTree[] = [];
  for (let start = 0, k = 0; start < g.clients; k++) {
    const end = Math.min(g.clients, start + sizes[k % sizes.length]!);
    chunks.push(
      Object.fromEntries(
        atClients.map((name) => {
          const { shape, data } = g.inputs[name] as { shape: number[]; data: number[] };
          const row = data.length / shape[0]!;
          return [name, { shape: [end - start, ...shape.slice(1)], data: data.slice(start * row, end * row) }];
        }),
      ),
    );
    start = end;
  }
  return chunks;
}

const interpreter = (clients: number): PartRunner<unknown> => ({
  run: async (part, inputs, atClients) => interpret(part.ir, inputs as InputTree, atClients ? {} : { clients }),
  dispose: () => {},
});

/**
 * Runs the parts over the chunks on the interpreter and on each backend; throws on any
 * disagreement. With `arbitraryAggregates` (the generator's), programs that use aggregate() are
 * skipped: only an aggregation whose merge is associative with zero() as its identity (TFF's
 * requirement, tested below with such functions) is the same over every grouping of the
 * clients, and the generator's functions are arbitrary (the whole program groups by halves).
 */
async function checkForm(g: GeneratedProgram, sizes: readonly number[], backends: readonly Backend[], stats: { formed: number; refused: number }, arbitraryAggregates = false): Promise<void> {
  const ir = serverOutputs(g.program.ir);
  if (ir === undefined) return;
  if (arbitraryAggregates && ir.graph.nodes.some((n) => n.op === "aggregate")) return;
  let form: MapReduceForm;
  try {
    form = mapReduceForm(ir, { cohortSize: g.clients });
  } catch (error) {
    expect((error as FedTensorError).code).toMatch(/^FT31[345]$/);
    stats.refused++;
    return;
  }
  stats.formed++;
  const want = interpret(ir, g.inputs, { clients: g.clients });
  const chunks = chunksOf(g, ir, sizes);
  const round = { inputs: g.inputs, cohortSize: g.clients, chunks };
  const fail = (where: string, found: string[]) => new Error(`${where} disagrees with the whole program (chunks ${chunks.map((c) => (Object.values(c)[0] as { shape: number[] }).shape[0]).join("+")}):\n${found.join("\n")}\n\n${g.code}\n\ninputs: ${JSON.stringify(g.inputs)}`);
  for (const fused of [true, false]) {
    const reference = differences((await driveRound(ir, form, round, interpreter(g.clients), fused)) as never, want);
    if (reference.length > 0) throw fail(`the parts on the reference interpreter (work and accumulate ${fused ? "fused" : "apart"})`, reference);
  }
  for (const backend of backends) {
    for (const fused of [true, false]) {
      const out = await runStreamed(ir, round, { backend }, fused);
      const found = differences(await toHost(out), want);
      tf.dispose(out as tf.TensorContainer);
      if (found.length > 0) throw fail(`the parts on ${backend} (work and accumulate ${fused ? "fused" : "apart"})`, found);
    }
  }
}

const chunkSizes = fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 1, maxLength: 3 });

const agreeOn = (make: (recipe: never) => GeneratedProgram, recipes: fc.Arbitrary<unknown>, backends: readonly Backend[], seed: number, runs: number) => async () => {
  const stats = { formed: 0, refused: 0 };
  await fc.assert(
    fc.asyncProperty(recipes, chunkSizes, async (recipe, sizes) => checkForm(make(recipe as never), sizes, backends, stats, true)),
    propertySettings(seed, runs),
  );
  // Most random programs broadcast before they aggregate and return server values: one round.
  expect(stats.formed).toBeGreaterThan(runs / 4);
};

test("random forward programs in MapReduce form agree over any grouping of the clients (interpreter, onnx, wasm)", agreeOn(forwardProgram, programRecipe, ["onnx", "wasm"], 1313, 70), deadline(300_000));

test("random forward programs in MapReduce form agree on cpu", agreeOn(forwardProgram, programRecipe, ["cpu"], 1314, 40), deadline(300_000));

/**
 * The generated gradient programs take the mean of values computed at the server from an
 * aggregation's result, so their backward pass broadcasts a cotangent computed from it: two
 * rounds. They must be refused, never cut wrong.
 */
test("random gradient programs that need a second round are refused with FT313 or FT315", () => {
  for (const recipe of fc.sample(gradientRecipe, { seed: 1315, numRuns: 60 })) {
    const g = gradientProgram(recipe);
    expect(() => mapReduceForm(g.program.ir, { cohortSize: g.clients })).toThrow(/^FT31[35]: /);
  }
});

/** A tiny problem's inputs: params, a cohort of ragged clients (padded), lr, and the algorithm's extras. */
function roundInputs(sizes: readonly number[], seed: number) {
  const cohort = separableCohort(sizes, 3, seed);
  const params = { w: host([2, 2], [0.3, -0.2, 0.1, 0.4]), b: host([2], [0.05, -0.05]) };
  const zeros = { w: host([2, 2], [0, 0, 0, 0]), b: host([2], [0, 0]) };
  return { cohort, inputs: { params, ...batchInputs(cohort), lr: 0.3, mu: 0.1, serverLr: 0.5, state: initialAdaptiveState(params as never, 1e-3), buffer: zeros } };
}

const algorithms = {
  fedavg: fedAvgProgram(tiny),
  fedsgd: fedSgdProgram(tiny),
  fedprox: fedProxProgram(tiny),
  fedadam: fedOptProgram(tiny, { optimizer: "adam", beta1: 0.9, beta2: 0.99, tau: 1e-3 }),
  diloco: dilocoProgram(tiny, { momentum: 0.9 }),
} as const;

test("the library's round programs (gradients, server optimisers) in MapReduce form agree over any grouping of the clients", async () => {
  const names = Object.keys(algorithms) as (keyof typeof algorithms)[];
  const stats = { formed: 0, refused: 0 };
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(...names), fc.array(fc.integer({ min: 1, max: 7 }), { minLength: 1, maxLength: 6 }), chunkSizes, fc.integer({ min: 1, max: 99 }), async (name, sizes, chunking, seed) => {
      const p = algorithms[name] as unknown as { ir: ProgramIR; program?: never };
      const { inputs } = roundInputs(sizes, seed);
      const ir = p.ir;
      const used = Object.fromEntries(Object.keys(ir.inputTree as object).map((k) => [k, (inputs as Record<string, unknown>)[k]]));
      const host = hostInputs(used);
      const g: GeneratedProgram = { program: p as never, code: name, inputs: host, clients: sizes.length };
      await checkForm(g, chunking, ["onnx", "wasm"], stats);
    }),
    propertySettings(1316, 20),
  );
  // Every one of them has a MapReduce form (fedtensor run streams them): a refusal would pass checkForm unchecked.
  expect(stats).toEqual({ formed: 20, refused: 0 });
}, deadline(300_000));

/** Host tensors ({shape, Float32Array}) and numbers as the interpreter's input data. */
function hostInputs(tree: unknown): InputTree {
  const walk = (x: unknown): unknown =>
    typeof x === "number" ? x : "data" in (x as object) ? { shape: [...(x as HostParam).shape], data: Array.from((x as HostParam).data) } : Object.fromEntries(Object.entries(x as object).map(([k, v]) => [k, walk(v)]));
  return walk(tree) as InputTree;
}

test("an aggregate() whose merge is associative with zero() as identity gives the same result over any grouping", async () => {
  // Sum of squares, count and the largest member: a lawful accumulator of three leaves.
  const stats = program({ x: atClients(f32([3])) }, ({ x }) =>
    aggregate(x, {
      zero: () => ({ squares: zeros([3]), n: zeros([]), top: full([3], -1e30) }),
      accumulate: (acc, m) => ({ squares: add(acc.squares, mul(m, m)), n: add(acc.n, 1), top: maximum(acc.top, m) }),
      merge: (a, b) => ({ squares: add(a.squares, b.squares), n: add(a.n, b.n), top: maximum(a.top, b.top) }),
      report: (acc) => ({ rms: sqrt(div(acc.squares, acc.n)), top: acc.top }),
    }),
  );
  await fc.assert(
    fc.asyncProperty(fc.integer({ min: 1, max: 9 }), chunkSizes, fc.integer(), async (clients, chunking, seed) => {
      const data = Array.from({ length: clients * 3 }, (_, i) => (((i * 7919 + seed) % 33) - 16) / 8);
      const g: GeneratedProgram = { program: stats as never, code: "sum of squares, count, max", inputs: { x: { shape: [clients, 3], data } }, clients };
      const counts = { formed: 0, refused: 0 };
      await checkForm(g, chunking, ["onnx", "wasm", "cpu"], counts);
      expect(counts.formed).toBe(1);
    }),
    propertySettings(1317, 15),
  );
}, deadline(300_000));
