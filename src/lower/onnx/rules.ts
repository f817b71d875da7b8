/**
 * Lowering to ONNX, one rule per primitive (the ONNX counterpart of src/lower/tfjs-rules.ts).
 * A rule emits ONNX nodes into the graph being built and returns the names of its outputs.
 * Shapes are concrete (the program was specialised), so every shape, axis list and pad is a
 * constant of the model. Opset 18 semantics: reductions and Slice/Pad/Reshape/Expand take
 * their axes and shapes as int64 inputs. Where onnxruntime's CPU kernels lack a dtype (Where
 * on bool branches) the rule uses ops it has.
 */
import type { DType, Graph, Node, ValueType } from "../../ir/types.js";
import type { OnnxGraph } from "./graph.js";
import { DataType } from "./proto.js";

export interface OnnxContext {
  /** The graph being built. */
  readonly g: OnnxGraph;
  readonly types: readonly ValueType[];
  /** The ONNX name of an IR value in scope. */
  name(id: number): string;
  /** The node of the IR graph being lowered that computed `id` (undefined for its inputs). */
  producer(id: number): Node | undefined;
  /** How many times the IR graph being lowered uses `id` (as an operand or an output). */
  uses(id: number): number;
  /** The nodes of the IR graph being lowered that take `id` as an operand. */
  consumers(id: number): readonly Node[];
  /** A client loop's member that is still row `index` of its cohort tensor (see CohortRow); undefined for any other value. */
  cohortRow(id: number): CohortRow | undefined;
  /** Lowers an IR body into `into`, its inputs bound to the given names or cohort rows; returns its outputs' names. */
  lowerBody(body: Graph, into: OnnxGraph, inputs: readonly BodyInput[]): string[];
}

/**
 * Row `index` of the cohort tensor `cohort` (axis 0: the clients): a client loop's member. Its
 * Gather is emitted only where a rule needs the whole row, so that a scan over it can read
 * each step straight from the cohort tensor instead of from a copy of the client's rows.
 */
export interface CohortRow {
  readonly cohort: string;
  readonly index: string;
}
export type BodyInput = string | CohortRow;

export type OnnxRule = (node: Node, cx: OnnxContext) => string[];

export const shapeOf = (cx: OnnxContext, id: number): number[] => cx.types[id]!.shape as number[];
export const inShape = (node: Node, cx: OnnxContext, i = 0): number[] => shapeOf(cx, node.inputs[i]!);
export const outShape = (node: Node, cx: OnnxContext, i = 0): number[] => shapeOf(cx, node.outputs[i]!);
const inputs = (node: Node, cx: OnnxContext): string[] => node.inputs.map((id) => cx.name(id));
export const normalized = (axis: number, rank: number) => (axis < 0 ? axis + rank : axis);

const onnxDataType: Record<DType, number> = { float32: DataType.FLOAT, int32: DataType.INT32, bool: DataType.BOOL };

/** The same ONNX op on the node's inputs (numpy broadcasting, as the IR's elementwise ops). */
const same =
  (type: string, attrs: (node: Node) => Record<string, number> = () => ({})): OnnxRule =>
  (node, cx) => [cx.g.op1(type, inputs(node, cx), attrs(node))];

export function reshape(cx: OnnxContext, x: string, shape: readonly number[]): string {
  return cx.g.op1("Reshape", [x, cx.g.model.ints(shape)]);
}
const toOutputShape: OnnxRule = (node, cx) => [reshape(cx, cx.name(node.inputs[0]!), outShape(node, cx))];

/**
 * Slices that cut one value into consecutive parts along one axis (an LSTM's four gates) become
 * one Split: one kernel where each slice was its own, and inside a loop every kernel's fixed cost
 * is paid at each step. The Split is emitted at the first of the slices; the others read its
 * outputs. Keyed by graph and value: each part's start along the axis, and its output.
 */
const splits = new WeakMap<OnnxGraph, Map<number, Map<number, string>>>();

