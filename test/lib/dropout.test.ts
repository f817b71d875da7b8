/**
 * Dropped clients, for every algorithm of the library: a round in which some clients of the
 * cohort dropped out (left in the tensors with count 0 and every example masked) computes
 * what the same round on only the survivors computes, and a dropped client's own state
 * (SCAFFOLD's c_i) is left as it was. The CLI drops clients before batching (roundCohort);
 * the tests of that are at the end.
 */
import { describe, expect, test } from "vitest";
import { FedTensorError, type Program } from "../../src/index.js";
import { dilocoProgram } from "../../src/lib/algorithms/diloco.js";
import { fedAvgProgram } from "../../src/lib/algorithms/fedavg.js";
import { fedOptProgram } from "../../src/lib/algorithms/fedopt.js";
import { fedAvgMProgram } from "../../src/lib/algorithms/fedavgm.js";
import { adam } from "../../src/lib/optimizers/optimizers.js";
import { fedProxProgram } from "../../src/lib/algorithms/fedprox.js";
import { fedSgdProgram } from "../../src/lib/algorithms/fedsgd.js";
import { scaffoldProgram } from "../../src/lib/algorithms/scaffold.js";
import { aflProgram } from "../../src/lib/algorithms/afl.js";
import { initialMimeState, mimeProgram } from "../../src/lib/algorithms/mime.js";
import { qfflProgram } from "../../src/lib/algorithms/qffl.js";
import { filledLike, initialAdaptiveState } from "../../src/lib/algorithms/server-optimizers.js";
import type { CohortBatches } from "../../src/lib/data/federated.js";
import { batchCohort, federate, roundCohort } from "../../src/lib/data/federated.js";
import { dropClients } from "../../src/lib/data/dropout.js";
import { labelledDataset } from "../../src/lib/data/dataset.js";
import { partitionIid } from "../../src/lib/data/partition.js";
import { Rng } from "../../src/lib/random.js";
import { batchInputs, read, separableCohort, tiny } from "./helpers.js";

type Batches = CohortBatches<Float32Array>;
type HostTree = { shape: number[]; data: Float32Array | Int32Array } | { [key: string]: HostTree };

const cohort = separableCohort([12, 7, 4, 9], 4);
const dropped = [1, 3];
const survivors = [0, 2];

/** The rows `clients` of a [C, ...] host tensor. */
function rows<D extends Float32Array | Int32Array>(t: { shape: number[]; data: D }, clients: readonly number[]): { shape: number[]; data: D } {
  const [all, ...rest] = t.shape as [number, ...number[]];
  const size = t.data.length / all;
  const data = new (t.data.constructor as new (n: number) => D)(clients.length * size);
  clients.forEach((client, i) => data.set(t.data.subarray(client * size, (client + 1) * size), i * size));
  return { shape: [clients.length, ...rest], data };
}

/** The same cohort where `gone` dropped out: they stay in the tensors, with count 0 and every example masked. */
function withDropped(batches: Batches, gone: readonly number[]): Batches {
  const perClient = batches.mask.data.length / batches.count.data.length;
  const mask = Float32Array.from(batches.mask.data, (m, i) => (gone.includes(Math.floor(i / perClient)) ? 0 : m));
  const count = Float32Array.from(batches.count.data, (c, i) => (gone.includes(i) ? 0 : c));
  return { ...batches, mask: { ...batches.mask, data: mask }, count: { ...batches.count, data: count } };
}

function onlyClients(batches: Batches, kept: readonly number[]): Batches {
  return { x: rows(batches.x, kept), y: rows(batches.y, kept), mask: rows(batches.mask, kept), count: rows(batches.count, kept), clients: Int32Array.from(kept) };
}

const params0 = tiny.init(Rng.fromSeed(0));
const zeros = filledLike(params0, 0);
const perClient = (n: number) => ({ w: { shape: [n, 2, 2], data: new Float32Array(4 * n) }, b: { shape: [n, 2], data: new Float32Array(2 * n) } });

interface Case {
  readonly name: string;
  readonly program: Program<never, unknown>;
  readonly hypers: Record<string, number>;
  /** Server state inputs, and SCAFFOLD's per-client ones. */
  readonly state: Record<string, unknown>;
  readonly clientState?: string;
  /** AFL's client positions among all clients, one per client of the cohort (its `client` input). */
  readonly positions?: readonly number[];
}

