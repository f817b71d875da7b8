/**
 * MapReduce form: a round program cut into the parts a coordinator and its workers run (TFF's
 * MapReduceForm names). Each part is an ordinary program, so it runs on every backend and on
 * the reference interpreter:
 *
 *   prepare     (server and local inputs) -> (what is broadcast, what update needs later)
 *   work        (broadcast values, local inputs, one chunk's CLIENTS inputs) -> the members
 *               each aggregation folds, per client
 *   zero        () -> an empty accumulator
 *   accumulate  (accumulator, a chunk's members) -> the accumulator with the chunk folded in
 *   merge       (accumulator, accumulator) -> their union (from disjoint chunks)
 *   report      (accumulator) -> the aggregations' results
 *   update      (server and local inputs, prepare's carry, the reports) -> the program's outputs
 *
 * The accumulator is a list of SERVER tensors whose types come from the aggregated members'
 * types alone (reduceSum: the member's sum; reduceMean: the sum and a count; reduceMax/Min:
 * the running extreme; aggregate: its zero()'s tree), so it has the same type and size for a
 * chunk of 1 client or a cohort of a million: memory that a round holds past a chunk is fixed.
 *
 * A secureSum folds group by group: each chunk of clients is one SecAgg+ group whose masks
 * cancel within it (their key is drawn where the chunk runs, groupKeyInputs), so the
 * accumulator is the sum of the groups' sums; clientIndex() becomes an input of the chunk
 * (clientIndexInputs) that its runner fills with the clients' places in the cohort.
 *
 * The program's top-level values get a stage: `before` (SERVER, not derived from an
 * aggregation), `clients`, `after` (derived from an aggregation's result) or `local`
 * (constants, recomputed in whichever part uses them). The cut is legal when nothing moves
 * from `after` to the clients (FT313), no output is at the CLIENTS (FT314) but client state,
 * and every CLIENTS value is computed client by client (FT315 otherwise).
 *
 * Client state (keepOnClients, ProgramIR.clientState) is computed client by client like the
 * members: it becomes an output of `work` and of the fused work+accumulate part (`kept0`, ...),
 * paired with the CLIENTS input it goes back to, and the update part leaves it out, so it never
 * enters an accumulator. Each chunk's clients keep it: the runner's store by client id
 * (src/lib/run), or the clients themselves where the chunks run at the clients (fedtensor serve),
 * where `keepClientOutputs` keeps every CLIENTS output so.
 */
import { ftError } from "../errors/error.js";
import { GraphBuilder, recordInto, ValueTable, type Tracer } from "../front/trace.js";
import { leafPaths } from "../front/tree.js";
import { withoutLeaves } from "../ir/tree-paths.js";
import { isAtClients } from "../ir/placement.js";
import { printType } from "../ir/print.js";
import { primitives } from "../ir/primitives.js";
import { DEFAULT_MIN_CLIENTS } from "../ir/secure-sum.js";
import type { Graph, Node, ProgramIR, TreeDef, ValueType } from "../ir/types.js";
import { inline, splitCaptures, type Replay } from "./inline.js";
import { aggregationOf, emit, serverType, type Aggregation } from "./mapreduce-aggregations.js";

export const partNames = ["prepare", "work", "zero", "accumulate", "merge", "report", "update"] as const;
export type PartName = (typeof partNames)[number];

/** One part: its program, and the names of its inputs and outputs in graph order. */
export interface Part {
  readonly ir: ProgramIR;
  readonly inputs: readonly string[];
  readonly outputs: readonly string[];
}

/** A CLIENTS output kept by the client that computed it: `output` of workAndAccumulate, read back next round at `input`. */
export interface KeptState {
  readonly input: string;
  readonly output: string;
}

