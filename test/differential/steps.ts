/**
 * Running a recipe's steps: the tensor steps (tensor-steps.ts), the placement primitives, and
 * the operations that take a function (map, scan, fori, valueAndGrad, grad, aggregate), whose
 * bodies are recipes of their own. A step that has no operand it can use is skipped.
 */
import * as ft from "../../src/index.js";
import { call, named, sideOf, withFunction, type Expr, type Scope, type Side, type Val } from "./expr.js";
import type { Step } from "./recipe.js";
import { broadcastShape, sameShape, variant } from "./shapes.js";
import { mathSteps } from "./math-steps.js";
import { tensorSteps as shapeAndArithmeticSteps } from "./tensor-steps.js";

const tensorSteps = { ...shapeAndArithmeticSteps, ...mathSteps };

export function runSteps(scope: Scope, steps: readonly Step[]): void {
  for (const step of steps) runStep(scope, step);
}

const onSide = (side: Side) => (v: Val) => sideOf(v) === side;
const last = (scope: Scope): Val => scope.pool[scope.pool.length - 1]!;

function runStep(scope: Scope, step: Step): void {
  const op = step.op;
  if (op in tensorSteps) {
    tensorSteps[op as keyof typeof tensorSteps](scope, scope.choose(step.a)!, step);
    return;
  }
  const federated = federatedSteps[op];
  if (federated !== undefined) {
    if (scope.federated) federated(scope, step);
    return;
  }
  bodySteps[op]!(scope, step);
}

/** Names for a function's parameters. */
const paramNames = (scope: Scope, count: number): string[] => Array.from({ length: count }, () => scope.writer.fresh());

/** A value moved to `side` (reduceMean to the server, broadcast to the clients), if placement primitives may be used. */
function moveTo(scope: Scope, v: Val, side: Side): Val | undefined {
  if (sideOf(v) === side) return v;
  if (!scope.federated) return undefined;
  if (side === "server" && sideOf(v) === "clients") return scope.emit(call("reduceMean", v), v.bound);
  if (side === "clients" && sideOf(v) === "server") return scope.emit(call("broadcast", v), v.bound);
  return undefined;
}

/** Keeps a loop's carry bounded: carry/2 + tanh(update), the update averaged when its shape does not fit the carry's. */
function nextCarry(scope: Scope, carry: Val, update: Val, factor?: Expr): Val {
  const fitted = moveTo(scope, update, sideOf(carry)) ?? carry;
  const fits = sameShape(broadcastShape(carry.value.shape, fitted.value.shape) ?? [], carry.value.shape);
  const squashed = call("tanh", fits ? fitted : call("mean", fitted));
  return scope.emit(call("add", call("mul", carry, 0.5), factor === undefined ? squashed : call("mul", squashed, factor)), 0.5 * carry.bound + 1);
}

/**
 * Outer values a loop body or a differentiated function may capture. An all-equal carry (what
 * broadcast returns) must stay all-equal, so its body sees no values that differ between clients.
 */
function capturesFor(scope: Scope, init: Val): Val[] {
  const keepsEqual = init.value.placement === "clients-equal";
  return scope.pool.filter((v) => !keepsEqual || v.value.placement !== "clients");
}

const loopBound = (init: Val) => Math.max(init.bound, 2);

const bodySteps: Record<string, (scope: Scope, step: Step) => void> = {
  /** scan over the leading axis of a partner (or of [x, tanh(x)]), with x as the carry; every value the body makes is stacked. */
  scan: (scope, step) => {
    const init = scope.choose(step.a)!;
    const captures = capturesFor(scope, init);
    const fitsXs = (v: Val) => sideOf(v) === sideOf(init) && v.value.shape.length >= 1 && captures.includes(v);
    const xs = scope.choose(step.b, fitsXs) ?? scope.emit(call("stack", [init, call("tanh", init)]), init.bound);
    const [c, x] = paramNames(scope, 2);
    withFunction(
      scope,
      { before: `scan(${init.code}, ${xs.code}, `, params: `${c}, ${x}`, after: ")" },
      (carryValue, stepValue) => {
        const params = [named(c!, carryValue, loopBound(init), init.active), named(x!, stepValue, xs.bound, xs.active)];
        const body = scope.child(params, captures, scope.federated);
        runSteps(body, step.body);
        const made = body.made();
        return [nextCarry(body, params[0]!, last(body)), made.length > 0 ? made : [params[1]!]];
      },
      (fn) => ft.scan(init.value as never, xs.value as never, fn as never),
    );
  },
  /** fori(1..3 steps) with x as the carry; the index scales the update. */
  fori: (scope, step) => {
    const init = scope.choose(step.a)!;
    const captures = capturesFor(scope, init);
    const count = 1 + variant(step.k, 0, 3);
    const [i, c] = paramNames(scope, 2);
    withFunction(
      scope,
      { before: `fori(${count}, ${init.code}, `, params: `${i}, ${c}`, after: ")" },
      (index, carryValue) => {
        const carry = named(c!, carryValue, loopBound(init), init.active);
        const body = scope.child([carry], captures, scope.federated);
        runSteps(body, step.body);
        // The index is int32, so it stays out of the pool and only weighs the update: 0.5, 0.75, 1.
        const weight = call("add", call("mul", call("cast", named(i!, index, 2, false), "float32"), 0.25), 0.5);
        return nextCarry(body, carry, last(body), weight);
      },
      (fn) => ft.fori(count, init.value as never, fn as never),
    );
  },
  valueAndGrad: (scope, step) => differentiate(scope, step, true),
  grad: (scope, step) => differentiate(scope, step, false),
};

