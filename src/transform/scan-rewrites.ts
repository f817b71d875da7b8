/**
 * Rewrites of scans that a gradient leaves behind, applied by simplify() (every dim a number).
 *
 * The reverse-mode rule of scan (vjp-control.ts) is written like every other rule, one node at a
 * time, so it leaves costs a person writing the backward pass by hand would not pay:
 *
 * - The primal scan and the "forward again" scan that stores each step's carry run the same body
 *   on the same operands; the second computes everything the first does. mergeRepeatedScans keeps
 *   one loop: on a character LSTM's round that is one scan of three.
 * - The cotangent of a weight the body multiplies by is summed in a carry, acc + a_tᵀ b_t, a
 *   rank-n update of the whole weight at every step: memory-bound, since n is the batch. Summed
 *   after the loop instead, as one product of the stacked a and b ([T*n, r]ᵀ [T*n, s]), it is a
 *   GEMM deep enough to run near the machine's peak (rewrittenScan).
 * - The backward scan recomputes the forward step from the stored carries, work that does not
 *   depend on its own carries: that part runs before the loop for all steps at once, batched
 *   over the steps (withStepOnlyPartHoisted), and the xs nothing reads any more are dropped.
 *
 * They change only the order in which float32 sums are taken; all primitives are pure, so two
 * scans on the same operands compute the same values. docs/runtime.md, "Scans after a gradient".
 */
import { currentGraph, traceBody, Tracer } from "../front/trace.js";
import { primitives } from "../ir/primitives.js";
import type { Graph, Node, ValueType } from "../ir/types.js";
import { batchRules } from "./batch-rules.js";
import { inline, splitCaptures, type Replay } from "./inline.js";

/** Binds b's value ids to a's as a's nodes are matched to b's in order; false where they differ. */
function matchGraphs(a: Graph, b: Graph, ids: Map<number, number>): boolean {
  if (a.inputs.length !== b.inputs.length || a.nodes.length !== b.nodes.length) return false;
  a.inputs.forEach((id, k) => ids.set(id, b.inputs[k]!));
  return a.nodes.every((m, k) => {
    const n = b.nodes[k]!;
    const same =
      m.op === n.op &&
      m.inputs.length === n.inputs.length &&
      m.outputs.length === n.outputs.length &&
      m.inputs.every((id, q) => ids.get(id) === n.inputs[q]) &&
      JSON.stringify(m.attrs) === JSON.stringify(n.attrs) &&
      JSON.stringify(m.captures) === JSON.stringify(n.captures) &&
      (m.bodies?.length ?? 0) === (n.bodies?.length ?? 0) &&
      (m.bodies ?? []).every((body, q) => matchGraphs(body, n.bodies![q]!, ids) && body.outputs.every((id, o) => ids.get(id) === n.bodies![q]!.outputs[o]));
    if (same) m.outputs.forEach((id, q) => ids.set(id, n.outputs[q]!));
    return same;
  });
}

/** A scan's attributes, with reverse: false and an absent reverse alike. */
const scanAttrs = (node: Node) => JSON.stringify(Object.entries({ ...node.attrs, reverse: node.attrs.reverse === true }).sort(([a], [b]) => a.localeCompare(b)));

/** later computes all earlier does: same operands, same steps, and a body whose first outputs are earlier's. */
function subsumes(later: Node, earlier: Node): boolean {
  if (later.inputs.length !== earlier.inputs.length || later.outputs.length < earlier.outputs.length) return false;
  if (!later.inputs.every((id, k) => id === earlier.inputs[k]) || scanAttrs(later) !== scanAttrs(earlier)) return false;
  if (JSON.stringify(later.captures) !== JSON.stringify(earlier.captures)) return false;
  const [a, b] = [earlier.bodies![0]!, later.bodies![0]!];
  const ids = new Map<number, number>();
  return matchGraphs(a, b, ids) && a.outputs.every((id, k) => ids.get(id) === b.outputs[k]);
}

/**
 * A scan that computes all an earlier scan of the graph computes takes the earlier's place, and
 * the earlier's outputs are read from it (in bodies too). Value ids only move, so types hold.
 */
