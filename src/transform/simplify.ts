/**
 * Simplification of a specialised program (every dim a number), before client batching and
 * again after it.
 *
 * Gradients are written rule by rule, so they contain work a person would not write: shape
 * ops that do nothing at these shapes, broadcasts that the next elementwise op would do
 * anyway, zeros rebuilt at every step, the same subexpression twice, the padded pieces of a
 * sliced value added up, and the loops of scan's rule (scan-rewrites.ts). Each costs a kernel
 * call per step; on tfjs wasm a small kernel costs about as much as its arithmetic, so this
 * pass matters for speed. It changes no value's result beyond the order of float32 sums.
 */
import { currentGraph, GraphBuilder, recordInto, ValueTable, type Tracer } from "../front/trace.js";
import type { Graph, Node, Placement, ProgramIR, ValueType } from "../ir/types.js";
import { inline, type Replay } from "./inline.js";
import { mergeRepeatedScans, rewrittenScan } from "./scan-rewrites.js";

const elementwiseBinary = new Set([
  "add", "sub", "mul", "div", "pow", "maximum", "minimum", "less", "less_equal", "greater", "greater_equal",
  "equal", "not_equal", "logical_and", "logical_or", "where",
]);
const shapeOnly = new Set(["reshape", "reshape_like", "broadcast_like", "broadcast_to", "unbroadcast"]);

const sameDims = (a: readonly unknown[], b: readonly unknown[]) => a.length === b.length && a.every((d, i) => d === b[i]);
const numpyShape = (shapes: readonly (readonly number[])[]): number[] => {
  const rank = Math.max(...shapes.map((s) => s.length));
  return Array.from({ length: rank }, (_, i) => Math.max(...shapes.map((s) => s[s.length - rank + i] ?? 1)));
};

/** Local and member values are both unplaced: interchangeable here. */
const samePlacement = (a: Placement, b: Placement) => a === b || ((a === "local" || a === "member") && (b === "local" || b === "member"));

/** A sum of zero-padded pieces of one axis (the cotangent of slicing a value into parts). */
interface PaddedPieces {
  readonly axis: number;
  readonly pieces: readonly { readonly begin: number; readonly value: Tracer }[];
}

/** What produced a value, for rules that look one step back. */
interface Producer {
  readonly op: string;
  readonly inputs: readonly Tracer[];
  readonly attrs: Node["attrs"];
}

class Simplifier implements Replay {
  private readonly producers = new Map<number, Producer>();
  private readonly seen = new WeakMap<GraphBuilder, Map<string, Tracer[]>>();
  private readonly padded = new Map<number, PaddedPieces>();

  constructor(private readonly types: readonly ValueType[]) {}

  node(node: Node, inputs: readonly Tracer[], attrs: Node["attrs"]): Tracer[] | undefined {
    if (node.bodies !== undefined) return node.op === "scan" ? rewrittenScan(node, inputs, this.types, this) : undefined;
    const simplified = this.rewrite(node.op, inputs, attrs);
    // Placements are part of the program's meaning (broadcast() checks them): keep them.
    if (simplified !== undefined && samePlacement(simplified.placement, this.types[node.outputs[0]!]!.placement)) return [simplified];
    return this.emitShared(node.op, inputs, attrs);
  }

