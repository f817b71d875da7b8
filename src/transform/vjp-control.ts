/**
 * Reverse-mode rules of the control primitives, map and scan.
 *
 * map differentiates member-wise: its cotangent is another map whose function is the vjp of the
 * original function (recomputing the forward pass per client rather than storing it).
 * scan is transposed into a reverse scan: its forward pass (primalScan, which vjp() runs as
 * the primal, so the steps run forwards once) also stacks the carry entering each step and
 * the step's inner values, and the backward scan walks the steps in reverse, pulling the carry
 * cotangent back through the body (reading the inner values instead of recomputing them) and
 * summing the cotangents of captured values.
 * aggregate becomes aggregate_vjp, which folds the clients again and walks back through each
 * group of them with the pullbacks of accumulate, merge and report, built here.
 */
import { ftError } from "../errors/error.js";
import { traceBody, type Tracer } from "../front/trace.js";
import { primitives } from "../ir/primitives.js";
import type { Graph, ValueType } from "../ir/types.js";
import { add, fillLike, primMany } from "./emit.js";
import { inline, reemit, splitCaptures } from "./inline.js";
import type { PrimalRule, VjpRule } from "./vjp-types.js";

const asMember = (t: Tracer): ValueType => ({ ...t.type, placement: "member" });

export const vjpMap: VjpRule = (ctx, cts) => {
  const body = ctx.node.bodies![0]!;
  const { operands: members, captured } = splitCaptures(ctx.node, ctx.inputs);
  const caps = captured[0]!;
  const capsActive = splitCaptures(ctx.node, ctx.active).captured[0]!;
  if (capsActive.some(Boolean)) {
    throw ftError("FT211", { op: "grad", what: "a value that map()'s function captures from outside; pass it to map() as an argument" });
  }
  const wanted = members.map((_, i) => i).filter((i) => ctx.active[i] && members[i]!.dtype === "float32");
  if (wanted.length === 0) return ctx.inputs.map(() => undefined);
  const closed = traceBody("map", [...members.map(asMember), ...cts.map(asMember)], (params) => {
    const memberParams = params.slice(0, members.length);
    const { inputCotangents } = ctx.vjp(
      body,
      ctx.types,
      [...memberParams, ...caps],
      [...members.map((_, i) => wanted.includes(i)), ...caps.map(() => false)],
      params.slice(members.length),
    );
    return wanted.map((i) => inputCotangents[i] ?? fillLike(0, memberParams[i]!));
  });
  const outs = primMany("map", [...members, ...cts], {}, [closed]);
  return ctx.inputs.map((_, i) => (wanted.includes(i) ? outs[wanted.indexOf(i)] : undefined));
};

const scanParams = (operands: readonly Tracer[], carryCount: number) =>
  primitives.scan!.bodyParams!(operands.map((t) => t.type), { carries: carryCount })[0]!;

/**
 * The values of a scan body that vary from step to step and that its backward pass needs
 * again: the float32 outputs of its body-less nodes that depend on the carry or the step's
 * xs. The forward pass stacks them, so that the backward pass need not recompute the step.
 * (Nodes with bodies are replayed: their own primal rules keep what they need.)
 */
function stepValues(body: Graph, types: readonly ValueType[], stepInputs: number): number[] {
  const varying = new Set(body.inputs.slice(0, stepInputs));
  const stored: number[] = [];
  for (const node of body.nodes) {
    if (!node.inputs.some((id) => varying.has(id))) continue;
    node.outputs.forEach((id) => varying.add(id));
    if (node.bodies === undefined) stored.push(...node.outputs.filter((id) => types[id]!.dtype === "float32"));
  }
  return stored;
}

/** The body's values, computed node by node, so that stepValues can be read out of them. */
function replayBody(body: Graph, inputs: readonly Tracer[]): Map<number, Tracer> {
  const values = new Map<number, Tracer>();
  body.inputs.forEach((id, i) => values.set(id, inputs[i]!));
  for (const node of body.nodes) {
    const outs = reemit(node, node.inputs.map((id) => values.get(id)!));
    node.outputs.forEach((id, i) => values.set(id, outs[i]!));
  }
  return values;
}

/**
 * The scan's forward pass, also stacking the carry that enters each step and the step's
 * values (stepValues): the residuals of vjpScan.
 */
export const primalScan: PrimalRule = (node, inputs, types) => {
  const body = node.bodies![0]!;
  const carries = node.attrs.carries as number;
  const { operands, captured } = splitCaptures(node, inputs);
  const stored = stepValues(body, types, operands.length);
  const forward = traceBody("scan", scanParams(operands, carries), (ins) => {
    const values = replayBody(body, [...ins, ...captured[0]!]);
    return [...body.outputs.map((id) => values.get(id)!), ...ins.slice(0, carries), ...stored.map((id) => values.get(id)!)];
  });
  const outs = primMany("scan", operands, { carries, length: node.attrs.length ?? null, reverse: node.attrs.reverse === true }, [forward]);
  return { outputs: outs.slice(0, node.outputs.length), residuals: outs.slice(node.outputs.length) };
};