function partOfSplit(node: Node, cx: OnnxContext): string | undefined {
  const x = node.inputs[0]!;
  const shape = inShape(node, cx);
  const cut = (n: Node) => {
    const { begin, size } = n.attrs as { begin: number[]; size: number[] };
    return begin.map((b, i) => ({ begin: b, size: size[i] === -1 ? shape[i]! - b : size[i]! }));
  };
  const axisOf = (n: Node) => cut(n).findIndex((c, i) => c.begin !== 0 || c.size !== shape[i]);
  let parts = splits.get(cx.g)?.get(x);
  if (parts === undefined) {
    const slices = cx.consumers(x).filter((n) => n.op === "slice");
    const axis = axisOf(node);
    if (slices.length < 2 || axis < 0) return undefined;
    const pieces = slices.map(cut);
    // Every slice cuts only this axis, and together they tile it from 0 to its end.
    if (!pieces.every((p) => p.every((c, i) => i === axis || (c.begin === 0 && c.size === shape[i])))) return undefined;
    const along = pieces.map((p) => p[axis]!).sort((a, b) => a.begin - b.begin);
    if (!along.every((c, k) => c.size > 0 && c.begin === (k === 0 ? 0 : along[k - 1]!.begin + along[k - 1]!.size))) return undefined;
    if (along.at(-1)!.begin + along.at(-1)!.size !== shape[axis]) return undefined;
    const outputs = cx.g.op("Split", [cx.name(x), cx.g.model.ints(along.map((c) => c.size))], { axis }, along.length);
    parts = new Map(along.map((c, k) => [c.begin, outputs[k]!]));
    if (!splits.has(cx.g)) splits.set(cx.g, new Map());
    splits.get(cx.g)!.set(x, parts);
  }
  return parts.get(cut(node)[axisOf(node)]?.begin ?? -1);
}

/** A reduction over `axes` (all when undefined); an empty axis list reduces nothing. */
function reduce(cx: OnnxContext, type: string, x: string, axes: readonly number[] | undefined, keepDims: boolean): string {
  if (axes !== undefined && axes.length === 0) return cx.g.op1("Identity", [x]);
  const axesInput = axes === undefined ? [] : [cx.g.model.ints(axes)];
  return cx.g.op1(type, [x, ...axesInput], { keepdims: keepDims ? 1 : 0 });
}
const reduction =
  (type: string): OnnxRule =>
  (node, cx) => {
    const rank = inShape(node, cx).length;
    const axes = node.attrs.axes === null ? undefined : (node.attrs.axes as number[]).map((a) => normalized(a, rank));
    return [reduce(cx, type, cx.name(node.inputs[0]!), axes, node.attrs.keepDims === true)];
  };

/** x with unit dims at `axes` of the target (when given), then broadcast to the target shape. */
const broadcastInto: OnnxRule = (node, cx) => {
  const target = outShape(node, cx);
  const source = inShape(node, cx);
  const axes = node.attrs.axes as number[] | undefined;
  let x = cx.name(node.inputs[0]!);
  if (axes !== undefined) {
    const at = axes.map((a) => normalized(a, target.length));
    let next = 0;
    x = reshape(cx, x, target.map((_, i) => (at.includes(i) ? 1 : source[next++]!)));
  }
  return [cx.g.op1("Expand", [x, cx.g.model.ints(target)])];
};

/** x summed down to the target shape (over attrs.axes first, when given). */
const sumInto: OnnxRule = (node, cx) => {
  const target = outShape(node, cx);
  const source = inShape(node, cx);
  const first = (node.attrs.axes as number[] | undefined)?.map((a) => normalized(a, source.length));
  const afterFirst = first === undefined ? source : source.filter((_, i) => !first.includes(i));
  const lead = afterFirst.length - target.length;
  const rest = afterFirst.map((_, i) => i).filter((i) => i < lead || (target[i - lead] === 1 && afterFirst[i] !== 1));
  let x = cx.name(node.inputs[0]!);
  if (first !== undefined) x = reduce(cx, "ReduceSum", x, first, false);
  if (rest.length > 0) x = reduce(cx, "ReduceSum", x, rest, true);
  return [reshape(cx, x, target)];
};

