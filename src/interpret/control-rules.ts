/**
 * Evaluation rules of the placement primitives (broadcast and the reductions over clients)
 * and of the control primitives that run sub-graphs (map, scan, aggregate and its pullback),
 * with an explicit loop over clients.
 */
import { ftError } from "../errors/error.js";
import { elementwiseDType, type DTypeClass } from "../ir/dtypes.js";
import { isAtClients } from "../ir/placement.js";
import type { Graph, Node, ValueType } from "../ir/types.js";
import type { ControlRule, Evaluator } from "./rule.js";
import { convertValue, indexLeading, stackLeading, tensor, type Tensor } from "./tensor.js";
import { AtClients, isAtClientsValue, membersOf, oneTensor, type Value } from "./values.js";

/** 0, 1, ..., n-1. */
const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

/**
 * A reduction over clients, elementwise across members: folds them in client order with
 * `combine`, then `finish` gets each folded value and the number of clients. Its dtype class
 * is that of the tensor reduction of the same name.
 */
function overClients(cls: DTypeClass, combine: (acc: number, x: number) => number, finish = (acc: number, _clients: number) => acc): ControlRule {
  return ([x], node) => {
    const [first, ...rest] = membersOf(x!, node.op);
    const dtype = elementwiseDType(node.op, cls, first!.dtype);
    const acc = first!.data.slice();
    for (const member of rest) member.data.forEach((v, i) => (acc[i] = combine(acc[i]!, v)));
    const clients = rest.length + 1;
    return [tensor(first!.shape, dtype, acc.map((v) => convertValue(finish(v, clients), dtype)))];
  };
}

/** How many of a node's inputs are captured values (the trailing ones). */
const capturedCount = (node: Node): number => (node.captures ?? []).reduce((n, count) => n + count, 0);

/** The captured values of each body: the node's trailing inputs, split in body order (see Node.captures). */
function capturesPerBody(node: Node, inputs: readonly Value[]): Value[][] {
  let next = inputs.length - capturedCount(node);
  return node.bodies!.map((_, k) => inputs.slice(next, (next += node.captures?.[k] ?? 0)));
}

/**
 * Runs a node's one body `count` times: run i gets pick(x, k, i) for each ordinary operand x
 * (the k-th) and the captured values as they are. Returns each run's outputs.
 */
function runPerIndex(node: Node, inputs: readonly Value[], run: Evaluator, count: number, pick: (x: Value, k: number, i: number) => Value): Value[][] {
  const args = inputs.slice(0, inputs.length - capturedCount(node));
  const [captures] = capturesPerBody(node, inputs);
  return range(count).map((i) => run.evaluate(node.bodies![0]!, [...args.map((x, k) => pick(x, k, i)), ...captures!], `${node.op} body`));
}

/** Runs map's body once per client on that client's members. */
function map(inputs: readonly Value[], node: Node, run: Evaluator): Value[] {
  const perClient = runPerIndex(node, inputs, run, run.clients(), (x, _k, i) => membersOf(x, "map")[i]!);
  return node.outputs.map((_, j) => new AtClients(perClient.map((outs) => oneTensor(outs[j]!, "map result"))));
}

/** Step t of a scanned value: x[t], member by member at the CLIENTS. */
const stepOf = (x: Value, t: number): Value => (isAtClientsValue(x) ? new AtClients(x.members.map((m) => indexLeading(m, t))) : indexLeading(x, t));

/** The number of steps: attrs.length when known, else (and checked against) the leading dim of every xs member. */
function scanLength(node: Node, xs: readonly Value[], run: Evaluator): number {
  const declared = node.attrs.length as number | string | null;
  let length = typeof declared === "number" ? declared : typeof declared === "string" ? run.dims.get(declared) : undefined;
  for (const x of xs) {
    for (const member of isAtClientsValue(x) ? x.members : [x]) {
      const lead = member.shape[0]!;
      if (length !== undefined && lead !== length) throw ftError("FT210", { what: "scan() xs", dim: 0, got: lead, want: length });
      length = lead;
    }
  }
  return length ?? run.dims.resolve(declared, "scan() length");
}

/** The per-step outputs y_t stacked along a new leading axis, member by member at the CLIENTS. */
function stackSteps(steps: readonly Value[], type: ValueType, run: Evaluator): Value {
  // With no steps the member shape comes from the declared type, its names bound by now.
  const stackTensors = (parts: readonly Tensor[]) =>
    stackLeading(parts, parts[0]?.shape ?? type.shape.slice(1).map((d) => run.dims.resolve(d, "stacked output")), type.dtype);
  if (!isAtClients(type.placement)) return stackTensors(steps.map((y) => oneTensor(y, "stacked output")));
  return new AtClients(range(run.clients()).map((i) => stackTensors(steps.map((y) => membersOf(y, "stacked output")[i]!))));
}

/**
 * body(carry..., x_t..., captured...) -> (carry..., y_t...) for t = 0 .. length-1, or from
 * length-1 down to 0 when attrs.reverse (the backward scan of a gradient); returns
 * [final carry..., stacked y...] with y_t at position t either way.
 */