export const vjpScan: VjpRule = (ctx, cts) => {
  const { node, types } = ctx;
  const body = node.bodies![0]!;
  const carries = node.attrs.carries as number;
  const { operands, captured } = splitCaptures(node, ctx.inputs);
  const caps = captured[0]!;
  const capsActive = splitCaptures(node, ctx.active).captured[0]!;
  const init = operands.slice(0, carries);
  const xs = operands.slice(carries);
  const length = node.attrs.length ?? null;
  const reverse = node.attrs.reverse === true;
  const stored = stepValues(body, types, operands.length);
  const storedCarries = ctx.residuals.slice(0, carries);
  const storedValues = ctx.residuals.slice(carries);

  const activeCaps = caps.filter((_, i) => capsActive[i] && caps[i]!.dtype === "float32");
  const carryCts = cts.slice(0, carries);
  const ysCts = cts.slice(carries);
  const zeroCaps = activeCaps.map((c) => fillLike(0, c));
  const backwardOperands = [...carryCts, ...zeroCaps, ...storedCarries, ...xs, ...ysCts, ...storedValues];
  const backward = traceBody(
    "scan",
    scanParams(backwardOperands, carries + zeroCaps.length),
    (ins) => {
      let at = 0;
      const take = (n: number) => ins.slice(at, (at += n));
      const [ctCarry, capsAcc, carry, x, ctY, values] = [take(carries), take(zeroCaps.length), take(carries), take(xs.length), take(ysCts.length), take(stored.length)];
      const wrt = [...carry.map(() => true), ...x.map((t) => t.dtype === "float32"), ...caps.map((c) => activeCaps.includes(c))];
      const known = new Map(stored.map((id, i) => [id, values[i]!]));
      const { inputCotangents } = ctx.vjp(body, types, [...carry, ...x, ...caps], wrt, [...ctCarry, ...ctY], known);
      const zeroOr = (ct: Tracer | undefined, like: Tracer) => ct ?? fillLike(0, like);
      const nextCarry = carry.map((c, i) => zeroOr(inputCotangents[i], c));
      const nextCaps = activeCaps.map((c, i) => add(capsAcc[i]!, zeroOr(inputCotangents[carries + x.length + caps.indexOf(c)], c)));
      const xCts = x.map((t, i) => zeroOr(inputCotangents[carries + i], t));
      return [...nextCarry, ...nextCaps, ...xCts];
    },
  );
  const bwdOuts = primMany("scan", backwardOperands, {
    carries: carries + zeroCaps.length,
    length,
    reverse: !reverse,
  }, [backward]);
  const initCts = bwdOuts.slice(0, carries);
  const capsCts = bwdOuts.slice(carries, carries + zeroCaps.length);
  const xsCts = bwdOuts.slice(carries + zeroCaps.length);
  return [
    ...init.map((_, i) => initCts[i]),
    ...xs.map((_, i) => xsCts[i]),
    ...caps.map((c) => (activeCaps.includes(c) ? capsCts[activeCaps.indexOf(c)] : undefined)),
  ];
};

const isFloat = (t: Tracer) => t.dtype === "float32";

export const vjpAggregate: VjpRule = (ctx, cts) => {
  const { node } = ctx;
  const [accumulate, merge, report] = node.bodies! as [Graph, Graph, Graph];
  const memberCount = node.attrs.members as number;
  const { operands, captured } = splitCaptures(node, ctx.inputs);
  const active = splitCaptures(node, ctx.active);
  if (active.operands.slice(memberCount).some(Boolean) || active.captured.some((caps) => caps.some(Boolean))) {
    throw ftError("FT211", { op: "grad", what: "aggregate()'s zero() or a value its functions capture from outside; only its CLIENTS argument is differentiated" });
  }
  const members = operands.slice(0, memberCount);
  const zero = operands.slice(memberCount);
  const wanted = members.map((m, i) => active.operands[i]! && isFloat(m));
  if (!wanted.some(Boolean)) return ctx.inputs.map(() => undefined);
  const attrs = { members: memberCount, accumulators: zero.length };
  const params = primitives.aggregate_vjp!.bodyParams!([...members, ...zero, ...cts].map((t) => t.type), attrs);
  /** A closed body running `graph` (with its captured values) on its parameters. */
  const rerun = (k: number, graph: Graph) => traceBody("aggregate", params[k]!, (ins) => inline(graph, [...ins, ...captured[k]!]));
  /** A closed body: the primals' cotangents from (primals, cotangents of graph's outputs). */
  const pullback = (k: number, graph: Graph, caps: readonly Tracer[], wrt: readonly boolean[]) =>
    traceBody("aggregate", params[k]!, (ins) => {
      const primals = ins.slice(0, wrt.length);
      const { inputCotangents } = ctx.vjp(graph, ctx.types, [...primals, ...caps], [...wrt, ...caps.map(() => false)], ins.slice(wrt.length));
      return primals.map((p, i) => inputCotangents[i] ?? fillLike(0, p));
    });
  const accFloat = zero.map(isFloat);
  const bodies = [
    rerun(0, accumulate),
    rerun(1, merge),
    rerun(2, report),
    pullback(3, accumulate, captured[0]!, [...accFloat, ...wanted]),
    pullback(4, merge, captured[1]!, [...accFloat, ...accFloat]),
    pullback(5, report, captured[2]!, accFloat),
  ];
  const memberCts = primMany("aggregate_vjp", [...members, ...zero, ...cts], attrs, bodies);
  return ctx.inputs.map((_, i) => (i < memberCount && wanted[i] ? memberCts[i] : undefined));
};
