/**
 * Forward-mode differentiation as an IR-to-IR transformation: jvp() replays a closed graph
 * and, beside each node, emits its tangent by the rules of jvp-rules.ts. One forward pass
 * gives the derivative along one direction, which is cheaper than reverse mode when a
 * function has few inputs and many outputs (or to probe one direction, as a Hessian-vector
 * product does). map is differentiated member-wise, scan by carrying tangents beside the carry,
 * aggregate by accumulating tangents beside the accumulator.
 */
import { ftError } from "../errors/error.js";
import { traceBody, type Tracer } from "../front/trace.js";
import { primitives } from "../ir/primitives.js";
import type { Graph, Node } from "../ir/types.js";
import { fillLike, primMany } from "./emit.js";
import { reemit, splitCaptures } from "./inline.js";
import { jvpRules } from "./jvp-rules.js";

export interface JvpResult {
  readonly outputs: Tracer[];
  /** Tangents of the outputs; undefined where the output does not depend on the tangents. */
  readonly tangents: (Tracer | undefined)[];
}

const isFloat = (t: Tracer) => t.dtype === "float32";

/** The graph's outputs and their tangents, for inputs with the given tangents (undefined = zero). */
export function jvp(graph: Graph, inputs: readonly Tracer[], inputTangents: readonly (Tracer | undefined)[]): JvpResult {
  const primal = new Map<number, Tracer>();
  const tangent = new Map<number, Tracer>();
  graph.inputs.forEach((id, i) => {
    primal.set(id, inputs[i]!);
    const t = inputTangents[i];
    if (t !== undefined && isFloat(inputs[i]!)) tangent.set(id, t);
  });
  for (const node of graph.nodes) {
    const ins = node.inputs.map((id) => primal.get(id)!);
    const tins = node.inputs.map((id) => tangent.get(id));
    const { outputs, tangents } = tins.some((t) => t !== undefined) ? differentiate(node, ins, tins) : { outputs: reemit(node, ins), tangents: [] };
    node.outputs.forEach((id, i) => {
      primal.set(id, outputs[i]!);
      const t = tangents[i];
      if (t !== undefined && isFloat(outputs[i]!)) tangent.set(id, t);
    });
  }
  return { outputs: graph.outputs.map((id) => primal.get(id)!), tangents: graph.outputs.map((id) => tangent.get(id)) };
}

function differentiate(node: Node, ins: Tracer[], tins: (Tracer | undefined)[]): JvpResult {
  if (node.op === "map") return jvpMap(node, ins, tins);
  if (node.op === "scan") return jvpScan(node, ins, tins);
  if (node.op === "aggregate") return jvpAggregate(node, ins, tins);
  const rule = jvpRules[node.op];
  // Every primitive a program can hold has a rule but aggregate's pullback (grad, then jvp, through aggregate).
  if (rule === undefined) throw ftError("FT211", { op: "jvp", what: node.op === "aggregate_vjp" ? "the gradient of aggregate()" : `${node.op}(), which has no forward-mode rule` });
  const outputs = reemit(node, ins);
  return { outputs, tangents: rule({ node, inputs: ins, outputs }, tins) };
}

/** A map of the original function's jvp: members and their tangents in, outputs and theirs out. */
function jvpMap(node: Node, ins: Tracer[], tins: (Tracer | undefined)[]): JvpResult {
  const body = node.bodies![0]!;
  const { operands, captured } = splitCaptures(node, ins);
  const { operands: operandTangents, captured: capturedTangents } = splitCaptures(node, tins);
  const moving = operands.map((_, i) => i).filter((i) => operandTangents[i] !== undefined);
  const member = (t: Tracer) => ({ ...t.type, placement: "member" as const });
  let outputCount = 0;
  const traced = traceBody("map", [...operands.map(member), ...moving.map((i) => member(operandTangents[i]!))], (params) => {
    const memberTangents = operands.map((_, i) => (moving.includes(i) ? params[operands.length + moving.indexOf(i)] : undefined));
    const result = jvp(body, [...params.slice(0, operands.length), ...captured[0]!], [...memberTangents, ...capturedTangents[0]!]);
    outputCount = result.outputs.length;
    return [...result.outputs, ...result.outputs.map((y, i) => result.tangents[i] ?? fillLike(0, y))];
  });
  const outs = primMany("map", [...operands, ...moving.map((i) => operandTangents[i]!)], node.attrs, [traced]);
  return { outputs: outs.slice(0, outputCount), tangents: outs.slice(outputCount) };
}