/** A constant tensor: attrs.value is one number for every entry or the nested entries. */
const constant: OnnxRule = (node, cx) => {
  const shape = node.attrs.shape as number[];
  const size = shape.reduce((n, d) => n * d, 1);
  const value = node.attrs.value as number | unknown[];
  const values = typeof value === "number" ? new Array<number>(size).fill(value) : (value.flat(Infinity) as number[]);
  return [cx.g.model.constant(node.attrs.dtype as DType, shape, values)];
};

/** Where on bool branches, which onnxruntime has no kernel for: (c and a) or (not c and b). */
function whereOfBools(cx: OnnxContext, [c, a, b]: readonly string[]): string {
  const g = cx.g;
  return g.op1("Or", [g.op1("And", [c!, a!]), g.op1("And", [g.op1("Not", [c!]), b!])]);
}

/** log1p (ONNX has no op): Goldberg's log(u) * x / (u - 1) with u = 1 + x, x where u is 1 or +inf (see tfjs-rules.ts). */
function log1p(cx: OnnxContext, x: string): string {
  const { g } = cx;
  const one = g.model.scalar("float32", 1);
  const u = g.op1("Add", [x, one]);
  const ratio = g.op1("Mul", [g.op1("Log", [u]), g.op1("Div", [x, g.op1("Sub", [u, one])])]);
  const exact = g.op1("Or", [g.op1("Equal", [u, one]), g.op1("IsInf", [u], { detect_negative: 0 })]);
  return g.op1("Where", [exact, x, ratio]);
}

/** Float a mod b with the sign of b: C's fmod (ONNX Mod takes floats only so), plus b where that is non-zero and of the other sign. */
function floatMod(cx: OnnxContext, [a, b]: readonly [string, string]): string {
  const { g } = cx;
  const zero = g.model.scalar("float32", 0);
  const rem = g.op1("Mod", [a, b], { fmod: 1 });
  const otherSign = g.op1("Xor", [g.op1("Less", [rem, zero]), g.op1("Less", [b, zero])]);
  const adjust = g.op1("And", [g.op1("Not", [g.op1("Equal", [rem, zero])]), otherSign]);
  return g.op1("Where", [adjust, g.op1("Add", [rem, b]), rem]);
}

/** int32 a mod b (ONNX Mod's integer form has the sign of b), zero divisors replaced by 1 and a mod 0 = a (see tfjs-rules.ts). */
function intMod(cx: OnnxContext, [a, b]: readonly [string, string]): string {
  const { g } = cx;
  const zero = g.op1("Cast", [g.op1("Equal", [b, g.model.scalar("int32", 0)])], { to: DataType.INT32 });
  return g.op1("Add", [g.op1("Mod", [a, g.op1("Add", [b, zero])], { fmod: 0 }), g.op1("Mul", [a, zero])]);
}