export function mergeRepeatedScans(graph: Graph): Graph {
  const nodes: (Node | undefined)[] = graph.nodes.map((n) => (n.bodies === undefined ? n : { ...n, bodies: n.bodies.map(mergeRepeatedScans) }));
  const renamed = new Map<number, number>();
  nodes.forEach((later, j) => {
    if (later?.op !== "scan") return;
    const i = nodes.findIndex((earlier, k) => k < j && earlier?.op === "scan" && subsumes(later, earlier));
    if (i < 0) return;
    const earlier = nodes[i]!;
    nodes[i] = { ...later, outputs: [...earlier.outputs, ...later.outputs.slice(earlier.outputs.length)] };
    later.outputs.slice(0, earlier.outputs.length).forEach((id, k) => renamed.set(id, earlier.outputs[k]!));
    nodes[j] = undefined;
  });
  if (renamed.size === 0) return { ...graph, nodes: nodes as Node[] };
  const rename = (id: number) => renamed.get(id) ?? id;
  return {
    inputs: graph.inputs,
    nodes: nodes.filter((n): n is Node => n !== undefined).map((n) => ({ ...n, inputs: n.inputs.map(rename) })),
    outputs: graph.outputs.map(rename),
  };
}

/** Carry k of a scan body that is acc + transpose(a) b: k, and the ids of a and b. */
interface Accumulation {
  readonly carry: number;
  readonly a: number;
  readonly b: number;
  /** The body's add node, dropped with the carry. */
  readonly add: Node;
}

/** Ops that only reshape or broadcast: a gradient's rules leave them where shapes already agree. */
const shapeOps = new Set(["reshape", "reshape_like", "broadcast_like", "broadcast_to", "unbroadcast"]);

function accumulations(body: Graph, carries: number, types: readonly ValueType[]): { found: Accumulation[]; source: (id: number) => number } {
  const producers = new Map<number, Node>();
  const uses = new Map<number, number>();
  for (const node of body.nodes) {
    node.outputs.forEach((id) => producers.set(id, node));
    node.inputs.forEach((id) => uses.set(id, (uses.get(id) ?? 0) + 1));
  }
  body.outputs.forEach((id) => uses.set(id, (uses.get(id) ?? 0) + 1));
  const usedOnce = (id: number) => uses.get(id) === 1;
  const shapeOf = (id: number) => JSON.stringify(types[id]!.shape);
  /** What made id, looking through shape ops that change nothing (each used only on this path). */
  const isNoOp = (node: Node | undefined, id: number) =>
    node !== undefined && shapeOps.has(node.op) && node.attrs.axes === undefined && shapeOf(node.inputs[0]!) === shapeOf(id);
  const producer = (id: number): Node | undefined => {
    const node = producers.get(id);
    return isNoOp(node, id) && usedOnce(node!.inputs[0]!) ? producer(node!.inputs[0]!) : node;
  };
  /** The value id holds before shape ops that change nothing. */
  const source = (id: number): number => (isNoOp(producers.get(id), id) ? source(producers.get(id)!.inputs[0]!) : id);
  const is2d = (id: number) => types[id]!.shape.length === 2 && types[id]!.shape.every((d) => typeof d === "number");
  const found: Accumulation[] = [];
  for (let k = 0; k < carries; k++) {
    const acc = body.inputs[k]!;
    const add = producers.get(body.outputs[k]!);
    if (add?.op !== "add" || !usedOnce(acc) || !usedOnce(body.outputs[k]!) || types[acc]!.dtype !== "float32") continue;
    const product = add.inputs[0] === acc ? add.inputs[1]! : add.inputs[1] === acc ? add.inputs[0]! : undefined;
    if (product === undefined || !usedOnce(product) || shapeOf(product) !== shapeOf(acc)) continue;
    const matmul = producer(product);
    const transpose = matmul?.op === "matmul" && usedOnce(matmul.outputs[0]!) ? producer(matmul.inputs[0]!) : undefined;
    const [a, b] = [transpose?.inputs[0], matmul?.inputs[1]];
    if (transpose?.op !== "transpose" || a === undefined || b === undefined || !is2d(a) || !is2d(b)) continue;
    const perm = transpose.attrs.perm;
    if ((perm !== null && JSON.stringify(perm) !== "[1,0]") || types[a]!.shape[0] !== types[b]!.shape[0]) continue;
    found.push({ carry: k, a: source(a), b: source(b), add });
  }
  return { found, source };
}

/** Ops that the step-only part of a backward scan may run outside the loop, batched over the steps. */
const batchableOps = new Set([
  "neg", "abs", "sign", "relu", "exp", "log", "sqrt", "sigmoid", "tanh", "sin", "cos", "log1p", "floor", "round", "cast",
  "add", "sub", "mul", "maximum", "minimum", "div", "pow", "less", "less_equal", "greater", "greater_equal", "equal",
  "not_equal", "logical_and", "logical_or", "logical_not", "where", "constant", "fill", "matmul", "transpose", "reshape",
  "slice", "concat", "pad",
]);

