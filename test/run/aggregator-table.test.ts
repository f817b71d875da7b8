/**
 * Every algorithm of --algorithm against every representative aggregator chain
 * (representativeChains(), generated from the stages), each for 3 rounds through the runner
 * `fedtensor run` uses (rounds.ts: keys, state, whole-cohort and streamed paths) on a tiny
 * softmax regression and 5 clients (quantize with the Hadamard rotation): each cell runs, with finite parameters, or is refused by
 * the run's options with an FT305 and its reason. The result is docs/algorithms.md's table
 * (FEDTENSOR_UPDATE_DOCS=1 rewrites it; otherwise it must match).
 */
import { readFileSync, writeFileSync } from "node:fs";
import * as tf from "@tensorflow/tfjs";
import { expect, test } from "vitest";
import type { RoundSample } from "../../src/lib/data/federated.js";
import type { HostData } from "../../src/lib/data/host-tensor.js";
import { RunSecret } from "../../src/lib/privacy/secret.js";
import { Rng } from "../../src/lib/random.js";
import { representativeChains } from "../../src/lib/run/aggregator-chain.js";
import { validateRunConfig } from "../../src/lib/run/config.js";
import { runnerFor, type DeviceTree, type TrainingState } from "../../src/lib/run/rounds.js";
import { algorithmNames } from "../../src/lib/run/run-options.js";
import { separableCohort, tiny } from "../lib/helpers.js";
import { deadline } from "../helpers/deadline.js";
import { ClientStateStore } from "../../src/lib/run/client-state.js";

const examples = [6, 4, 5, 6, 3];
const cohort = separableCohort(examples, 3);
const steps = cohort.mask.shape[1]!;
/** The same five clients every round; a chunk of them (the streamed path) gets its own rows. */
const sample: RoundSample<HostData> = {
  clients: Int32Array.from(examples, (_, i) => i),
  dropped: new Int32Array(0),
  steps: () => steps,
  batch: (group) => {
    const rows = Array.from(group);
    const pick = <D extends Float32Array | Int32Array>(t: { shape: number[]; data: D }) => {
      const size = t.data.length / t.shape[0]!;
      const data = new (t.data.constructor as new (n: number) => D)(rows.length * size);
      rows.forEach((row, i) => data.set(t.data.subarray(row * size, (row + 1) * size), i * size));
      return { shape: [rows.length, ...t.shape.slice(1)], data };
    };
    return { x: pick(cohort.x), y: pick(cohort.y), mask: pick(cohort.mask), count: pick(cohort.count), clients: Int32Array.from(rows) };
  },
};
const clientIndices = examples.map((n) => new Int32Array(n));
const secret = RunSecret.fromInsecureSeed(7);

const toDevice = (tree: unknown): DeviceTree =>
  typeof tree === "object" && tree !== null && "data" in tree && "shape" in tree
    ? tf.tensor((tree as { data: Float32Array }).data, (tree as { shape: number[] }).shape)
    : Array.isArray(tree)
      ? tree.map(toDevice)
      : (Object.fromEntries(Object.entries(tree as object).map(([k, v]) => [k, toDevice(v)])) as DeviceTree);

/** "runs", or the FT305 reason; anything else fails the test. */
async function cell(algorithm: string, aggregator: string): Promise<string> {
  let config;
  try {
    config = validateRunConfig(
      { algorithm, aggregator, model: "logistic", clients: examples.length, clientsPerRound: examples.length, backend: "cpu", lr: 0.1, ...(aggregator.includes("quantize") ? { quantizeBits: 4, quantizeRotation: true } : {}) },
      "table",
    );
  } catch (error) {
    const message = (error as Error).message;
    expect(message).toMatch(/^FT305: /);
    return message.replace(/^FT305: aggregator \(in table\): /, "").replace(/^FT305: /, "");
  }
  const runner = runnerFor(config, tiny, { clientIndices }, secret);
  const params = tiny.init(Rng.fromSeed(0));
  let state: TrainingState = { params: toDevice(params), server: toDevice(runner.initialServerState(params as never)), clients: new ClientStateStore() };
  for (let round = 1; round <= 3; round++) {
    const next = await runner.round(state, sample, config, { round });
    next.loss?.dispose();
    tf.dispose([state.params, state.server] as never);
    state = next.state;
  }
  const values = await Promise.all(Object.values(state.params as Record<string, tf.Tensor>).map((t) => t.data()));
  tf.dispose([state.params, state.server] as never);
  expect(values.flatMap((v) => Array.from(v)).every(Number.isFinite), `${algorithm} with ${aggregator}`).toBe(true);
  return "runs";
}

const START = "<!-- aggregator-table:start (test/run/aggregator-table.test.ts writes this) -->";
const END = "<!-- aggregator-table:end -->";

test("every algorithm with every aggregator chain: 3 rounds, or an FT305 with its reason (docs/algorithms.md's table)", async () => {
  const chains = representativeChains();
  expect(chains).toContain("clip,dp,secure");
  const reasons: string[] = [];
  const rows: string[] = [];
  for (const algorithm of algorithmNames) {
    const cells: string[] = [];
    for (const chain of chains) {
      const result = await cell(algorithm, chain);
      if (result === "runs") cells.push("runs");
      else {
        const reason = result.replace(/^--algorithm \S+ cannot take --aggregator \S+: /, "");
        if (!reasons.includes(reason)) reasons.push(reason);
        cells.push(`FT305 (${reasons.indexOf(reason) + 1})`);
      }
    }
    rows.push(`| ${algorithm} | ${cells.join(" | ")} |`);
  }
  const table = [
    START,
    `| algorithm | ${chains.map((c) => `\`${c}\``).join(" | ")} |`,
    `| --- | ${chains.map(() => "---").join(" | ")} |`,
    ...rows,
    "",
    ...reasons.map((reason, i) => `${i + 1}. ${reason}`),
    END,
  ].join("\n");
  const path = new URL("../../docs/algorithms.md", import.meta.url);
  const doc = readFileSync(path, "utf8");
  const [before, rest] = doc.split(START);
  const written = rest === undefined ? undefined : `${START}${rest.split(END)[0]}${END}`;
  if (process.env.FEDTENSOR_UPDATE_DOCS === "1" && before !== undefined && written !== undefined) writeFileSync(path, doc.replace(written, table));
  else expect(written).toBe(table);
}, deadline(300_000));
