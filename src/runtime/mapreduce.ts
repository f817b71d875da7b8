/**
 * Running a round in MapReduce form over clients that arrive in chunks: prepare once, then
 * per chunk work and accumulate into a partial accumulator, merged into the running total in
 * chunk order (so the result depends on the chunking, never on timing), then report and
 * update. A round holds one chunk's data and intermediates at a time, plus the accumulator,
 * whose size does not depend on the number of clients.
 */
import * as tf from "@tensorflow/tfjs";
import { ftError } from "../errors/error.js";
import { checkReleaseInputs } from "../ir/privacy.js";
import type { Graph, ProgramIR, TreeDef } from "../ir/types.js";
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

const usesClientCount = (graph: Graph): boolean => graph.nodes.some((n) => n.op === "client_count" || (n.bodies ?? []).some(usesClientCount));

/**
 * The program's MapReduce form for a cohort of `cohortSize` (cached: its parts' compiled forms
 * are too); with `keepClientOutputs`, the form whose clients keep its CLIENTS outputs (served clients).
 */
export function cachedForm(ir: ProgramIR, cohortSize: number, keepClientOutputs = false): MapReduceForm {
  let byCohort = forms.get(ir);
  if (byCohort === undefined) forms.set(ir, (byCohort = new Map()));
  // client_count() is written into the parts, so only programs that use it need one form per cohort size.
  const key = `${usesClientCount(ir.graph) ? String(cohortSize) : "any"}${keepClientOutputs ? ":kept" : ""}`;
  let form = byCohort.get(key);
  if (form === undefined) byCohort.set(key, (form = mapReduceForm(ir, { cohortSize, keepClientOutputs })));
  return form;
}

/** How a driver runs a part: on a backend (tfjs tensors) or on the reference interpreter. */
export interface PartRunner<T> {
  /** Runs the part on named inputs; its outputs as a tree like its output tree. */
  run(part: Part, inputs: Record<string, unknown>, atClients: boolean): Promise<unknown>;
  dispose(values: readonly T[]): void;
  /** The chunks' rows of a per-client value as one value of the whole cohort: row p is the row that a chunk's `positions` put at place p (needed for client state only). */
  byPlace?(pieces: readonly { readonly positions: ArrayLike<number>; readonly value: T }[]): T;
}

/**
 * Drives one round of a MapReduce form: prepare, then per chunk work and accumulate from zero
 * (fused into one program unless `fused` is false), each chunk's partial accumulator merged
 * into the total in chunk order, then report and update. Returns update's outputs (the
 * program's output tree), with the chunks' client state (MapReduceForm.keptOutputs) put back
 * in cohort order at its paths.
 */