/** A scan being rewritten: its body, carry count, operands (init, then xs) and captured values. */
interface ScanParts {
  readonly body: Graph;
  readonly carries: number;
  readonly operands: readonly Tracer[];
  /** Bound to the body's trailing inputs: the node's captured values, then values hoisted out whole. */
  readonly captured: readonly Tracer[];
}

/** Nodes of `body` that its outputs need. */
function liveNodes(body: Graph): Set<Node> {
  const live = new Set(body.outputs);
  const kept = new Set<Node>();
  for (const node of [...body.nodes].reverse()) {
    if (!node.outputs.some((id) => live.has(id))) continue;
    kept.add(node);
    node.inputs.forEach((id) => live.add(id));
  }
  return kept;
}

/**
 * A backward scan recomputes, from the carries the forward scan stored, what the forward step
 * computed (an LSTM's gates, and the derivatives of their activations): work that does not
 * depend on the carries. That part runs before the loop, batched over the steps with the
 * client-batching rules (one [T*n, k] product where each step had an [n, k] one; one kernel
 * per op instead of one per op and step), and the loop reads its step of each result. Only
 * when that leaves fewer kernels in the loop. Emits the hoisted part into the graph being traced.
 */
function withStepOnlyPartHoisted(parts: ScanParts, steps: number, types: readonly ValueType[]): ScanParts | undefined {
  const { body, carries, operands, captured } = parts;
  const xsCount = operands.length - carries;
  const xsParams = body.inputs.slice(carries, carries + xsCount);
  const capturedParams = body.inputs.slice(carries + xsCount);
  const live = liveNodes(body);
  const stepwise = new Set(xsParams);
  const available = new Set([...xsParams, ...capturedParams]);
  const hoisted: Node[] = [];
  for (const node of body.nodes) {
    if (!live.has(node) || node.bodies !== undefined || !batchableOps.has(node.op) || !node.inputs.every((id) => available.has(id))) continue;
    if (!node.outputs.every((id) => types[id]!.placement === "local" || types[id]!.placement === "member")) continue;
    hoisted.push(node);
    node.outputs.forEach((id) => available.add(id));
    if (node.inputs.some((id) => stepwise.has(id))) node.outputs.forEach((id) => stepwise.add(id));
  }
  const hoistedIds = new Set(hoisted.flatMap((n) => n.outputs));
  const kept = body.nodes.filter((n) => live.has(n) && !n.outputs.some((id) => hoistedIds.has(id)));
  const needed = new Set([...kept.flatMap((n) => n.inputs), ...body.outputs]);
  const frontier = [...hoistedIds].filter((id) => needed.has(id));
  const stepFrontier = frontier.filter((id) => stepwise.has(id));
  const stepNodes = hoisted.filter((n) => n.outputs.some((id) => stepwise.has(id)));
  if (stepNodes.length <= stepFrontier.length) return undefined;

  // Whether a value has the step axis is kept per tracer object, not per value id: the same
  // outer value can be both an xs (stepped) and a captured value (whole) of one scan.
  const batched = new WeakSet<Tracer>();
  const env = new Map<number, Tracer>();
  xsParams.forEach((id, i) => {
    const x = operands[carries + i]!;
    const stepped = new Tracer(x.graph, x.id, x.type);
    batched.add(stepped);
    env.set(id, stepped);
  });
  capturedParams.forEach((id, i) => env.set(id, captured[i]!));
  for (const node of hoisted) {
    const ins = node.inputs.map((id) => env.get(id)!);
    const outs = batchRules[node.op]!({ node, inputs: ins, outTypes: node.outputs.map((id) => types[id]!), clients: steps, isBatched: (t) => batched.has(t) });
    outs.forEach((t, i) => {
      env.set(node.outputs[i]!, t);
      if (t.shape.length === types[node.outputs[i]!]!.shape.length + 1) batched.add(t);
    });
  }
  // A frontier value with a step axis is read per step as a new xs; one without is captured whole.
  const perStep = frontier.filter((id) => batched.has(env.get(id)!));
  const whole = frontier.filter((id) => !batched.has(env.get(id)!));
  return {
    body: {
      inputs: [...body.inputs.slice(0, carries + xsCount), ...perStep, ...capturedParams, ...whole],
      nodes: kept,
      outputs: body.outputs,
    },
    carries,
    operands: [...operands, ...perStep.map((id) => env.get(id)!)],
    captured: [...captured, ...whole.map((id) => env.get(id)!)],
  };
}

