/**
 * Client batching as an IR transformation (SPEC section 6, after DrJAX and JAX's vmap).
 *
 * Input: a specialised program (every dim a number). Output: a single-location program in
 * which a CLIENTS value is one tensor [C, ...member] ("batched"), while SERVER values, local
 * values and all-equal CLIENTS values (what broadcast() returns) stay one member. map()
 * disappears into batched operations, or, where the backend's policy prefers it, becomes a
 * `client_loop` that runs the per-client function once per client; the reductions become
 * reductions over axis 0.
 */
import { ftError } from "../errors/error.js";
import { GraphBuilder, recordInto, traceBody, ValueTable, type ClosedBody, type Tracer } from "../front/trace.js";
import type { Graph, Node, ProgramIR, ValueType } from "../ir/types.js";
import { materialize, prim, primMany } from "./emit.js";
import { inline, splitCaptures } from "./inline.js";
import { batchRules } from "./batch-rules.js";

/** Decides, per map, whether the backend runs it batched or once per client. */
export interface BatchPolicy {
  /** Called with the batched form of a map's function; true keeps it, false runs a client loop. */
  acceptBatchedMap(body: Graph, isBatched: (id: number) => boolean, values: readonly ValueType[]): boolean;
}

export interface BatchedProgram {
  readonly ir: ProgramIR;
  readonly clients: number;
  /** Per graph output: does axis 0 hold the clients? (CLIENTS outputs always do.) */
  readonly batchedOutputs: readonly boolean[];
}

const local = (t: ValueType): ValueType => ({ ...t, placement: "local" });
const isAtClients = (t: ValueType) => t.placement === "clients" || t.placement === "clients-equal";

class Batcher {
  readonly batched = new Set<number>();

  constructor(
    readonly clients: number,
    readonly policy: BatchPolicy,
    readonly values: ValueTable,
  ) {}

  isBatched = (t: Tracer): boolean => this.batched.has(t.id);

  mark(ts: readonly Tracer[], flags: readonly boolean[]): void {
    ts.forEach((t, i) => flags[i] && this.batched.add(t.id));
  }

  /** The value as [C, ...member]. */
  materialize(t: Tracer): Tracer {
    if (this.isBatched(t)) return t;
    const out = materialize(this.clients, t);
    this.batched.add(out.id);
    return out;
  }

  /** Emits the batched form of `graph` with `inputs` (batched as marked) into the current graph. */
  run(graph: Graph, inputs: readonly Tracer[], types: readonly ValueType[]): Tracer[] {
    const env = new Map<number, Tracer>();
    graph.inputs.forEach((id, i) => env.set(id, inputs[i]!));
    for (const node of graph.nodes) {
      const ins = node.inputs.map((id) => env.get(id)!);
      const outs = this.node(node, ins, types);
      node.outputs.forEach((id, i) => env.set(id, outs[i]!));
    }
    return graph.outputs.map((id) => env.get(id)!);
  }

  private node(node: Node, inputs: Tracer[], types: readonly ValueType[]): Tracer[] {
    const outs = this.emitNode(node, inputs, types);
    // A batched value has exactly one dim more than its member type: the client axis.
    outs.forEach((t, i) => {
      if (t.shape.length === types[node.outputs[i]!]!.shape.length + 1) this.batched.add(t.id);
    });
    return outs;
  }

  private emitNode(node: Node, inputs: Tracer[], types: readonly ValueType[]): Tracer[] {
    switch (node.op) {
      case "map":
        return this.map(node, inputs, types);
      case "scan":
        return this.scan(node, inputs, types);
      case "aggregate":
        return this.aggregate(node, inputs, types);
      case "aggregate_vjp":
        return this.aggregateVjp(node, inputs, types);
    }
    const rule = batchRules[node.op];
    if (rule === undefined) throw new Error(`internal: no batching rule for ${node.op}`);
    return rule({ node, inputs, outTypes: node.outputs.map((id) => types[id]!), clients: this.clients, isBatched: this.isBatched });
  }

  private map(node: Node, inputs: Tracer[], types: readonly ValueType[]): Tracer[] {
    const body = node.bodies![0]!;
    const { operands, captured } = splitCaptures(node, inputs);
    const caps = captured[0]!;
    if (!operands.some(this.isBatched)) return this.run(body, [...operands, ...caps], types);
    const batchedBody = traceBody("map", operands.map((t) => local(t.type)), (ins) => {
      this.mark(ins, operands.map(this.isBatched));
      return this.run(body, [...ins, ...caps], types);
    });
    if (this.policy.acceptBatchedMap(batchedBody.graph, (id) => this.batched.has(id), this.values.types)) {
      return inline(batchedBody.graph, [...operands, ...batchedBody.captures]);
    }
    return this.clientLoop(body, operands, caps);
  }