/** A scan whose carry holds the float carries' tangents too, and whose steps take the xs' tangents. */
function jvpScan(node: Node, ins: Tracer[], tins: (Tracer | undefined)[]): JvpResult {
  const body = node.bodies![0]!;
  const carries = node.attrs.carries as number;
  const { operands, captured } = splitCaptures(node, ins);
  const { operands: operandTangents, captured: capturedTangents } = splitCaptures(node, tins);
  const init = operands.slice(0, carries);
  const xs = operands.slice(carries);
  const carried = init.map((_, i) => i).filter((i) => isFloat(init[i]!));
  const stepped = xs.map((_, i) => i).filter((i) => operandTangents[carries + i] !== undefined);
  const initTangents = carried.map((i) => operandTangents[i] ?? fillLike(0, init[i]!));
  const xsTangents = stepped.map((i) => operandTangents[carries + i]!);
  const newCarries = carries + carried.length;
  const scanOperands = [...init, ...initTangents, ...xs, ...xsTangents];
  const params = primitives.scan!.bodyParams!(scanOperands.map((t) => t.type), { carries: newCarries })[0]!;
  let ysCount = 0;
  const traced = traceBody("scan", params, (p) => {
    const carry = p.slice(0, carries);
    const carryTangents = p.slice(carries, newCarries);
    const steps = p.slice(newCarries, newCarries + xs.length);
    const stepTangents = p.slice(newCarries + xs.length);
    const result = jvp(
      body,
      [...carry, ...steps, ...captured[0]!],
      [
        ...init.map((_, i) => (carried.includes(i) ? carryTangents[carried.indexOf(i)] : undefined)),
        ...xs.map((_, i) => (stepped.includes(i) ? stepTangents[stepped.indexOf(i)] : undefined)),
        ...capturedTangents[0]!,
      ],
    );
    const zeroOr = (i: number) => result.tangents[i] ?? fillLike(0, result.outputs[i]!);
    ysCount = result.outputs.length - carries;
    const ys = result.outputs.slice(carries);
    return [
      ...result.outputs.slice(0, carries),
      ...carried.map(zeroOr),
      ...ys,
      ...ys.map((_, j) => zeroOr(carries + j)),
    ];
  });
  const outs = primMany("scan", scanOperands, { ...node.attrs, carries: newCarries }, [traced]);
  const carryTangents = init.map((_, i) => (carried.includes(i) ? outs[carries + carried.indexOf(i)] : undefined));
  const ys = outs.slice(newCarries, newCarries + ysCount);
  return { outputs: [...outs.slice(0, carries), ...ys], tangents: [...carryTangents, ...outs.slice(newCarries + ysCount)] };
}

/**
 * An aggregate whose accumulator holds its float leaves' tangents too and whose members come
 * with theirs: accumulate, merge and report become their own jvps (the grouping of clients,
 * and so every partial result, is the same as the primal's).
 */
function jvpAggregate(node: Node, ins: Tracer[], tins: (Tracer | undefined)[]): JvpResult {
  const [accumulate, merge, report] = node.bodies!;
  const memberCount = node.attrs.members as number;
  const { operands, captured } = splitCaptures(node, ins);
  const { operands: operandTangents, captured: capturedTangents } = splitCaptures(node, tins);
  const members = operands.slice(0, memberCount);
  const zero = operands.slice(memberCount);
  const moving = members.map((_, i) => i).filter((i) => operandTangents[i] !== undefined);
  const carried = zero.map((_, i) => i).filter((i) => isFloat(zero[i]!));
  const zeroTangents = carried.map((i) => operandTangents[memberCount + i] ?? fillLike(0, zero[i]!));
  const newOperands = [...members, ...moving.map((i) => operandTangents[i]!), ...zero, ...zeroTangents];
  const attrs = { ...node.attrs, members: memberCount + moving.length, accumulators: zero.length + carried.length };
  const [accParams, mergeParams, reportParams] = primitives.aggregate!.bodyParams!(newOperands.map((t) => t.type), attrs);
  /** An accumulator with its tangents (zero where a body gives none) from a jvp result. */
  const withTangents = (result: JvpResult) => [...result.outputs, ...carried.map((i) => result.tangents[i] ?? fillLike(0, result.outputs[i]!))];
  const accTangentsOf = (tangents: readonly Tracer[]) => zero.map((_, i) => (carried.includes(i) ? tangents[carried.indexOf(i)] : undefined));
  const split = (params: readonly Tracer[]) => [params.slice(0, zero.length), params.slice(zero.length, zero.length + carried.length)] as const;
  const accumulateJvp = traceBody("aggregate", accParams!, (p) => {
    const [acc, accTangents] = split(p);
    const rest = p.slice(zero.length + carried.length);
    const memberTangents = members.map((_, i) => (moving.includes(i) ? rest[memberCount + moving.indexOf(i)] : undefined));
    const result = jvp(accumulate!, [...acc, ...rest.slice(0, memberCount), ...captured[0]!], [...accTangentsOf(accTangents), ...memberTangents, ...capturedTangents[0]!]);
    return withTangents(result);
  });
  const mergeJvp = traceBody("aggregate", mergeParams!, (p) => {
    const half = zero.length + carried.length;
    const [a, aTangents] = split(p.slice(0, half));
    const [b, bTangents] = split(p.slice(half));
    const result = jvp(merge!, [...a, ...b, ...captured[1]!], [...accTangentsOf(aTangents), ...accTangentsOf(bTangents), ...capturedTangents[1]!]);
    return withTangents(result);
  });
  let resultCount = 0;
  const reportJvp = traceBody("aggregate", reportParams!, (p) => {
    const [acc, accTangents] = split(p);
    const result = jvp(report!, [...acc, ...captured[2]!], [...accTangentsOf(accTangents), ...capturedTangents[2]!]);
    resultCount = result.outputs.length;
    return [...result.outputs, ...result.outputs.map((y, i) => result.tangents[i] ?? fillLike(0, y))];
  });
  const outs = primMany("aggregate", newOperands, attrs, [accumulateJvp, mergeJvp, reportJvp]);
  return { outputs: outs.slice(0, resultCount), tangents: outs.slice(resultCount) };
}
