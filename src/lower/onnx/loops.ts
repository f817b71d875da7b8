/**
 * scan as ONNX Scan where it has xs (steps read as views, ys written in place), else, like
 * client_loop, as ONNX Loop: the trip count is a constant, loop-carried values are the scan's
 * carries, and Loop's scan outputs stack the per-step (or per-client) results along a new
 * axis 0. A Loop body reads its step of an operand with Gather; values a body captures are
 * named directly, as ONNX sub-graphs see their outer scopes.
 */
import { ftError } from "../../errors/error.js";
import type { Node, ValueType } from "../../ir/types.js";
import { OnnxGraph, valueInfo, type ElementType } from "./graph.js";
import { shapeOf, type OnnxContext, type OnnxRule } from "./rules.js";

interface Typed {
  readonly name: string;
  readonly type: ElementType;
  readonly shape: readonly number[];
}
const typed = (name: string, t: ValueType): Typed => ({ name, type: t.dtype, shape: t.shape as number[] });

/** A check inside a loop body has no model output to report through (a secure sum in a loop of rounds): FT312. */
function requireNoChecks(body: OnnxGraph): void {
  if (body.checks.length > 0) throw ftError("FT312", { what: "placement", why: "a secure sum inside scan() or fori() does not lower to onnx; run each round as its own program" });
}

/** A Loop body under construction: its iteration number and condition, then what it computes. */
class LoopBody {
  readonly g: OnnxGraph;
  readonly iteration: string;
  private readonly condition: string;

  constructor(private readonly cx: OnnxContext) {
    this.g = new OnnxGraph(cx.g.model);
    this.iteration = cx.g.model.fresh("iteration");
    this.condition = cx.g.model.fresh("condition");
  }

  /** The Loop node running this body `trips` times; returns the final carries, then the stacked outputs. */
  emit(trips: number, init: readonly string[], carriedIn: readonly Typed[], carriedOut: readonly Typed[], stacked: readonly Typed[]): string[] {
    const model = this.cx.g.model;
    requireNoChecks(this.g);
    const inputs: Typed[] = [{ name: this.iteration, type: "int64", shape: [] }, { name: this.condition, type: "bool", shape: [] }, ...carriedIn];
    const body = this.g.finish(
      model.fresh("body"),
      inputs.map((t) => valueInfo(t.name, t.type, t.shape)),
      [{ name: this.condition, type: "bool", shape: [] }, ...carriedOut, ...stacked],
    );
    return this.cx.g.op("Loop", [model.scalar("int64", trips), "", ...init], { body }, carriedOut.length + stacked.length);
  }
}

/**
 * Step `index` of a scanned operand. The client batching hands a scan its batched xs as
 * transpose([C, S, ...], [1, 0, ...]); the step is then gathered from the untransposed
 * tensor along axis 1, which saves copying all the data into step order first. A client
 * loop's member (a client's batches, [S, ...] of the cohort's [C, S, ...]) is read the same
 * way: step `index` of client `row.index` straight from the cohort tensor, with no copy of the
 * client's rows before its scan.
 */
function stepOf(cx: OnnxContext, body: OnnxGraph, id: number, index: string): string {
  const row = cx.cohortRow(id);
  if (row !== undefined) {
    const at = (scalar: string) => body.op1("Unsqueeze", [scalar, cx.g.model.ints([0])]);
    return body.op1("GatherND", [row.cohort, body.op1("Concat", [at(row.index), at(index)], { axis: 0 })]);
  }
  const { name, axis } = steppedOperand(cx, id);
  return body.op1("Gather", [name, index], { axis });
}

/**
 * The tensor whose steps a scanned operand reads, and the axis they are on: a batched xs (the
 * transpose of [C, S, ...] to [S, C, ...]) is read along axis 1 of the untransposed tensor.
 */
function steppedOperand(cx: OnnxContext, id: number): { name: string; axis: number } {
  const producer = cx.producer(id);
  const perm = producer?.op === "transpose" ? (producer.attrs.perm as number[] | null) : null;
  const swapsLeadingAxes = perm !== null && perm[0] === 1 && perm[1] === 0 && perm.slice(2).every((p, i) => p === i + 2);
  return swapsLeadingAxes ? { name: cx.name(producer!.inputs[0]!), axis: 1 } : { name: cx.name(id), axis: 0 };
}

function zerosOf(cx: OnnxContext, t: ValueType): string {
  const shape = t.shape as number[];
  return cx.g.model.constant(t.dtype, shape, new Float32Array(shape.reduce((n, d) => n * d, 1)));
}

const splitCaptured = (node: Node) => {
  const captured = node.captures?.[0] ?? 0;
  return { operands: node.inputs.slice(0, node.inputs.length - captured), captured: node.inputs.slice(node.inputs.length - captured) };
};