  /** A map run once per client on its members (the backend's per-client form). */
  private clientLoop(body: Graph, operands: Tracer[], caps: Tracer[]): Tracer[] {
    const flags = operands.map(this.isBatched);
    const params = operands.map((t, i) => ({ ...t.type, shape: flags[i] ? t.shape.slice(1) : t.shape, placement: "member" as const }));
    const loopBody = traceBody("client_loop", params, (ins) => inline(body, [...ins, ...caps]));
    return primMany("client_loop", operands, { batched: flags, clients: this.clients }, [loopBody]);
  }

  /**
   * scan: a carry is batched when its initial value is, or when the body makes it so (found
   * by re-tracing the body until the carry flags stop changing). Batched xs are transposed to
   * [steps, C, ...] so that each step sees [C, ...].
   */
  private scan(node: Node, inputs: Tracer[], types: readonly ValueType[]): Tracer[] {
    const body = node.bodies![0]!;
    const carries = node.attrs.carries as number;
    const { operands, captured } = splitCaptures(node, inputs);
    const caps = captured[0]!;
    const init = operands.slice(0, carries);
    const xs = operands.slice(carries).map((x) => (this.isBatched(x) ? swapLeadingAxes(x) : x));
    const xsFlags = operands.slice(carries).map(this.isBatched);
    const stepTypes = xs.map((t) => ({ ...t.type, shape: t.shape.slice(1) }));
    let carryFlags = init.map(this.isBatched);
    for (;;) {
      const carryTypes = init.map((c, i) => ({ ...c.type, shape: carryFlags[i] && !this.isBatched(c) ? [this.clients, ...c.shape] : c.shape }));
      let outFlags: boolean[] = [];
      const traced: ClosedBody = traceBody("scan", [...carryTypes, ...stepTypes], (ins) => {
        this.mark(ins, [...carryFlags, ...xsFlags]);
        const outs = this.run(body, [...ins, ...caps], types);
        outFlags = outs.map(this.isBatched);
        return outs.map((t, i) => (i < carries && carryFlags[i] ? this.materialize(t) : t));
      });
      const widened = carryFlags.map((f, i) => f || outFlags[i]!);
      if (widened.some((f, i) => f !== carryFlags[i])) {
        carryFlags = widened;
        continue;
      }
      const initValues = init.map((c, i) => (carryFlags[i] ? this.materialize(c) : c));
      const outs = primMany("scan", [...initValues, ...xs], node.attrs, [traced]);
      // Batched outputs of the steps are stacked as [steps, C, ...]: put the clients first.
      return outs.map((y, i) => (i >= carries && outFlags[i] ? swapLeadingAxes(y) : y));
    }
  }

  /**
   * aggregate folds clients in two contiguous groups (the first ceil(C/2) clients, then the
   * rest), merges the two partial results and reports: the reference semantics, run as two
   * scans over the client axis.
   */
  private aggregate(node: Node, inputs: Tracer[], types: readonly ValueType[]): Tracer[] {
    const [accumulate, merge, report] = node.bodies!;
    const { members, rest: zero, captured } = this.aggregateOperands(node, inputs);
    const partials = this.groups(members).flatMap(({ count, slices }) =>
      count === 0 ? zero : scanSteps(zero, slices, count, false, (ins) => this.run(accumulate!, [...ins, ...captured[0]!], types)),
    );
    const merged = this.run(merge!, [...partials, ...captured[1]!], types);
    return this.run(report!, [...merged, ...captured[2]!], types);
  }

