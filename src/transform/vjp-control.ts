/**
 * Reverse-mode rules of the control primitives, map and scan.
 *
 * map differentiates member-wise: its cotangent is another map whose function is the vjp of the
 * original function (recomputing the forward pass per client rather than storing it).
 * scan is transposed into a reverse scan: a forward scan stores the carry entering each step,
 * and the backward scan walks the steps in reverse, pulling the carry cotangent back through
 * the body and summing the cotangents of captured values.
 * aggregate becomes aggregate_vjp, which folds the clients again and walks back through each
 * group of them with the pullbacks of accumulate, merge and report, built here.
 */
import { ftError } from "../errors/error.js";
import { traceBody, type Tracer } from "../front/trace.js";
import { primitives } from "../ir/primitives.js";
import type { Graph, ValueType } from "../ir/types.js";
import { add, fillLike, primMany } from "./emit.js";
import { inline, splitCaptures } from "./inline.js";
import type { VjpRule } from "./vjp-types.js";

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
  const scanParams = (operands: readonly Tracer[], carryCount: number) =>
    primitives.scan!.bodyParams!(operands.map((t) => t.type), { carries: carryCount })[0]!;

  // Forward again, also stacking the carry that enters each step.
  const forward = traceBody("scan", scanParams([...init, ...xs], carries), (ins) => {
    const stepOut = inline(body, [...ins, ...caps]);
    return [...stepOut, ...ins.slice(0, carries)];
  });
  const fwdOuts = primMany("scan", [...init, ...xs], { carries, length, reverse }, [forward]);
  const storedCarries = fwdOuts.slice(fwdOuts.length - carries);

  const activeCaps = caps.filter((_, i) => capsActive[i] && caps[i]!.dtype === "float32");
  const carryCts = cts.slice(0, carries);
  const ysCts = cts.slice(carries);
  const zeroCaps = activeCaps.map((c) => fillLike(0, c));
  const backwardOperands = [...carryCts, ...zeroCaps, ...storedCarries, ...xs, ...ysCts];
  const backward = traceBody(
    "scan",
    scanParams(backwardOperands, carries + zeroCaps.length),
    (ins) => {
      let at = 0;
      const take = (n: number) => ins.slice(at, (at += n));
      const [ctCarry, capsAcc, carry, x, ctY] = [take(carries), take(zeroCaps.length), take(carries), take(xs.length), take(ysCts.length)];
      const wrt = [...carry.map(() => true), ...x.map((t) => t.dtype === "float32"), ...caps.map((c) => activeCaps.includes(c))];
      const { inputCotangents } = ctx.vjp(body, types, [...carry, ...x, ...caps], wrt, [...ctCarry, ...ctY]);
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