export interface MapReduceForm {
  readonly parts: Readonly<Record<PartName, Part>>;
  /**
   * `work` then `accumulate` as one program (accumulator and work's inputs -> accumulator):
   * what runs per chunk, so that the per-client members never leave the backend.
   */
  readonly workAndAccumulate: Part;
  /** The accumulator's leaves: SERVER tensors whose types do not involve the number of clients. */
  readonly accumulator: readonly ValueType[];
  /** The program's input leaves at the CLIENTS, by path: what each chunk supplies. */
  readonly clientInputs: readonly string[];
  /**
   * Inputs of the work part (clientIndex0, ...) that take each of the chunk's clients' place in
   * the cohort (i32 per client): clientIndex() of the program, which no chunk could number itself.
   */
  readonly clientIndexInputs: readonly string[];
  /**
   * Inputs of accumulate (groupKey0, ...), one i32[2] key per secure sum, that the runner of a
   * chunk draws fresh from a CSPRNG for the chunk: the masks of the chunk's group derive from it.
   */
  readonly groupKeyInputs: readonly string[];
  /** The fewest clients a chunk may hold: the largest minClients of the program's secure sums (0 without one). */
  readonly secureGroupMin: number;
  /** The program's CLIENTS outputs that work and workAndAccumulate return for the client to keep: its client state (all its CLIENTS outputs with keepClientOutputs). */
  readonly keptState: readonly KeptState[];
}

export interface MapReduceOptions {
  /**
   * The cohort's size, for programs that use client_count() (a reduceMean's gradient): it is
   * the whole cohort's, which no chunk knows, so it is written into the parts as a constant.
   */
  readonly cohortSize?: number;
  /**
   * The chunks run at the clients, which keep the program's CLIENTS outputs as their state: each
   * must have a CLIENTS input of the same path, type and shape to go back to (FT314 otherwise).
   */
  readonly keepClientOutputs?: boolean;
}

type Stage = "local" | "before" | "clients" | "after";

const reductions: Readonly<Record<string, string>> = {
  federated_sum: "reduceSum",
  federated_mean: "reduceMean",
  federated_max: "reduceMax",
  federated_min: "reduceMin",
  aggregate: "aggregate",
};
/** Aggregations with an accumulator: the reductions, and secureSum summed group by group (one group a chunk). */
const isAggregation = (op: string): boolean => op in reductions || op === "secure_sum";
const federatedOps = new Set(["federated_broadcast", "aggregate_vjp", "secure_sum", ...Object.keys(reductions)]);

const containsFederated = (graph: Graph): boolean =>
  graph.nodes.some((n) => federatedOps.has(n.op) || primitives[n.op]?.wholeCohort !== undefined || (n.bodies ?? []).some(containsFederated));

/** Assigns every top-level value its stage, rejecting what one round cannot express. */
function stages(ir: ProgramIR): Map<number, Stage> {
  const stage = new Map<number, Stage>();
  ir.graph.inputs.forEach((id) => {
    const p = ir.values[id]!.placement;
    stage.set(id, isAtClients(p) ? "clients" : p === "server" ? "before" : "local");
  });
  for (const node of ir.graph.nodes) {
    const ins = node.inputs.map((id) => stage.get(id)!);
    const wholeCohort = primitives[node.op]?.wholeCohort?.(node.attrs);
    let out: Stage;
    if (node.op === "client_iota") {
      // Each client's place in the cohort: an input of the chunk (MapReduceForm.clientIndexInputs).
      out = "clients";
    } else if (node.op === "federated_broadcast") {
      if (ins[0] === "after") throw ftError("FT313", { what: "broadcast()", why: "its argument is computed from an aggregation's result, so it would reach the clients in a second round" });
      out = "clients";
    } else if (node.op === "secure_sum") {
      if (stage.get(node.inputs[0]!) === "after") throw ftError("FT313", { what: "secureSum", why: "it aggregates a value computed from another aggregation's result" });
      out = "after";
    } else if (node.op in reductions) {
      const { operands, captured } = splitCaptures(node, node.inputs);
      if (captured.flat().some((id) => stage.get(id) !== "local")) throw ftError("FT315", { op: reductions[node.op]!, why: "its functions capture a placed value; MapReduce form needs them built from constants" });
      if (operands.some((id) => stage.get(id) === "after")) throw ftError("FT313", { what: reductions[node.op]!, why: "it aggregates a value computed from another aggregation's result" });
      out = "after";
    } else if (wholeCohort !== undefined) {
      throw ftError("FT315", wholeCohort);
    } else if (node.op === "aggregate_vjp") {
      throw ftError("FT315", { op: "grad(aggregate)", why: "each client's cotangent depends on the clients folded before it, so clients are not independent" });
    } else if ((node.bodies ?? []).some(containsFederated)) {
      throw ftError("FT315", { op: node.op, why: "its body broadcasts or aggregates: a loop of rounds is several MapReduce forms, one per round" });
    } else if (ins.includes("clients")) {
      if (ins.includes("after")) throw ftError("FT313", { what: node.op, why: "it combines per-client values with an aggregation's result" });
      out = "clients";
    } else out = ins.includes("after") ? "after" : ins.includes("before") ? "before" : "local";
    node.outputs.forEach((id) => stage.set(id, out));
  }
  return stage;
}