  /**
   * aggregate's member cotangents: the same two scans, storing the accumulator entering each
   * client's step, then report's and merge's pullbacks, and per group a reverse scan over its
   * clients with accumulate's pullback; the groups' cotangents are joined on the client axis.
   */
  private aggregateVjp(node: Node, inputs: Tracer[], types: readonly ValueType[]): Tracer[] {
    const [accumulate, merge, , accumulateVjp, mergeVjp, reportVjp] = node.bodies!;
    const accCount = node.attrs.accumulators as number;
    const { members, rest, captured } = this.aggregateOperands(node, inputs);
    const [zero, resultCts] = [rest.slice(0, accCount), rest.slice(accCount)];
    const groups = this.groups(members);
    const forward = groups.map(({ count, slices }) => {
      if (count === 0) return { partial: zero, entering: [] };
      const outs = scanSteps(zero, slices, count, false, (ins) => [...this.run(accumulate!, [...ins, ...captured[0]!], types), ...ins.slice(0, accCount)]);
      return { partial: outs.slice(0, accCount), entering: outs.slice(accCount) };
    });
    const partials = forward.flatMap((f) => f.partial);
    const merged = this.run(merge!, [...partials, ...captured[1]!], types);
    const mergedCt = this.run(reportVjp!, [...merged, ...resultCts, ...captured[5]!], types);
    const partialCts = this.run(mergeVjp!, [...partials, ...mergedCt, ...captured[4]!], types);
    const perGroup = groups.flatMap(({ count, slices }, k) => {
      if (count === 0) return [];
      const init = partialCts.slice(k * accCount, (k + 1) * accCount);
      const outs = scanSteps(init, [...forward[k]!.entering, ...slices], count, true, (ins) => {
        const [ct, acc, member] = [ins.slice(0, accCount), ins.slice(accCount, 2 * accCount), ins.slice(2 * accCount)];
        return this.run(accumulateVjp!, [...acc, ...member, ...ct, ...captured[3]!], types);
      });
      return [outs.slice(accCount)];
    });
    return members.map((_, j) => (perGroup.length === 1 ? perGroup[0]![j]! : prim("concat", perGroup.map((g) => g[j]!), { axis: 0 })));
  }

  /** The members (with their client axis), the operands after them (zero, and aggregate_vjp's result cotangents), the captured values. */
  private aggregateOperands(node: Node, inputs: Tracer[]) {
    const { operands, captured } = splitCaptures(node, inputs);
    const members = operands.slice(0, node.attrs.members as number).map((m) => this.materialize(m));
    const rest = operands.slice(node.attrs.members as number);
    if (rest.some(this.isBatched)) throw new Error("internal: aggregate's zero varies across clients");
    return { members, rest, captured };
  }

  /** The members of each group of clients: the first ceil(C/2), then the rest (maybe none). */
  private groups(members: Tracer[]): { count: number; slices: Tracer[] }[] {
    const half = Math.ceil(this.clients / 2);
    return [
      [0, half],
      [half, this.clients - half],
    ].map(([from, count]) => ({
      count: count!,
      slices:
        count === 0
          ? []
          : members.map((m) => prim("slice", [m], { begin: m.shape.map((_, i) => (i === 0 ? from! : 0)), size: m.shape.map((d, i) => (i === 0 ? count! : (d as number))) })),
    }));
  }
}

/** A scan over axis 0 of xs, `count` steps, carrying init; body gets the carries, then one step of each x. */
function scanSteps(init: Tracer[], xs: Tracer[], count: number, reverse: boolean, body: (ins: Tracer[]) => Tracer[]): Tracer[] {
  const step = traceBody("scan", [...init.map((t) => local(t.type)), ...xs.map((x) => ({ ...local(x.type), shape: x.shape.slice(1) }))], body);
  return primMany("scan", [...init, ...xs], { carries: init.length, length: count, ...(reverse ? { reverse: true } : {}) }, [step]);
}

/** [a, b, ...] to [b, a, ...]: between [C, steps, ...] and [steps, C, ...]. */
function swapLeadingAxes(t: Tracer): Tracer {
  const perm = t.shape.map((_, i) => i);
  [perm[0], perm[1]] = [1, 0];
  return prim("transpose", [t], { perm });
}


/** Batches a specialised program for `clients` clients under a backend's policy. */
export function batchProgram(ir: ProgramIR, clients: number, policy: BatchPolicy): BatchedProgram {
  if (clients < 1) throw ftError("FT305", { option: "clients", why: `a cohort needs at least one client, got ${clients}` });
  const values = new ValueTable();
  const root = new GraphBuilder(values, undefined);
  const batcher = new Batcher(clients, policy, values);
  const outputs = recordInto(root, () => {
    const inputs = ir.graph.inputs.map((id) => {
      const type = ir.values[id]!;
      if (!isAtClients(type)) return root.addInput(local(type));
      const t = root.addInput(local({ ...type, shape: [clients, ...type.shape] }));
      batcher.batched.add(t.id);
      return t;
    });
    return batcher.run(ir.graph, inputs, ir.values);
  });
  // CLIENTS outputs always come back with their client axis, even when all-equal.
  const finalOutputs = recordInto(root, () =>
    outputs.map((t, i) => (isAtClients(ir.values[ir.graph.outputs[i]!]!) ? batcher.materialize(t) : t)),
  );
  return {
    ir: { ...ir, values: values.types, graph: root.finish(finalOutputs) },
    clients,
    batchedOutputs: finalOutputs.map(batcher.isBatched),
  };
}