/** The scan without the xs its body no longer reads (each would be sliced at every step for nothing). */
function withoutUnusedXs(parts: ScanParts): ScanParts {
  const { body, carries, operands } = parts;
  const live = liveNodes(body);
  const read = new Set([...body.nodes.filter((n) => live.has(n)).flatMap((n) => n.inputs), ...body.outputs]);
  const unread = new Set(operands.map((_, i) => i).filter((i) => i >= carries && !read.has(body.inputs[i]!)));
  return {
    ...parts,
    body: { ...body, inputs: body.inputs.filter((_, i) => !unread.has(i)), nodes: body.nodes.filter((n) => live.has(n)) },
    operands: operands.filter((_, i) => !unread.has(i)),
  };
}

/**
 * The scan `node` rewritten (see the top of this file), or undefined when nothing applies:
 * every carry that only sums products, acc + a_tᵀ b_t, summed after the loop as one product of
 * the stacked a and b (read from what the scan already stacks, its xs and ys, where they are
 * there, and stacked as new ys otherwise); and, in a backward scan, the part of each step that
 * does not depend on the carries run before the loop for all steps at once. Emits into the
 * graph being traced, replaying the body with `replay`.
 */
export function rewrittenScan(node: Node, inputs: readonly Tracer[], types: readonly ValueType[], replay: Replay): Tracer[] | undefined {
  const body = node.bodies![0]!;
  const carries = node.attrs.carries as number;
  const { operands, captured } = splitCaptures(node, inputs);
  const steps = operands.length > carries ? operands[carries]!.shape[0] : node.attrs.length;
  if (typeof steps !== "number") return undefined;
  const { found, source } = accumulations(body, carries, types);
  const xsParams = body.inputs.slice(carries, operands.length);
  const ysOutputs = body.outputs.slice(carries);
  const dropped = new Set(found.map((f) => f.carry));
  const kept = [...Array(carries).keys()].filter((k) => !dropped.has(k));

  // Where each a and b will be stacked: an xs operand, a ys output, or a new ys output.
  const extraYs: number[] = [];
  const stackOf = (id: number): { xs: number } | { ys: number } => {
    const x = xsParams.indexOf(id);
    if (x >= 0) return { xs: x };
    let y = ysOutputs.findIndex((out) => source(out) === id);
    if (y < 0) y = ysOutputs.length + (extraYs.includes(id) ? extraYs.indexOf(id) : extraYs.push(id) - 1);
    return { ys: y };
  };
  const stacks = found.map((f) => ({ a: stackOf(f.a), b: stackOf(f.b) }));
  const addNodes = new Set(found.map((f) => f.add));
  const withoutSums: ScanParts = {
    body: {
      inputs: body.inputs.filter((_, i) => !dropped.has(i)),
      nodes: body.nodes.filter((n) => !addNodes.has(n)),
      outputs: [...kept.map((k) => body.outputs[k]!), ...ysOutputs, ...extraYs],
    },
    carries: kept.length,
    operands: [...kept.map((k) => operands[k]!), ...operands.slice(carries)],
    captured: captured[0]!,
  };
  const hoisted = node.attrs.reverse === true ? withStepOnlyPartHoisted(withoutSums, steps, types) : undefined;
  const parts = withoutUnusedXs(hoisted ?? withoutSums);
  if (found.length === 0 && hoisted === undefined && parts.operands.length === operands.length) return undefined;

  // The steps are given, as the xs that counted them may be gone.
  const attrs = { ...node.attrs, carries: kept.length, length: steps };
  const params = primitives.scan!.bodyParams!(parts.operands.map((t) => t.type), attrs)[0]!;
  const closed = traceBody("scan", params, (ins) => inline(parts.body, [...ins, ...parts.captured], replay));
  const outs = currentGraph("scan").emit("scan", parts.operands, attrs, "scan", [closed]);
  const ys = outs.slice(kept.length);
  const stacked = (where: { xs: number } | { ys: number }) => ("xs" in where ? operands[carries + where.xs]! : ys[where.ys]!);

  const emit = (op: string, ins: readonly Tracer[], a: Node["attrs"] = {}) => currentGraph(op).emit(op, ins, a, op)[0]!;
  const rows = (t: Tracer) => {
    const [n, width] = t.shape.slice(1) as number[];
    return emit("reshape", [t], { shape: [steps * n!, width!] });
  };
  const sums = found.map((f, i) => {
    const product = emit("matmul", [emit("transpose", [rows(stacked(stacks[i]!.a))], { perm: [1, 0] }), rows(stacked(stacks[i]!.b))]);
    return emit("add", [operands[f.carry]!, product]);
  });
  const carryOuts = [...Array(carries).keys()].map((k) => (dropped.has(k) ? sums[found.findIndex((f) => f.carry === k)]! : outs[kept.indexOf(k)]!));
  return [...carryOuts, ...ys.slice(0, ysOutputs.length)];
}