  /** A value already computed for this node, or the value it reduces to; undefined to emit it. */
  private rewrite(op: string, inputs: readonly Tracer[], attrs: Node["attrs"]): Tracer | undefined {
    const x = inputs[0];
    if (x !== undefined && shapeOnly.has(op) && attrs.axes === undefined) {
      const out = op.endsWith("_like") || op === "unbroadcast" ? inputs[1]!.shape : (attrs.shape as number[]);
      if (sameDims(x.shape, out)) return x;
      const source = this.producers.get(x.id);
      if ((op === "broadcast_like" || op === "broadcast_to") && source?.op === "constant" && source.attrs.shape instanceof Array && source.attrs.shape.length === 0) {
        // A broadcast constant (zeros and ones of gradients) is made once, at compile time.
        return this.emitShared("fill", [], { shape: [...out], value: source.attrs.value ?? 0, dtype: x.dtype })[0];
      }
    }
    if (op === "transpose" && Array.isArray(attrs.perm) && (attrs.perm as number[]).every((p, i) => p === i)) return x;
    if (op === "cast" && x!.dtype === attrs.dtype) return x;
    if (op === "stop_gradient") return x;
    const identity = op === "mul" ? 1 : op === "add" ? 0 : undefined;
    if (identity !== undefined) {
      // x * 1 and x + 0 (seeds of gradients meet them) are x, when x already has the result's shape.
      const [a, b] = inputs as [Tracer, Tracer];
      const isIdentity = (t: Tracer) => {
        const source = this.producers.get(t.id);
        return source?.op === "constant" && source.attrs.value === identity && t.shape.length === 0;
      };
      const out = numpyShape([a.shape as number[], b.shape as number[]]);
      if (isIdentity(b) && sameDims(a.shape, out)) return a;
      if (isIdentity(a) && sameDims(b.shape, out)) return b;
    }
    if (op === "add") {
      const joined = this.joinedPieces(inputs[0]!, inputs[1]!);
      if (joined !== undefined) return joined;
    }
    if (elementwiseBinary.has(op)) return this.withoutBroadcasts(op, inputs, attrs);
    return undefined;
  }

  /** x as padded pieces of one axis, if it is a pad along one axis or a sum of such. */
  private piecesOf(x: Tracer): PaddedPieces | undefined {
    const known = this.padded.get(x.id);
    if (known !== undefined) return known;
    const source = this.producers.get(x.id);
    if (source?.op !== "pad") return undefined;
    const { before, after } = source.attrs as { before: number[]; after: number[] };
    const axes = before.flatMap((b, i) => (b !== 0 || after[i] !== 0 ? [i] : []));
    return axes.length === 1 ? { axis: axes[0]!, pieces: [{ begin: before[axes[0]!]!, value: source.inputs[0]! }] } : undefined;
  }

  /**
   * The sum of disjoint padded pieces of one axis: the concatenation once they cover the axis
   * (one kernel where the gradient of four slices, an LSTM's gates, takes four pads and three
   * adds), else the add, remembered as pieces for the next.
   */
  private joinedPieces(a: Tracer, b: Tracer): Tracer | undefined {
    const [p, q] = [this.piecesOf(a), this.piecesOf(b)];
    if (p === undefined || q === undefined || p.axis !== q.axis || !sameDims(a.shape, b.shape) || a.dtype !== b.dtype) return undefined;
    const pieces = [...p.pieces, ...q.pieces].sort((x, y) => x.begin - y.begin);
    const size = a.shape[p.axis] as number;
    let [end, contiguous] = [0, true];
    for (const piece of pieces) {
      if (piece.begin < end) return undefined;
      contiguous &&= piece.begin === end;
      end = piece.begin + (piece.value.shape[p.axis] as number);
    }
    if (contiguous && end === size) return this.emitShared("concat", pieces.map((piece) => piece.value), { axis: p.axis })[0];
    const sum = this.emitShared("add", [a, b], {})[0]!;
    this.padded.set(sum.id, { axis: p.axis, pieces });
    return sum;
  }

  /**
   * An elementwise op on a broadcast value can take the value before broadcasting, since the
   * op broadcasts anyway (a reshape puts unit dims where a reduction's cotangent needs them).
   * Not for where(): tfjs's select wants equal shapes, so a broadcast there is made once.
   */
  private withoutBroadcasts(op: string, inputs: readonly Tracer[], attrs: Node["attrs"]): Tracer | undefined {
    if (op === "where") return undefined;
    const outShape = numpyShape(inputs.map((t) => t.shape as number[]));
    // Operands are narrowed one at a time, each checked against the others as already narrowed,
    // so that two broadcasts never both drop the dims only they supplied.
    const narrowed = [...inputs];
    let changed = false;
    inputs.forEach((t, i) => {
      const source = this.producers.get(t.id);
      if (source === undefined || (source.op !== "broadcast_like" && source.op !== "broadcast_to")) return;
      const candidateShape = this.unbroadcastShape(source, t);
      const shapes = narrowed.map((u, j) => (j === i ? candidateShape : (u.shape as number[])));
      if (!sameDims(numpyShape(shapes), outShape)) return;
      changed = true;
      const value = source.inputs[0]!;
      narrowed[i] = sameDims(value.shape, candidateShape) ? value : this.emitShared("reshape", [value], { shape: candidateShape })[0]!;
    });
    return changed ? this.emitShared(op, narrowed, attrs)[0] : undefined;
  }