/**
 * A scan with xs as ONNX Scan: onnxruntime hands the body each step of the xs as a view and
 * writes each step's ys into place (in either direction), where a Loop's body pays a Gather
 * kernel per xs and step (an LSTM's backward step reads a dozen) and its stacked outputs are
 * joined at the end. Not when an xs is a client's rows still in the cohort tensor (Loop reads
 * each step straight from there, without copying the client's rows first).
 */
const scanWithXs: OnnxRule = (node, cx) => {
  const body = node.bodies![0]!;
  const carries = node.attrs.carries as number;
  const backward = node.attrs.reverse === true ? 1 : 0;
  const { operands, captured } = splitCaptured(node);
  const xs = operands.slice(carries).map((id) => steppedOperand(cx, id));
  const model = cx.g.model;
  const g = new OnnxGraph(model);
  const params = body.inputs.slice(0, carries + xs.length).map((id) => typed(model.fresh("step"), cx.types[id]!));
  const outs = cx.lowerBody(body, g, [...params.map((t) => t.name), ...captured.map((id) => cx.name(id))]);
  requireNoChecks(g);
  const ys = body.outputs.length - carries;
  const graph = g.finish(
    model.fresh("body"),
    params.map((t) => valueInfo(t.name, t.type, t.shape)),
    body.outputs.map((id, i) => ({ name: outs[i]!, type: cx.types[id]!.dtype, shape: cx.types[id]!.shape as number[] })),
  );
  const init = operands.slice(0, carries).map((id) => cx.name(id));
  return cx.g.op("Scan", [...init, ...xs.map((x) => x.name)], {
    body: graph,
    num_scan_inputs: xs.length,
    scan_input_directions: xs.map(() => backward),
    scan_input_axes: xs.map((x) => x.axis),
    scan_output_directions: Array<number>(ys).fill(backward),
  }, node.outputs.length);
};

/** A loop over steps: carries thread through, xs are read a step at a time, ys are stacked (reversed for reverse scans). */
const scan: OnnxRule = (node, cx) => {
  const body = node.bodies![0]!;
  const carries = node.attrs.carries as number;
  const reverse = node.attrs.reverse === true;
  const { operands, captured } = splitCaptured(node);
  const xs = operands.slice(carries);
  const init = operands.slice(0, carries).map((id) => cx.name(id));
  const outTypes = node.outputs.map((id) => cx.types[id]!);
  const steps = xs.length > 0 ? shapeOf(cx, xs[0]!)[0]! : (node.attrs.length as number);
  if (steps === 0) return [...init.map((name) => cx.g.op1("Identity", [name])), ...outTypes.slice(carries).map((t) => zerosOf(cx, t))];
  if (xs.length > 0 && xs.every((id) => cx.cohortRow(id) === undefined)) return scanWithXs(node, cx);

  const loop = new LoopBody(cx);
  const model = cx.g.model;
  const index = reverse ? loop.g.op1("Sub", [model.scalar("int64", steps - 1), loop.iteration]) : loop.iteration;
  const carriedIn = body.inputs.slice(0, carries).map((id) => typed(model.fresh("carry"), cx.types[id]!));
  const stepInputs = xs.map((id) => stepOf(cx, loop.g, id, index));
  const outs = cx.lowerBody(body, loop.g, [...carriedIn.map((t) => t.name), ...stepInputs, ...captured.map((id) => cx.name(id))]);
  const bodyOut = body.outputs.map((id, i) => typed(outs[i]!, cx.types[id]!));
  const results = loop.emit(steps, init, carriedIn, bodyOut.slice(0, carries), bodyOut.slice(carries));
  if (!reverse) return results;
  // Loop stacks in iteration order, which for a reverse scan is last step first.
  const flip = (ys: string) => cx.g.op1("Slice", [ys, model.ints([steps - 1]), model.ints([-steps - 1]), model.ints([0]), model.ints([-1])]);
  return results.map((name, i) => (i < carries ? name : flip(name)));
};

/** The per-client form of a map: its function once per client, the batched operands read a client at a time. */
const clientLoop: OnnxRule = (node, cx) => {
  const body = node.bodies![0]!;
  const batched = node.attrs.batched as boolean[];
  const { operands, captured } = splitCaptured(node);
  const loop = new LoopBody(cx);
  const members = operands.map((id, i) => (batched[i] ? { cohort: cx.name(id), index: loop.iteration } : cx.name(id)));
  const outs = cx.lowerBody(body, loop.g, [...members, ...captured.map((id) => cx.name(id))]);
  const stacked = body.outputs.map((id, i) => typed(outs[i]!, cx.types[id]!));
  return loop.emit(node.attrs.clients as number, [], [], [], stacked);
};

export const loopRules: Record<string, OnnxRule> = { scan, client_loop: clientLoop };