/** The nodes of `graph` that compute `wanted` from `available` (and constants), in order. */
function slice(graph: Graph, wanted: readonly number[], available: readonly number[]): Graph {
  const have = new Set(available);
  const need = new Set(wanted.filter((id) => !have.has(id)));
  const nodes: Node[] = [];
  for (let i = graph.nodes.length - 1; i >= 0; i--) {
    const node = graph.nodes[i]!;
    if (!node.outputs.some((id) => need.has(id))) continue;
    nodes.push(node);
    node.inputs.forEach((id) => !have.has(id) && need.add(id));
  }
  const missing = graph.inputs.find((id) => need.has(id));
  if (missing !== undefined) throw new Error(`MapReduce form: value ${missing} is needed but not available to this part`);
  return { inputs: [...available], nodes: nodes.reverse(), outputs: [...wanted] };
}

/** One named input or output leaf of a part. */
interface Slot {
  readonly name: string;
  readonly type: ValueType;
}

/** Traces a part: a program whose inputs and outputs are flat records by slot name. */
function tracePart(name: string, inputs: readonly Slot[], body: (ins: Tracer[]) => readonly Tracer[], outputNames: readonly string[], outputTree?: TreeDef): Part {
  const values = new ValueTable();
  const graph = new GraphBuilder(values, undefined);
  const outs = recordInto(graph, () => body(inputs.map((s) => graph.addInput(s.type))));
  const closed = graph.finish(outs);
  const ir: ProgramIR = {
    format: "fedtensor-ir",
    version: 1,
    name,
    values: values.types,
    graph: closed,
    inputTree: Object.fromEntries(inputs.map((s, i) => [s.name, i])),
    outputTree: outputTree ?? Object.fromEntries(outputNames.map((n, i) => [n, i])),
  };
  return { ir, inputs: inputs.map((s) => s.name), outputs: outputNames };
}