export async function driveRound<T>(ir: ProgramIR, form: MapReduceForm, round: StreamedRound, runner: PartRunner<T>, fused = true, remote?: RemoteChunks<T>): Promise<unknown> {
  const run = async (part: Part, leaves: Map<string, unknown>, atClients = false): Promise<Map<string, T>> => {
    // A part with nothing to compute (prepare when nothing is broadcast) is not run: ONNX models need an output.
    if (part.outputs.length === 0) return new Map();
    const out = (await runner.run(part, inputsOf(part, leaves), atClients)) as Record<string, T>;
    return new Map(part.outputs.map((name) => [name, out[name]!]));
  };
  const dispose = (...maps: Map<string, T>[]) => maps.forEach((m) => runner.dispose([...m.values()]));
  // Kept at the clients themselves (served), the state never comes back: the result leaves it out.
  const keptState = round.keptAtClients === true && remote !== undefined ? [] : form.keptState;
  const keptNames = keptState.map((k) => k.output);
  if (keptNames.length > 0 && runner.byPlace === undefined) throw ftError("FT302", { what: "part runner", why: "a round with client state needs a runner that puts the chunks' rows in cohort order" });
  const accumulateChunk = async (inputs: Map<string, unknown>, zero: Map<string, T>) => {
    const members = await run(form.parts.work, inputs, true);
    const kept = keptNames.map((name) => [name, members.get(name)!] as const);
    keptNames.forEach((name) => members.delete(name));
    try {
      return new Map([...(await run(form.parts.accumulate, new Map([...inputs, ...zero, ...members]), true)), ...kept]);
    } finally {
      dispose(members);
    }
  };
  /** Each chunk's client state, by kept output, with the chunk's places in the cohort. */
  const keptPieces = keptNames.map(() => [] as { positions: ArrayLike<number>; value: T }[]);
  /** The places of the chunks run here, in order (remote chunks' come from round.positions). */
  const localPositions: ArrayLike<number>[] = [];
  let merged = 0;
  /** The partial accumulator of a chunk, its client state set aside. */
  const withoutKept = (partial: Map<string, T>): Map<string, T> => {
    if (keptNames.length === 0) return partial;
    const positions = round.positions?.(merged) ?? localPositions[merged];
    if (positions === undefined) throw ftError("FT302", { what: "chunk positions", why: "the remote chunks of a round with client state need their places in the cohort (StreamedRound.positions)" });
    keptNames.forEach((name, i) => {
      keptPieces[i]!.push({ positions, value: partial.get(name)! });
      partial.delete(name);
    });
    merged++;
    return partial;
  };
  const server = leavesByPath(ir.inputTree, round.inputs);
  const prepared = await run(form.parts.prepare, server);
  let total: Map<string, T> | undefined;
  const localPartials = async function* (): AsyncIterable<Map<string, T>> {
    // One empty accumulator serves every chunk: parts leave their inputs as they are.
    const zero = await run(form.parts.zero, new Map());
    try {
      let chunkIndex = 0;
      let offset = 0;
      for await (const chunk of round.chunks) {
        const clientLeaves = leavesByPath(ir.inputTree, chunk);
        const positions = round.positions?.(chunkIndex++) ?? consecutive(offset, clientsIn(clientLeaves, form.clientInputs));
        offset += positions.length;
        localPositions.push(positions);
        const inputs = new Map([...server, ...prepared, ...clientLeaves, ...chunkInputs(form, positions)]);
        yield fused ? await run(form.workAndAccumulate, new Map([...zero, ...inputs]), true) : await accumulateChunk(inputs, zero);
      }
    } finally {
      dispose(zero);
    }
  };
  try {
    const partials = remote === undefined ? localPartials() : remote(new Map([...server, ...prepared]));
    for await (const chunkResult of partials) {
      const partial = withoutKept(chunkResult);
      if (total === undefined) {
        total = partial;
        continue;
      }
      const rename = (m: Map<string, T>, side: string) => [...m].map(([k, t]) => [`${side}${k.slice("acc".length)}`, t] as const);
      const merged = await run(form.parts.merge, new Map([...rename(total, "a"), ...rename(partial, "b")]));
      dispose(total, partial);
      total = merged;
    }
    if (total === undefined) throw ftError("FT302", { what: "cohort", why: "a streamed round got no chunk of clients" });
    const reports = await run(form.parts.report, total);
    let updated: unknown;
    try {
      updated = await runner.run(form.parts.update, inputsOf(form.parts.update, new Map([...server, ...prepared, ...reports])), false);
    } finally {
      dispose(reports);
    }
    if (keptNames.length === 0) return updated;
    const kept = new Map(keptState.map(({ input }, i) => [input, runner.byPlace!(keptPieces[i]!)]));
    const rest = leavesByPath(form.parts.update.ir.outputTree, updated);
    return treeOfLeaves(ir.outputTree, (path) => kept.get(path) ?? rest.get(path));
  } finally {
    dispose(prepared, ...(total === undefined ? [] : [total]), ...keptPieces.flat().map((piece) => new Map([["", piece.value]])));
  }
}

/** A tree shaped as `def` whose leaf at each path is `leafAt(path)`. */
function treeOfLeaves(def: TreeDef, leafAt: (path: string) => unknown, path = ""): unknown {
  if (typeof def === "number") return leafAt(path);
  if (Array.isArray(def)) return def.map((child, i) => treeOfLeaves(child, leafAt, `${path}[${i}]`));
  return Object.fromEntries(Object.entries(def as Record<string, TreeDef>).map(([key, child]) => [key, treeOfLeaves(child, leafAt, path === "" ? key : `${path}.${key}`)]));
}

