/**
 * How each aggregation of a round program folds in MapReduce form (src/transform/mapreduce.ts):
 * the accumulator leaves it adds, and the zero, accumulate, merge and report it contributes to
 * those parts. One case per aggregation primitive; `aggregate` brings its own bodies.
 */
import { currentGraph, type Tracer } from "../front/trace.js";
import type { Graph, Node, ProgramIR, ValueType } from "../ir/types.js";
import { inline, reemit, splitCaptures, type Replay } from "./inline.js";

export const serverType = (t: ValueType): ValueType => ({ ...t, placement: "server" });

/** How one aggregation node becomes accumulator leaves and the four accumulator parts. */
export interface Aggregation {
  readonly node: Node;
  /** The member operands (top-level value ids at the CLIENTS). */
  readonly members: readonly number[];
  readonly accumulator: readonly ValueType[];
  /** How many fresh group keys (i32[2]) a chunk's accumulate takes: one per secure sum. */
  readonly groupKeys: number;
  zero(): Tracer[];
  accumulate(acc: Tracer[], members: Tracer[], groupKeys: Tracer[]): Tracer[];
  merge(a: Tracer[], b: Tracer[]): Tracer[];
  report(acc: Tracer[]): Tracer[];
}

/**
 * The start of a running max (sign -1) or min (+1): the dtype's extreme finite value, as the IR
 * is JSON (no Infinity). A member of -Infinity (max) or +Infinity (min) is reported as that value.
 */
const extreme = (dtype: string, sign: 1 | -1): number => (dtype === "int32" ? (sign > 0 ? 2147483647 : -2147483648) : sign * 3.4028234663852886e38);

export function aggregationOf(ir: ProgramIR, node: Node, local: (wanted: readonly number[]) => Tracer[], replay: Replay): Aggregation {
  const memberType = (id: number) => serverType(ir.values[id]!);
  const fill = (t: ValueType, value: number) => emit("fill", [], { shape: [...t.shape], value, dtype: t.dtype })[0]!;
  switch (node.op) {
    case "federated_sum":
    case "federated_max":
    case "federated_min": {
      const combine = node.op === "federated_sum" ? "add" : node.op === "federated_max" ? "maximum" : "minimum";
      const t = memberType(node.inputs[0]!);
      const start = node.op === "federated_sum" ? 0 : extreme(t.dtype, node.op === "federated_max" ? -1 : 1);
      return {
        node,
        members: [node.inputs[0]!],
        accumulator: [t],
        groupKeys: 0,
        zero: () => [fill(t, start)],
        accumulate: ([acc], [x]) => emit(combine, [acc!, emit(node.op, [x!])[0]!]),
        merge: ([a], [b]) => emit(combine, [a!, b!]),
        report: (acc) => acc,
      };
    }
    case "federated_mean": {
      const t = memberType(node.inputs[0]!);
      const count: ValueType = { shape: [], dtype: "float32", placement: "server" };
      return {
        node,
        members: [node.inputs[0]!],
        accumulator: [t, count],
        groupKeys: 0,
        zero: () => [fill(t, 0), fill(count, 0)],
        accumulate: ([sum, n], [x]) => [emit("add", [sum!, emit("federated_sum", [x!])[0]!])[0]!, emit("add", [n!, emit("client_count", [])[0]!])[0]!],
        merge: ([s1, n1], [s2, n2]) => [emit("add", [s1!, s2!])[0]!, emit("add", [n1!, n2!])[0]!],
        report: ([sum, n]) => emit("div", [sum!, n!]),
      };
    }
    case "secure_sum": {
      // Each chunk is one SecAgg+ group: its clients' masks cancel within it, under a key drawn
      // fresh for the group where the chunk runs, so the server learns each group's sum (and
      // the program's key, the server's, feeds no group). docs/distributed.md says what leaks.
      const t = memberType(node.inputs[0]!);
      const grouped = { ...node.attrs, grouped: true };
      return {
        node,
        members: [node.inputs[0]!],
        accumulator: [t],
        groupKeys: 1,
        zero: () => [fill(t, 0)],
        accumulate: ([acc], [x], [key]) => emit("add", [acc!, emit("secure_sum", [x!, key!], grouped)[0]!]),
        merge: ([a], [b]) => emit("add", [a!, b!]),
        report: (acc) => acc,
      };
    }
    default: {
      // aggregate: operands (members, zero), then per body (accumulate, merge, report) its captures.
      const { operands, captured } = splitCaptures(node, node.inputs);
      const memberCount = node.attrs.members as number;
      const [members, zeros] = [operands.slice(0, memberCount), operands.slice(memberCount)];
      const [accBody, mergeBody, reportBody] = node.bodies!;
      const accumulator = zeros.map(memberType);
      // The chunk's own fold: aggregate with report as the identity, merged into the incoming accumulator.
      const identity: Graph = { inputs: reportBody!.inputs.slice(0, zeros.length), nodes: [], outputs: reportBody!.inputs.slice(0, zeros.length) };
      const foldChunk: Node = { ...node, inputs: [...members, ...zeros, ...captured[0]!, ...captured[1]!], bodies: [accBody!, mergeBody!, identity], captures: [captured[0]!.length, captured[1]!.length, 0] };
      const mergeWith = (a: Tracer[], b: Tracer[]) => inline(mergeBody!, [...a, ...b, ...local(captured[1]!)], replay);
      return {
        node,
        members,
        accumulator,
        groupKeys: 0,
        zero: () => local(zeros),
        accumulate: (acc, xs) => {
          const ins = [...xs, ...local([...zeros, ...captured[0]!, ...captured[1]!])];
          return mergeWith(acc, reemit(foldChunk, ins, replay));
        },
        merge: (a, b) => mergeWith(a, b),
        report: (acc) => inline(reportBody!, [...acc, ...local(captured[2]!)], replay),
      };
    }
  }
}

/** Records a node in the part being traced. */
export function emit(op: string, inputs: readonly Tracer[], attrs: Node["attrs"] = {}): Tracer[] {
  return currentGraph(op).emit(op, inputs, attrs, op);
}