const cases: Case[] = [
  { name: "FedAvg", program: fedAvgProgram(tiny) as never, hypers: { lr: 0.5 }, state: {} },
  { name: "FedSGD", program: fedSgdProgram(tiny) as never, hypers: { lr: 1 }, state: {} },
  { name: "FedProx", program: fedProxProgram(tiny) as never, hypers: { lr: 0.5, mu: 0.1 }, state: {} },
  { name: "FedAdam", program: fedOptProgram(tiny, { optimizer: "adam" }) as never, hypers: { lr: 0.5, serverLr: 0.3 }, state: { state: initialAdaptiveState(params0) } },
  { name: "FedYogi", program: fedOptProgram(tiny, { optimizer: "yogi" }) as never, hypers: { lr: 0.5, serverLr: 0.3 }, state: { state: initialAdaptiveState(params0) } },
  { name: "FedAdagrad", program: fedOptProgram(tiny, { optimizer: "adagrad" }) as never, hypers: { lr: 0.5, serverLr: 1 }, state: { state: initialAdaptiveState(params0) } },
  { name: "SCAFFOLD (participation)", program: scaffoldProgram(tiny, { participation: 0.4 }) as never, hypers: { lr: 0.5, serverLr: 1 }, state: { control: zeros, clientControls: perClient(4) }, clientState: "clientControls" },
  { name: "SCAFFOLD (totalClients)", program: scaffoldProgram(tiny, { totalClients: 10 }) as never, hypers: { lr: 0.5, serverLr: 1 }, state: { control: zeros, clientControls: perClient(4) }, clientState: "clientControls" },
  { name: "DiLoCo", program: dilocoProgram(tiny) as never, hypers: { lr: 0.5, serverLr: 0.7 }, state: { buffer: zeros } },
  { name: "FedAvgM", program: fedAvgMProgram(tiny) as never, hypers: { lr: 0.5, serverLr: 0.5 }, state: { buffer: zeros } },
  { name: "FedAvg, Adam clients", program: fedAvgProgram(tiny, { clientOptimizer: (lr) => adam(lr) }) as never, hypers: { lr: 0.1 }, state: {} },
  { name: "Mime", program: mimeProgram(tiny, "mime") as never, hypers: { lr: 0.2, serverLr: 1 }, state: { state: initialMimeState(tiny, params0) } },
  { name: "MimeLite", program: mimeProgram(tiny, "mimelite") as never, hypers: { lr: 0.2, serverLr: 1 }, state: { state: initialMimeState(tiny, params0) } },
  { name: "q-FFL", program: qfflProgram(tiny) as never, hypers: { lr: 0.5, q: 2 }, state: {} },
  {
    name: "AFL",
    program: aflProgram(tiny, { clients: 6 }) as never,
    hypers: { lr: 0.5, aflLr: 0.05 },
    state: { lambda: { shape: [6], data: Float32Array.of(0.1, 0.2, 0.3, 0.15, 0.05, 0.2) } },
    positions: [5, 1, 0, 3],
  },
];

type Outputs = Record<string, unknown>;
/** Runs a round on `batches`, whose clients are `clients` of the cohort (AFL's positions follow them). */
const run = async (c: Case, inputs: Record<string, unknown>, batches: Batches, clients: readonly number[] = [0, 1, 2, 3]): Promise<Outputs> => {
  const positions = c.positions === undefined ? {} : { client: clients.map((i) => c.positions![i]!) };
  return (await read(await c.program.run({ ...inputs, ...batchInputs(batches), ...positions, ...c.hypers } as never))) as Outputs;
};

/** Nested arrays of numbers as a host tree [C, ...] again, to feed a program. */
function hostOf(value: unknown): HostTree {
  if (typeof value === "number") return { shape: [], data: Float32Array.of(value) };
  if (!Array.isArray(value)) return Object.fromEntries(Object.entries(value as object).map(([k, v]) => [k, hostOf(v)]));
  const shape: number[] = [];
  for (let v: unknown = value; Array.isArray(v); v = v[0]) shape.push(v.length);
  return { shape, data: Float32Array.from((value as unknown[]).flat(Infinity) as number[]) };
}

