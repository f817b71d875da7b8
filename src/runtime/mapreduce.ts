/**
 * Running a round in MapReduce form over clients that arrive in chunks: prepare once, then
 * per chunk work and accumulate into a partial accumulator, merged into the running total in
 * chunk order (so the result depends on the chunking, never on timing), then report and
 * update. A round holds one chunk's data and intermediates at a time, plus the accumulator,
 * whose size does not depend on the number of clients.
 */
import * as tf from "@tensorflow/tfjs";
import { ftError } from "../errors/error.js";
import type { ProgramIR, TreeDef } from "../ir/types.js";
import { mapReduceForm, type MapReduceForm, type Part } from "../transform/mapreduce.js";
import { runProgram, type RunOptions } from "./run.js";

type Leaves = Map<string, unknown>;

/** A program's input leaves by path ("params.w"), reading `tree` along the program's tree; absent leaves are skipped. */
export function leavesByPath(def: TreeDef, tree: unknown): Leaves {
  const out: Leaves = new Map();
  const walk = (d: TreeDef, node: unknown, path: string): void => {
    if (node === undefined) return;
    if (typeof d === "number") out.set(path, node);
    else if (Array.isArray(d)) d.forEach((child, i) => walk(child, (node as unknown[])[i], `${path}[${i}]`));
    else for (const [key, child] of Object.entries(d as Record<string, TreeDef>)) walk(child, (node as Record<string, unknown>)[key], path === "" ? key : `${path}.${key}`);
  };
  walk(def, tree, "");
  return out;
}

const forms = new WeakMap<ProgramIR, Map<string, MapReduceForm>>();

/** The program's MapReduce form for a cohort of `cohortSize` (cached: its parts' compiled forms are too). */
export function cachedForm(ir: ProgramIR, cohortSize: number): MapReduceForm {
  let byCohort = forms.get(ir);
  if (byCohort === undefined) forms.set(ir, (byCohort = new Map()));
  // client_count() is written into the parts, so only programs that use it need one form per cohort size.
  const key = JSON.stringify(ir.graph).includes('"client_count"') ? String(cohortSize) : "any";
  let form = byCohort.get(key);
  if (form === undefined) byCohort.set(key, (form = mapReduceForm(ir, { cohortSize })));
  return form;
}

/** Runs a part on the leaves its inputs name; parts without CLIENTS inputs run for one (irrelevant) client. */
async function runPartTree(part: Part, leaves: Leaves, options: RunOptions, atClients = false): Promise<unknown> {
  const inputs = Object.fromEntries(part.inputs.map((name) => [name, leaves.get(name)]));
  const missing = part.inputs.find((name) => leaves.get(name) === undefined);
  if (missing !== undefined) throw ftError("FT302", { what: `input ${missing}`, why: "missing (a streamed round takes every input the program declares)" });
  return runProgram(part.ir, inputs, atClients ? options : { ...options, clients: 1 });
}

async function runPart(part: Part, leaves: Leaves, options: RunOptions, atClients = false): Promise<Map<string, tf.Tensor>> {
  const out = (await runPartTree(part, leaves, options, atClients)) as Record<string, tf.Tensor>;
  return new Map(part.outputs.map((name) => [name, out[name]!]));
}

const disposeAll = (...maps: Map<string, tf.Tensor>[]) => maps.forEach((m) => tf.dispose([...m.values()]));

export interface StreamedRound {
  /** The server and local inputs, as a tree like the program's inputs (CLIENTS leaves may be absent). */
  readonly inputs: unknown;
  /** The cohort's size (client_count() in the program). */
  readonly cohortSize: number;
  /** Each chunk's CLIENTS inputs, as a tree like the program's inputs, clients on axis 0; in merge order. */
  readonly chunks: AsyncIterable<unknown> | Iterable<unknown>;
}

/**
 * Runs a round program over its cohort chunk by chunk; the outputs (a tree like the program's)
 * are the caller's. FT313-FT315 when the program has no MapReduce form.
 */
export async function runStreamed(ir: ProgramIR, round: StreamedRound, options: RunOptions = {}): Promise<unknown> {
  const form = cachedForm(ir, round.cohortSize);
  const server = leavesByPath(ir.inputTree, round.inputs);
  const prepared = await runPart(form.parts.prepare, server, options);
  let total: Map<string, tf.Tensor> | undefined;
  try {
    for await (const chunk of round.chunks) {
      const clients = leavesByPath(ir.inputTree, chunk);
      const members = await runPart(form.parts.work, new Map([...server, ...prepared, ...clients]), options, true);
      let partial: Map<string, tf.Tensor>;
      const zero = await runPart(form.parts.zero, new Map(), options);
      try {
        partial = await runPart(form.parts.accumulate, new Map([...zero, ...members]), options, true);
      } finally {
        disposeAll(members, zero);
      }
      if (total === undefined) {
        total = partial;
        continue;
      }
      const pair = new Map([...[...total].map(([k, t]) => [`a${k.slice(3)}`, t] as const), ...[...partial].map(([k, t]) => [`b${k.slice(3)}`, t] as const)]);
      const merged = await runPart(form.parts.merge, pair, options);
      disposeAll(total, partial);
      total = merged;
    }
    if (total === undefined) throw ftError("FT302", { what: "cohort", why: "a streamed round got no chunk of clients" });
    const reports = await runPart(form.parts.report, total, options);
    try {
      return await runPartTree(form.parts.update, new Map([...server, ...prepared, ...reports]), options);
    } finally {
      disposeAll(reports);
    }
  } finally {
    disposeAll(prepared, ...(total === undefined ? [] : [total]));
  }
}