  /**
   * The shape of a broadcast's input with unit dims at the broadcast axes (if it had axes),
   * less leading unit dims, which numpy alignment supplies anyway.
   */
  private unbroadcastShape(source: Producer, broadcast: Tracer): number[] {
    const value = source.inputs[0]!.shape as number[];
    const axes = source.attrs.axes as number[] | undefined;
    if (axes === undefined) return value;
    const rank = broadcast.shape.length;
    const at = axes.map((a) => (a < 0 ? a + rank : a));
    let next = 0;
    const withUnits = Array.from({ length: rank }, (_, i) => (at.includes(i) ? 1 : value[next++]!));
    const firstDim = withUnits.findIndex((d) => d !== 1);
    return firstDim < 0 ? [] : withUnits.slice(firstDim);
  }


  /** Emits a node, or returns the outputs of an identical node already in this graph. */
  private emitShared(op: string, inputs: readonly Tracer[], attrs: Node["attrs"]): Tracer[] {
    const graph = currentGraph(op);
    let table = this.seen.get(graph);
    if (table === undefined) this.seen.set(graph, (table = new Map()));
    const key = `${op}|${inputs.map((t) => t.id).join(",")}|${JSON.stringify(attrs)}`;
    const known = table.get(key);
    if (known !== undefined) return known;
    const outs = graph.emit(op, inputs, attrs, op);
    table.set(key, outs);
    outs.forEach((t) => this.producers.set(t.id, { op, inputs, attrs }));
    return outs;
  }
}

/**
 * A scan without the stacked outputs nothing uses, and so without the work that made them
 * (a gradient's backward scan computes the cotangent of every float xs, wanted or not).
 */
function withoutUnusedYs(node: Node, live: ReadonlySet<number>): Node {
  const carries = node.attrs.carries as number;
  const keep = node.outputs.map((id, i) => i < carries || live.has(id));
  if (keep.every(Boolean)) return node;
  const body = node.bodies![0]!;
  return { ...node, outputs: node.outputs.filter((_, i) => keep[i]), bodies: [{ ...body, outputs: body.outputs.filter((_, i) => keep[i]) }] };
}

/** Drops nodes whose outputs nothing uses (all primitives are pure), in bodies too. */
export function eliminateDeadNodes(graph: Graph): Graph {
  const live = new Set(graph.outputs);
  const kept: Node[] = [];
  for (const used of [...graph.nodes].reverse()) {
    if (!used.outputs.some((id) => live.has(id))) continue;
    const node = used.op === "scan" ? withoutUnusedYs(used, live) : used;
    node.inputs.forEach((id) => live.add(id));
    kept.push(node.bodies === undefined ? node : { ...node, bodies: node.bodies.map(eliminateDeadNodes) });
  }
  return { ...graph, nodes: kept.reverse() };
}

export function simplify(ir: ProgramIR): ProgramIR {
  const values = new ValueTable();
  const root = new GraphBuilder(values, undefined);
  const simplifier = new Simplifier(ir.values);
  const outputs = recordInto(root, () =>
    inline(mergeRepeatedScans(ir.graph), ir.graph.inputs.map((id) => root.addInput(ir.values[id]!)), simplifier),
  );
  return { ...ir, values: values.types, graph: eliminateDeadNodes(root.finish(outputs)) };
}