/** The clients of a chunk: axis 0 of its first CLIENTS leaf (a tensor, a host tensor or an array). */
function clientsIn(leaves: Leaves, clientInputs: readonly string[]): number {
  const leaf = clientInputs.map((name) => leaves.get(name)).find((l) => l !== undefined) as { shape?: readonly number[] } | unknown[] | undefined;
  if (leaf === undefined) return 0;
  return Array.isArray(leaf) ? leaf.length : (leaf.shape?.[0] ?? 0);
}

const consecutive = (from: number, count: number): Int32Array => Int32Array.from({ length: count }, (_, i) => from + i);

/**
 * The inputs a chunk's runner supplies besides its data (src/transform/mapreduce.ts): its
 * clients' places in the cohort for clientIndex(), and one key per secure sum, drawn here from
 * the CSPRNG (Web Crypto: node's and a browser's), seen by nothing but this chunk's masking.
 */
export function chunkInputs(form: Pick<MapReduceForm, "clientIndexInputs" | "groupKeyInputs">, positions: ArrayLike<number>): Map<string, unknown> {
  const out = new Map<string, unknown>();
  for (const name of form.clientIndexInputs) out.set(name, { shape: [positions.length], data: Int32Array.from(positions) });
  for (const name of form.groupKeyInputs) out.set(name, { shape: [2], data: globalThis.crypto.getRandomValues(new Int32Array(2)) });
  return out;
}

function inputsOf(part: Part, leaves: Map<string, unknown>): Record<string, unknown> {
  const missing = part.inputs.find((name) => leaves.get(name) === undefined);
  if (missing !== undefined) throw ftError("FT302", { what: `input ${missing}`, why: "missing (a streamed round takes every input the program declares)" });
  return Object.fromEntries(part.inputs.map((name) => [name, leaves.get(name)]));
}

/**
 * Where a round's chunks run when not here: given the inputs every chunk shares (the server and
 * local inputs, prepare's outputs, by path), the chunks' partial accumulators (`acc<i>`), in
 * merge order. The fused work+accumulate part runs elsewhere (src/lib/run/engine: BullMQ workers).
 */
export type RemoteChunks<T> = (shared: ReadonlyMap<string, unknown>) => AsyncIterable<Map<string, T>>;

export interface StreamedRound {
  /** The server and local inputs, as a tree like the program's inputs (CLIENTS leaves may be absent). */
  readonly inputs: unknown;
  /** The cohort's size (client_count() in the program). */
  readonly cohortSize: number;
  /** Each chunk's CLIENTS inputs, as a tree like the program's inputs, clients on axis 0; in merge order. */
  readonly chunks: AsyncIterable<unknown> | Iterable<unknown>;
  /** The places in the cohort of chunk k's clients (clientIndex()); the chunks' clients in order, one after the other, when absent. */
  readonly positions?: (chunk: number) => ArrayLike<number>;
  /** The remote chunks' clients keep the program's CLIENTS outputs (client state): the result leaves them out. */
  readonly keptAtClients?: boolean;
}

/**
 * Runs a round program over its cohort chunk by chunk on a backend; the outputs (a tree like
 * the program's) are the caller's. FT313-FT315 when the program has no MapReduce form.
 */
export function runStreamed(ir: ProgramIR, round: StreamedRound, options: RunOptions = {}, fused = true, remote?: RemoteChunks<tf.Tensor>): Promise<unknown> {
  // dpSum's options fed by inputs are > 0 (FT110), as program.run checks.
  checkReleaseInputs(ir, round.inputs);
  // Parts without CLIENTS inputs run for one client: client_count() is already a constant in them.
  const runner: PartRunner<tf.Tensor> = {
    run: (part, inputs, atClients) => runProgram(part.ir, inputs, atClients ? options : { ...options, clients: 1 }),
    dispose: (values) => tf.dispose([...values]),
    byPlace: (pieces) =>
      tf.tidy(() => {
        const order = pieces.flatMap((piece) => Array.from(piece.positions));
        const rowOf = new Int32Array(order.length);
        order.forEach((place, row) => (rowOf[place] = row));
        return tf.gather(tf.concat(pieces.map((piece) => piece.value)), rowOf);
      }),
  };
  return driveRound(ir, cachedForm(ir, round.cohortSize, round.keptAtClients === true && remote !== undefined), round, runner, fused, remote);
}