/** Rules of the elementwise, array and reduction primitives. */
export const tensorRules: Record<string, OnnxRule> = {
  neg: same("Neg"),
  abs: same("Abs"),
  sign: same("Sign"),
  relu: same("Relu"),
  exp: same("Exp"),
  log: same("Log"),
  sqrt: same("Sqrt"),
  sigmoid: same("Sigmoid"),
  tanh: same("Tanh"),
  sin: same("Sin"),
  cos: same("Cos"),
  log1p: (node, cx) => [log1p(cx, cx.name(node.inputs[0]!))],
  floor: same("Floor"),
  round: same("Round"),
  logical_not: same("Not"),
  stop_gradient: same("Identity"),
  cast: same("Cast", (node) => ({ to: onnxDataType[node.attrs.dtype as DType] })),
  add: same("Add"),
  sub: same("Sub"),
  mul: same("Mul"),
  div: same("Div"),
  pow: same("Pow"),
  mod: (node, cx) => [(cx.types[node.outputs[0]!]!.dtype === "int32" ? intMod : floatMod)(cx, inputs(node, cx) as [string, string])],
  maximum: same("Max"),
  minimum: same("Min"),
  less: same("Less"),
  less_equal: same("LessOrEqual"),
  greater: same("Greater"),
  greater_equal: same("GreaterOrEqual"),
  equal: same("Equal"),
  not_equal: (node, cx) => [cx.g.op1("Not", [cx.g.op1("Equal", inputs(node, cx))])],
  logical_and: same("And"),
  logical_or: same("Or"),
  where: (node, cx) => [cx.types[node.outputs[0]!]!.dtype === "bool" ? whereOfBools(cx, inputs(node, cx)) : cx.g.op1("Where", inputs(node, cx))],

  constant,
  fill: constant,
  iota: (node, cx) => {
    const length = node.attrs.length as number;
    return [cx.g.model.constant("int32", [length], Array.from({ length }, (_, i) => i))];
  },
  dim_size: (node, cx) => {
    const shape = inShape(node, cx);
    const axes = node.attrs.axes === null ? shape.map((_, i) => i) : (node.attrs.axes as number[]);
    return [cx.g.model.scalar("float32", axes.reduce((n, a) => n * shape[normalized(a, shape.length)]!, 1))];
  },

  matmul: same("MatMul"),
  transpose: (node, cx) => {
    const rank = inShape(node, cx).length;
    const perm = (node.attrs.perm as number[] | null) ?? [...Array(rank).keys()].reverse();
    return [cx.g.op1("Transpose", [cx.name(node.inputs[0]!)], { perm })];
  },
  reshape: toOutputShape,
  reshape_like: toOutputShape,
  expand_dims: toOutputShape,
  broadcast_to: broadcastInto,
  broadcast_like: broadcastInto,
  unbroadcast: sumInto,
  concat: (node, cx) => [cx.g.op1("Concat", inputs(node, cx), { axis: normalized(node.attrs.axis as number, outShape(node, cx).length) })],
  slice: (node, cx) => {
    const part = partOfSplit(node, cx);
    if (part !== undefined) return [part];
    const { begin, size } = node.attrs as { begin: number[]; size: number[] };
    const shape = inShape(node, cx);
    const ends = begin.map((b, i) => (size[i] === -1 ? shape[i]! : b + size[i]!));
    const m = cx.g.model;
    return [cx.g.op1("Slice", [cx.name(node.inputs[0]!), m.ints(begin), m.ints(ends), m.ints(begin.map((_, i) => i))])];
  },
  pad: (node, cx) => {
    const { before, after } = node.attrs as { before: number[]; after: number[] };
    return [cx.g.op1("Pad", [cx.name(node.inputs[0]!), cx.g.model.ints([...before, ...after])])];
  },
  // Rows of an identity: an index outside [0, depth) gives a row of zeros, as in the reference
  // (ONNX's OneHot would count negative indices from the end).
  one_hot: (node, cx) => {
    const depth = node.attrs.depth as number;
    const column = reshape(cx, cx.name(node.inputs[0]!), [...inShape(node, cx), 1]);
    const positions = cx.g.model.constant("int32", [depth], Array.from({ length: depth }, (_, i) => i));
    return [cx.g.op1("Cast", [cx.g.op1("Equal", [column, positions])], { to: DataType.FLOAT })];
  },
  reduce_sum: reduction("ReduceSum"),
  reduce_mean: reduction("ReduceMean"),
  reduce_max: reduction("ReduceMax"),
  reduce_min: reduction("ReduceMin"),
  argmax: (node, cx) => {
    const axis = normalized(node.attrs.axis as number, inShape(node, cx).length);
    const indices = cx.g.op1("ArgMax", [cx.name(node.inputs[0]!)], { axis, keepdims: 0 });
    return [cx.g.op1("Cast", [indices], { to: DataType.INT32 })];
  },
  softmax: same("Softmax", (node) => ({ axis: node.attrs.axis as number })),
  log_softmax: same("LogSoftmax", (node) => ({ axis: node.attrs.axis as number })),
};