/**
 * A scalar loss that every value of `values` feeds: the sum of their means, each moved to
 * `side` first (so no computation of a differentiated function is dead code).
 */
export function meanLoss(scope: Scope, values: readonly Val[], side: Side): Val {
  const terms = values.map((v) => call("mean", moveTo(scope, v, side) ?? v));
  const total = terms.slice(1).reduce((sum, term) => call("add", sum, term), terms[0]!);
  return scope.emit(total, values.reduce((bound, v) => bound + v.bound, 0));
}

/** valueAndGrad or grad of a loss made by a generated function of x (which may capture outer values). */
function differentiate(scope: Scope, step: Step, withValue: boolean): void {
  const param = scope.choose(step.a)!;
  const captures = capturesFor(scope, param);
  const [q] = paramNames(scope, 1);
  // Gradients have no bound the generator knows: later steps squash them with tanh before amplifying.
  const gradient = named("", undefined, Infinity, param.active);
  withFunction(
    scope,
    { before: `${withValue ? "valueAndGrad" : "grad"}(`, params: q!, after: `)(${param.code})` },
    (value) => {
      const body = scope.child([named(q!, value, param.bound, true)], captures, scope.federated);
      runSteps(body, step.body);
      const made = body.made();
      return meanLoss(body, made.length > 0 ? made : body.pool.slice(-1), sideOf(param));
    },
    (fn) => (withValue ? ft.valueAndGrad(fn as never)(param.value as never) : ft.grad(fn as never)(param.value as never)),
    (loss) => (withValue ? [{ ...(loss as Val), active: param.active }, gradient] : gradient),
  );
}

/** map of a generated function over 1-3 values at the clients; every value the function makes is a result. */
function mapStep(scope: Scope, step: Step): void {
  const atClients = onSide("clients");
  const first = scope.choose(step.a, atClients);
  if (first === undefined) return;
  const args = [first, ...Array.from({ length: variant(step.k, 0, 3) }, (_, i) => scope.choose(variant(step.b, i, 5), atClients)!)];
  const params = paramNames(scope, args.length);
  withFunction(
    scope,
    { before: "map(", params: params.join(", "), after: `, ${args.map((v) => v.code).join(", ")})` },
    (...members) => {
      const differ = args.some((v) => v.value.placement === "clients");
      const body = scope.child(members.map((m, i) => named(params[i]!, m, args[i]!.bound, args[i]!.active)), [], false, differ);
      runSteps(body, step.body);
      const made = body.made();
      return made.length === 0 ? body.pool[0]! : made.length === 1 ? made[0]! : made;
    },
    (fn) => ft.map(fn as never, ...(args.map((v) => v.value) as never[])),
  );
}

/** Positive weights per client, from a value at the clients: sigmoid(mean(member)) + 0.25. */
function weightsFrom(scope: Scope, source: Val): Val {
  const [m] = paramNames(scope, 1);
  withFunction(
    scope,
    { before: "map(", params: m!, after: `, ${source.code})` },
    (member) => {
      const body = scope.child([named(m!, member, source.bound, source.active)], [], false);
      return body.emit(call("add", call("sigmoid", call("mean", last(body))), 0.25), 1.25);
    },
    (fn) => ft.map(fn as never, source.value as never),
  );
  return last(scope);
}

/** aggregate with a scalar accumulator whose accumulate and merge do not commute, so that the grouping of clients shows. */
function aggregateStep(scope: Scope, x: Val): void {
  const name = scope.writer.fresh();
  for (const line of [
    `const ${name} = aggregate(${x.code}, {`,
    "  zero: () => add(0, 0),",
    "  accumulate: (acc, member) => add(mul(acc, 0.5), mean(member)),",
    "  merge: (a, b) => add(a, mul(b, 0.25)),",
    "  report: (acc) => mul(acc, 2),",
    "});",
  ]) {
    scope.writer.line(line);
  }
  const value = ft.aggregate(x.value as never, {
    zero: () => ft.add(0, 0),
    accumulate: (acc: never, member: never) => ft.add(ft.mul(acc, 0.5), ft.mean(member)),
    merge: (a: never, b: never) => ft.add(a, ft.mul(b, 0.25)),
    report: (acc: never) => ft.mul(acc, 2),
  } as never);
  scope.pool.push(named(name, value, 5 * x.bound, x.active));
}

/** Placement primitives: each takes its operand from the side it needs. */
const federatedSteps: Record<string, (scope: Scope, step: Step) => void> = {
  broadcast: (scope, step) => {
    const x = scope.choose(step.a, onSide("server"));
    if (x !== undefined) scope.emit(call("broadcast", x), x.bound);
  },
  ...Object.fromEntries(
    (["reduceSum", "reduceMean", "reduceMax", "reduceMin"] as const).map((name) => [
      name,
      (scope: Scope, step: Step) => {
        const x = scope.choose(step.a, onSide("clients"));
        if (x !== undefined) scope.emit(call(name, x), name === "reduceSum" ? x.bound * scope.clients : x.bound);
      },
    ]),
  ),
  reduceWeightedMean: (scope, step) => {
    const x = scope.choose(step.a, onSide("clients"));
    if (x === undefined) return;
    const weights = weightsFrom(scope, scope.choose(step.b, onSide("clients"))!);
    scope.emit(call("reduceWeightedMean", x, weights), x.bound);
  },
  aggregate: (scope, step) => {
    const x = scope.choose(step.a, onSide("clients"));
    if (x !== undefined) aggregateStep(scope, x);
  },
  map: mapStep,
};