function scan(inputs: readonly Value[], node: Node, run: Evaluator): Value[] {
  const body = node.bodies![0]!;
  const carries = node.attrs.carries as number;
  const [captures] = capturesPerBody(node, inputs);
  const xs = inputs.slice(carries, inputs.length - capturedCount(node));
  let carry = inputs.slice(0, carries);
  const length = scanLength(node, xs, run);
  const ys: Value[][] = new Array(length);
  for (let k = 0; k < length; k++) {
    const t = node.attrs.reverse === true ? length - 1 - k : k;
    const outs = run.evaluate(body, [...carry, ...xs.map((x) => stepOf(x, t)), ...captures!], "scan body");
    carry = outs.slice(0, carries);
    ys[t] = outs.slice(carries);
  }
  const yTypes = node.outputs.slice(carries).map((id) => run.types[id]!);
  return [...carry, ...yTypes.map((type, j) => stackSteps(ys.map((step) => step[j]!), type, run))];
}

/**
 * The per-client loop of a batched program: body once per client i (attrs.clients of them) on
 * x[i] of each operand marked in attrs.batched, the others and the captured values shared;
 * the outputs stacked along a new leading axis.
 */
function clientLoop(inputs: readonly Value[], node: Node, run: Evaluator): Value[] {
  const batched = node.attrs.batched as boolean[];
  const perClient = runPerIndex(node, inputs, run, node.attrs.clients as number, (x, k, i) => (batched[k] === true ? stepOf(x, i) : x));
  return node.outputs.map((id, j) => stackSteps(perClient.map((outs) => outs[j]!), run.types[id]!, run));
}

/**
 * TFF's federated_aggregate with a fixed grouping: the first ceil(C/2) clients and the rest
 * (possibly none) each fold their members into the zero accumulator with accumulate, in client
 * order; merge combines the two partial accumulators and report makes the SERVER result.
 */
function aggregate(inputs: readonly Value[], node: Node, run: Evaluator): Value[] {
  const [accumulate, merge, report] = node.bodies! as [Graph, Graph, Graph];
  const memberCount = node.attrs.members as number;
  const accCount = node.attrs.accumulators as number;
  const members = inputs.slice(0, memberCount).map((x) => membersOf(x, "aggregate"));
  const zero = inputs.slice(memberCount, memberCount + accCount);
  const [accCaptures, mergeCaptures, reportCaptures] = capturesPerBody(node, inputs);
  const fold = (clients: readonly number[]): Value[] =>
    clients.reduce(
      (acc, i) => run.evaluate(accumulate, [...acc, ...members.map((m) => m[i]!), ...accCaptures!], "aggregate accumulate"),
      zero,
    );
  const clients = range(run.clients());
  const half = Math.ceil(clients.length / 2);
  const merged = run.evaluate(merge, [...fold(clients.slice(0, half)), ...fold(clients.slice(half)), ...mergeCaptures!], "aggregate merge");
  return run.evaluate(report, [...merged, ...reportCaptures!], "aggregate report");
}

/**
 * aggregate's member cotangents: the fold again, storing the accumulator entering each
 * client's step; report's and merge's pullbacks give each group's accumulator cotangent, and
 * accumulate's pullback walks each group back to its first client.
 */
function aggregateVjp(inputs: readonly Value[], node: Node, run: Evaluator): Value[] {
  const [accumulate, merge, , accumulateVjp, mergeVjp, reportVjp] = node.bodies! as Graph[];
  const memberCount = node.attrs.members as number;
  const accCount = node.attrs.accumulators as number;
  const members = inputs.slice(0, memberCount).map((x) => membersOf(x, "aggregate"));
  const zero = inputs.slice(memberCount, memberCount + accCount);
  const resultCts = inputs.slice(memberCount + accCount, inputs.length - capturedCount(node));
  const caps = capturesPerBody(node, inputs);
  const memberValues = (i: number) => members.map((m) => m[i]!);
  const clients = range(run.clients());
  const half = Math.ceil(clients.length / 2);
  const groups = [clients.slice(0, half), clients.slice(half)];
  const entering: Value[][] = [];
  const partials = groups.map((group) =>
    group.reduce((acc, i) => {
      entering[i] = acc;
      return run.evaluate(accumulate!, [...acc, ...memberValues(i), ...caps[0]!], "aggregate accumulate");
    }, zero),
  );
  const merged = run.evaluate(merge!, [...partials[0]!, ...partials[1]!, ...caps[1]!], "aggregate merge");
  const mergedCt = run.evaluate(reportVjp!, [...merged, ...resultCts, ...caps[5]!], "aggregate report pullback");
  const partialCts = run.evaluate(mergeVjp!, [...partials[0]!, ...partials[1]!, ...mergedCt, ...caps[4]!], "aggregate merge pullback");
  const memberCts: Value[][] = [];
  groups.forEach((group, k) => {
    let ct = partialCts.slice(k * accCount, (k + 1) * accCount);
    for (const i of [...group].reverse()) {
      const outs = run.evaluate(accumulateVjp!, [...entering[i]!, ...memberValues(i), ...ct, ...caps[3]!], "aggregate accumulate pullback");
      ct = outs.slice(0, accCount);
      memberCts[i] = outs.slice(accCount);
    }
  });
  return members.map((_, j) => new AtClients(clients.map((i) => oneTensor(memberCts[i]![j]!, "aggregate"))));
}

export const controlRules: Record<string, ControlRule> = {
  federated_broadcast: ([x], _node, run) => [new AtClients(range(run.clients()).map(() => oneTensor(x!, "federated_broadcast")))],
  federated_sum: overClients("numeric", (acc, x) => acc + x),
  federated_mean: overClients("float", (acc, x) => acc + x, (sum, clients) => sum / clients),
  // Math.max and Math.min propagate NaN, as the tensor reductions do.
  federated_max: overClients("numeric", Math.max),
  federated_min: overClients("numeric", Math.min),
  map,
  scan,
  client_loop: clientLoop,
  aggregate,
  aggregate_vjp: aggregateVjp,
};