function expectClose(actual: unknown, expected: unknown, path = "output"): void {
  if (typeof expected === "number") {
    expect(Math.abs((actual as number) - expected), path).toBeLessThan(1e-6 * Math.max(1, Math.abs(expected)));
  } else if (Array.isArray(expected)) {
    expect((actual as unknown[]).length, path).toBe(expected.length);
    expected.forEach((e, i) => expectClose((actual as unknown[])[i], e, `${path}[${i}]`));
  } else {
    for (const [k, e] of Object.entries(expected as object)) expectClose((actual as Record<string, unknown>)[k], e, `${path}.${k}`);
  }
}

const pick = (tree: unknown, clients: readonly number[]): unknown =>
  Array.isArray(tree) ? clients.map((c) => tree[c]) : Object.fromEntries(Object.entries(tree as object).map(([k, v]) => [k, pick(v, clients)]));

describe.each(cases)("$name with dropped clients", (c) => {
  test("equals the round on only the survivors, and leaves the dropped clients' state alone", async () => {
    // From the state after one full round, so that momenta and control variates are not zero.
    const first = await run(c, { params: params0, ...c.state }, cohort);
    const state = Object.fromEntries(Object.keys(c.state).map((key) => [key, hostOf(first[key])]));
    const params = hostOf(first.params);
    const withDrops = await run(c, { params, ...state }, withDropped(cohort, dropped));
    const survivorState = c.clientState === undefined ? state : { ...state, [c.clientState]: hostOf(pick(first[c.clientState], survivors)) };
    const onlySurvivors = await run(c, { params, ...survivorState }, onlyClients(cohort, survivors), survivors);
    const { [c.clientState ?? ""]: perClientOut, ...serverOut } = withDrops;
    const { [c.clientState ?? ""]: survivorsOut, ...serverExpected } = onlySurvivors;
    expectClose(serverOut, serverExpected);
    if (c.clientState !== undefined) {
      expectClose(pick(perClientOut, survivors), survivorsOut);
      expectClose(pick(perClientOut, dropped), pick(first[c.clientState], dropped));
    }
  });

  test("a round in which every client dropped is FT310, not NaN weights", async () => {
    const error = await run(c, { params: params0, ...c.state }, withDropped(cohort, [0, 1, 2, 3])).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FedTensorError);
    expect((error as FedTensorError).message).toMatch(/^FT310: \w+ input count: all 4 clients have count 0 \(empty or dropped\)/);
  });
});

describe("dropout in the CLI's rounds (roundCohort)", () => {
  const x = Float32Array.from({ length: 200 * 2 }, (_, i) => Math.sin(i));
  const y = Int32Array.from({ length: 200 }, (_, i) => i % 2);
  const train = labelledDataset("train", { x, y, featureShape: [2], numClasses: 2 });
  const dataset = federate(train, train, partitionIid(200, 20, Rng.fromSeed(1)));
  const options = { rng: Rng.fromSeed(5), round: 3, clientsPerRound: 10, batchSize: 4 };

  test("drops a seeded share of the sampled clients and batches the survivors exactly as a cohort of only them", () => {
    const full = roundCohort(dataset, options);
    const withDropout = roundCohort(dataset, { ...options, dropout: 0.4 });
    expect(roundCohort(dataset, { ...options, dropout: 0.4 })).toEqual(withDropout);
    expect(withDropout.dropped.length).toBeGreaterThan(0);
    expect([...withDropout.clients, ...withDropout.dropped].sort((a, b) => a - b)).toEqual([...full.clients]);
    const roundRng = options.rng.fork(`round:${options.round}`);
    const survivorsOnly = batchCohort(dataset, withDropout.clients, { batchSize: 4, rng: roundRng.fork("batches") });
    expect(withDropout).toEqual({ ...survivorsOnly, dropped: withDropout.dropped });
    // No dropout draws nothing: the round is the one of a run without the option.
    expect(roundCohort(dataset, { ...options, dropout: 0 })).toEqual(full);
  });

  test("drops each client with the given probability", () => {
    const cohort = Int32Array.from({ length: 10_000 }, (_, i) => i);
    const { dropped: gone, survivors: kept } = dropClients(cohort, 0.3, Rng.fromSeed(2));
    expect(gone.length + kept.length).toBe(10_000);
    expect(Math.abs(gone.length / 10_000 - 0.3)).toBeLessThan(0.02);
    expect(() => dropClients(cohort, 1, Rng.fromSeed(2))).toThrow("FT305: dropout: expected a probability 0 <= p < 1, got 1");
  });
});