/** The MapReduce form of a round program, or FT313/FT314/FT315 naming why it has none. */
export function mapReduceForm(ir: ProgramIR, options: MapReduceOptions = {}): MapReduceForm {
  const stage = stages(ir);
  const paths = leafPaths(ir.inputTree);
  const outputPaths = leafPaths(ir.outputTree);
  const inputPaths = new Map(ir.graph.inputs.map((id, i) => [paths[i]!, id]));
  const kept: { id: number; input: string }[] = [];
  ir.graph.outputs.forEach((id, i) => {
    if (stage.get(id) !== "clients") return;
    const back = inputPaths.get(outputPaths[i]!);
    const type = printType(ir.values[id]!);
    const keeps = options.keepClientOutputs === true || (ir.clientState ?? []).includes(outputPaths[i]!);
    if (!keeps || back === undefined || stage.get(back) !== "clients" || printType(ir.values[back]!) !== type) {
      const why = keeps ? "a kept output needs a CLIENTS input of the same path and type to go back to" : undefined;
      throw ftError("FT314", { what: outputPaths[i] === "" ? "the result" : `output ${outputPaths[i]}`, type: why === undefined ? type : `${type} (${why})` });
    }
    kept.push({ id, input: outputPaths[i]! });
  });
  const serverOutputs = ir.graph.outputs.flatMap((id, i) => (stage.get(id) === "clients" ? [] : [{ id, path: outputPaths[i]! }]));
  // client_count() is the whole cohort's size, in every part (a chunk's own count is its accumulator's business).
  const cohortSize = options.cohortSize;
  const replay: Replay =
    cohortSize === undefined ? {} : { node: (node) => (node.op === "client_count" ? emit("constant", [], { value: cohortSize, dtype: "float32", shape: [] }) : undefined) };
  const inlineSlice = (wanted: readonly number[], available: readonly number[], bound: readonly Tracer[]) => inline(slice(ir.graph, wanted, available), bound, replay);
  const local = (wanted: readonly number[]) => inlineSlice(wanted, [], []);

  const inputSlots = (keep: (s: Stage) => boolean) =>
    ir.graph.inputs.flatMap((id, i) => (keep(stage.get(id)!) ? [{ id, slot: { name: paths[i]!, type: ir.values[id]! } }] : []));
  const serverInputs = inputSlots((s) => s === "before" || s === "local");
  const localInputs = inputSlots((s) => s === "local");
  const clientInputs = inputSlots((s) => s === "clients");

  const aggregations = ir.graph.nodes.filter((n) => isAggregation(n.op)).map((n) => aggregationOf(ir, n, local, replay));
  // What the clients get from the server: broadcast()'s arguments, and SERVER values that a
  // top-level loop over CLIENTS values uses inside its body (sent along the same way).
  const broadcastArgs = [
    ...new Set(ir.graph.nodes.filter((n) => stage.get(n.outputs[0]!) === "clients").flatMap((n) => n.inputs.filter((id) => stage.get(id) === "before"))),
  ];
  const isInput = new Set(ir.graph.inputs);
  const carried = new Set<number>();
  for (const node of ir.graph.nodes) {
    if (stage.get(node.outputs[0]!) !== "after" || isAggregation(node.op)) continue;
    node.inputs.forEach((id) => stage.get(id) === "before" && !isInput.has(id) && carried.add(id));
  }
  ir.graph.outputs.forEach((id) => stage.get(id) === "before" && !isInput.has(id) && carried.add(id));
  const carry = [...carried];
  const members = [...new Set(aggregations.flatMap((a) => a.members))];
  const reports = aggregations.flatMap((a) => a.node.outputs);
  const accumulator = aggregations.flatMap((a) => a.accumulator);
  const named = (prefix: string, types: readonly ValueType[]): Slot[] => types.map((type, i) => ({ name: `${prefix}${i}`, type }));
  const accSlots = (prefix: string) => named(prefix, accumulator);
  const memberSlots = named("member", members.map((id) => ({ ...ir.values[id]!, placement: "clients" as const })));
  /** Splits the flat accumulator tracers per aggregation. */
  const perAggregation = (acc: readonly Tracer[]) => {
    let at = 0;
    return aggregations.map((a) => acc.slice(at, (at += a.accumulator.length)));
  };

  const prepare = tracePart(
    `${ir.name}: prepare`,
    serverInputs.map((s) => s.slot),
    (ins) => inlineSlice([...broadcastArgs, ...carry], serverInputs.map((s) => s.id), ins),
    [...broadcastArgs.map((_, i) => `broadcast${i}`), ...carry.map((_, i) => `carry${i}`)],
  );
  // clientIndex(): each client's place in the cohort, which the chunk's runner supplies.
  const indexSlots = ir.graph.nodes
    .filter((n) => n.op === "client_iota")
    .map((n, i) => ({ id: n.outputs[0]!, slot: { name: `clientIndex${i}`, type: { shape: [], dtype: "int32", placement: "clients" } as ValueType } }));
  const workInputs = [...broadcastArgs.map((id, i) => ({ id, slot: { name: `broadcast${i}`, type: ir.values[id]! } })), ...localInputs, ...clientInputs, ...indexSlots];
  const keySlots = named("groupKey", Array.from({ length: aggregations.reduce((n, a) => n + a.groupKeys, 0) }, (): ValueType => ({ shape: [2], dtype: "int32", placement: "server" })));
  /** Splits the flat group key tracers per aggregation. */
  const keysPer = (keys: readonly Tracer[]) => {
    let at = 0;
    return aggregations.map((a) => keys.slice(at, (at += a.groupKeys)));
  };
  const keptSlots = kept.map((k, i) => ({ ...k, output: `kept${i}` }));
  const work = tracePart(
    `${ir.name}: work`,
    workInputs.map((s) => s.slot),
    (ins) => inlineSlice([...members, ...kept.map((k) => k.id)], workInputs.map((s) => s.id), ins),
    [...memberSlots.map((s) => s.name), ...keptSlots.map((k) => k.output)],
  );
  const zero = tracePart(`${ir.name}: zero`, [], () => aggregations.flatMap((a) => a.zero()), accSlots("acc").map((s) => s.name));
  const accumulate = tracePart(
    `${ir.name}: accumulate`,
    [...accSlots("acc"), ...keySlots, ...memberSlots],
    (ins) => {
      const acc = perAggregation(ins.slice(0, accumulator.length));
      const keys = keysPer(ins.slice(accumulator.length, accumulator.length + keySlots.length));
      const memberOf = (id: number) => ins[accumulator.length + keySlots.length + members.indexOf(id)]!;
      return aggregations.flatMap((a, k) => a.accumulate(acc[k]!, a.members.map(memberOf), keys[k]!));
    },
    accSlots("acc").map((s) => s.name),
  );
  const workAndAccumulate = tracePart(
    `${ir.name}: work + accumulate`,
    [...accSlots("acc"), ...keySlots, ...workInputs.map((s) => s.slot)],
    (ins) => {
      const acc = perAggregation(ins.slice(0, accumulator.length));
      const keys = keysPer(ins.slice(accumulator.length, accumulator.length + keySlots.length));
      const computed = inlineSlice([...members, ...kept.map((k) => k.id)], workInputs.map((s) => s.id), ins.slice(accumulator.length + keySlots.length));
      const memberOf = (id: number) => computed[members.indexOf(id)]!;
      return [...aggregations.flatMap((a, k) => a.accumulate(acc[k]!, a.members.map(memberOf), keys[k]!)), ...computed.slice(members.length)];
    },
    [...accSlots("acc").map((s) => s.name), ...keptSlots.map((k) => k.output)],
  );
  const merge = tracePart(
    `${ir.name}: merge`,
    [...accSlots("a"), ...accSlots("b")],
    (ins) => {
      const [a, b] = [perAggregation(ins.slice(0, accumulator.length)), perAggregation(ins.slice(accumulator.length))];
      return aggregations.flatMap((agg, k) => agg.merge(a[k]!, b[k]!));
    },
    accSlots("acc").map((s) => s.name),
  );
  const report = tracePart(
    `${ir.name}: report`,
    accSlots("acc"),
    (ins) => perAggregation(ins).flatMap((acc, k) => aggregations[k]!.report(acc)),
    reports.map((_, i) => `report${i}`),
  );
  const updateInputs = [
    ...serverInputs,
    ...carry.map((id, i) => ({ id, slot: { name: `carry${i}`, type: ir.values[id]! } })),
    ...reports.map((id, i) => ({ id, slot: { name: `report${i}`, type: ir.values[id]! } })),
  ];
  const update = tracePart(
    `${ir.name}: update`,
    updateInputs.map((s) => s.slot),
    (ins) => inlineSlice(serverOutputs.map((o) => o.id), updateInputs.map((s) => s.id), ins),
    serverOutputs.map((o) => o.path),
    kept.length === 0 ? ir.outputTree : withoutLeaves(ir.outputTree, new Set(kept.map((k) => ir.graph.outputs.indexOf(k.id)))),
  );
  return {
    parts: { prepare, work, zero, accumulate, merge, report, update },
    workAndAccumulate,
    accumulator,
    clientInputs: clientInputs.map((s) => s.slot.name),
    clientIndexInputs: indexSlots.map((s) => s.slot.name),
    groupKeyInputs: keySlots.map((s) => s.name),
    secureGroupMin: Math.max(0, ...aggregations.filter((a) => a.groupKeys > 0).map((a) => (a.node.attrs.minClients as number | undefined) ?? DEFAULT_MIN_CLIENTS)),
    keptState: keptSlots.map(({ input, output }) => ({ input, output })),
  };
}
