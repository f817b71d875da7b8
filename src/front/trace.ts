/**
 * Tracing: calling FedTensor operations inside program(...) records IR nodes instead of
 * computing. Each traced function (the program, map()'s function, a loop body, a function
 * under grad()) records into its own GraphBuilder; the builders nest like the calls do.
 *
 * Sub-graphs are closed. When a function uses a value traced by an enclosing function, the
 * value is captured: the inner graph gets a fresh input for it, and the node that owns the
 * inner graph passes the outer value in (see Node.captures in ir/types.ts).
 */
import { ftError } from "../errors/error.js";
import { inferNode, type Attrs } from "../ir/primitives.js";
import { printType } from "../ir/print.js";
import { taintOutputs } from "../ir/privacy.js";
import type { Graph, Node, ValueType } from "../ir/types.js";
import type { TypeInfo, staticType } from "../../types/tensor.js";

/**
 * The keys that a program's releases (dpSum, secureSum) have used, by derivation (see
 * src/front/release-keys.ts), with the call that used each: a key feeds at most one release.
 */
export class ReleaseKeys {
  private used = new Map<string, string>();
  entries(): IterableIterator<[string, string]> {
    return this.used.entries();
  }
  /** How many releases the program has so far: the number the next one gets. */
  get size(): number {
    return this.used.size;
  }
  add(derivation: string, by: string): void {
    this.used.set(derivation, by);
  }
  snapshot(): ReadonlyMap<string, string> {
    return new Map(this.used);
  }
  restore(snapshot: ReadonlyMap<string, string>): void {
    this.used = new Map(snapshot);
  }
}

/** The value table shared by every graph of one program. */
export class ValueTable {
  readonly types: ValueType[] = [];
  readonly releases = new ReleaseKeys();
  add(type: ValueType): number {
    this.types.push(type);
    return this.types.length - 1;
  }
}

/** A traced value: what user code holds in place of a tensor while a program is traced. */
export class Tracer {
  declare readonly [staticType]: TypeInfo;

  constructor(
    readonly graph: GraphBuilder,
    readonly id: number,
    readonly type: ValueType,
  ) {}

  get shape(): ValueType["shape"] {
    return this.type.shape;
  }
  get dtype(): ValueType["dtype"] {
    return this.type.dtype;
  }
  get placement(): ValueType["placement"] {
    return this.type.placement;
  }
  toString(): string {
    return printType(this.type);
  }
}

export const isTracer = (x: unknown): x is Tracer => x instanceof Tracer;

export class GraphBuilder {
  readonly inputs: number[] = [];
  readonly nodes: Node[] = [];
  /** Values of enclosing graphs used here, in order of first use: outer id to inner id. */
  readonly captures = new Map<number, number>();
  private finished = false;

  /**
   * In map()'s function: clientIndex()'s member input, once asked for, and the program-level
   * value (client_iota) that map() passes for it (see src/front/random.ts).
   */
  clientIndex: { readonly member: Tracer; readonly outer: Tracer } | undefined;

  constructor(
    readonly values: ValueTable,
    readonly parent: GraphBuilder | undefined,
    /**
     * True while tracing a per-client function (map()'s, aggregate()'s accumulate, merge and
     * report) or a function nested in one, where broadcast() and the reductions are FT105.
     */
    readonly perClient = false,
    /** The operation whose function this graph records (map, scan, grad, ...); undefined for a program. */
    readonly tracedFor?: string,
    /** Per input, whether it may differ between clients (map()'s function; others: unknown, so true). */
    readonly inputVaries?: readonly boolean[],
  ) {
    this.checksPrivacy = parent?.checksPrivacy ?? false;
  }

  /**
   * Whether FT109 is checked here: in a program the user traces (program() sets it on its
   * graph; graphs nested in it inherit it). Transformations that re-trace a checked program's
   * IR (specialize, batch, MapReduce form) propagate the flag without checking again.
   */
  checksPrivacy: boolean;

  /**
   * Per input, the outer value it starts as, where the caller knows one (a loop's initial
   * carry, a differentiated function's arguments): where a release's key comes from
   * (src/front/release-keys.ts) is followed through it.
   */
  paramOrigins: readonly (Tracer | undefined)[] | undefined;

  addInput(type: ValueType): Tracer {
    const id = this.values.add(type);
    this.inputs.push(id);
    return new Tracer(this, id, type);
  }

  /** The id under which a tracer's value is visible in this graph, capturing it if needed. */
  resolve(t: Tracer, op: string): number {
    if (t.graph === this) return t.id;
    if (this.parent === undefined || t.graph.values !== this.values) {
      throw ftError("FT108", { op, why: "got a value traced in another program" });
    }
    const outer = this.parent.resolve(t, op);
    let inner = this.captures.get(outer);
    if (inner === undefined) {
      inner = this.values.add(t.type);
      this.captures.set(outer, inner);
    }
    return inner;
  }

  /** Records one node; its output types come from the primitive's rule (which checks it). */
  emit(op: string, inputs: readonly Tracer[], attrs: Attrs = {}, userOp = op, bodies?: readonly ClosedBody[]): Tracer[] {
    if (this.finished) throw ftError("FT108", { op: userOp, why: "got a value whose function has already returned" });
    const types = inputs.map((t) => t.type);
    const bodyOutputs = bodies?.map((b) => b.graph.outputs.map((id) => this.values.types[id]!));
    const inferred = inferNode(op, types, attrs, userOp, bodyOutputs);
    const ids = inputs.map((t) => this.resolve(t, userOp));
    const capturedPerBody = bodies?.map((b) => b.captures.map((t) => this.resolve(t, userOp))) ?? [];
    const captured = capturedPerBody.flat();
    const operandTypes = [...types, ...captured.map((id) => this.values.types[id]!)];
    const outTypes = taintOutputs({ op, userOp, attrs, inputs: operandTypes, ...(bodyOutputs === undefined ? {} : { bodyOutputs }) }, inferred, this.checksPrivacy);
    const outputs = outTypes.map((t) => this.values.add(t));
    const node: Node = {
      op,
      inputs: [...ids, ...captured],
      outputs,
      attrs,
      ...(bodies === undefined ? {} : { bodies: bodies.map((b) => b.graph) }),
      ...(captured.length === 0 ? {} : { captures: capturedPerBody.map((c) => c.length) }),
    };
    this.nodes.push(node);
    return outputs.map((id, i) => new Tracer(this, id, outTypes[i]!));
  }

  /** Closes the graph: captured values become trailing inputs. */
  finish(outputs: readonly Tracer[]): Graph {
    const outIds = outputs.map((t) => this.resolve(t, "return"));
    this.finished = true;
    return { inputs: [...this.inputs, ...this.captures.values()], nodes: this.nodes, outputs: outIds };
  }
}

/** A traced sub-function: its closed graph and the outer values its captured inputs stand for. */
export interface ClosedBody {
  readonly graph: Graph;
  /** Outer tracers, in the order of the graph's trailing captured inputs. */
  readonly captures: readonly Tracer[];
  /** map()'s function only: the outer value for the input clientIndex() added after the others. */
  readonly clientIndex?: Tracer;
}

const stack: GraphBuilder[] = [];

/** The graph being recorded, or FT108 when no program is being traced. */
export function currentGraph(op: string): GraphBuilder {
  const top = stack[stack.length - 1];
  if (top === undefined) {
    throw ftError("FT108", { op, why: "was called outside program(...): operations record a program and run through program.run()" });
  }
  return top;
}

export function isTracing(): boolean {
  return stack.length > 0;
}

/** Runs fn while recording into graph. */
export function recordInto<R>(graph: GraphBuilder, fn: () => R): R {
  stack.push(graph);
  try {
    return fn();
  } finally {
    stack.pop();
  }
}

/**
 * Traces fn on fresh inputs of the given types as a closed sub-graph of the current graph.
 * fn returns the tracers to output (already flattened by the caller). A function nested in a
 * per-client one is per-client too.
 */
export function traceBody(
  op: string,
  inputTypes: readonly ValueType[],
  fn: (inputs: Tracer[]) => readonly Tracer[],
  options: { readonly perClient?: boolean; readonly inputVaries?: readonly boolean[]; readonly origins?: readonly (Tracer | undefined)[] } = {},
): ClosedBody {
  const parent = currentGraph(op);
  const graph = new GraphBuilder(parent.values, parent, options.perClient === true || parent.perClient, op, options.inputVaries);
  graph.paramOrigins = options.origins;
  const outputs = recordInto(graph, () => fn(inputTypes.map((t) => graph.addInput(t))));
  const closed = graph.finish(outputs);
  const byOuterId = new Map<number, Tracer>();
  for (const outer of graph.captures.keys()) byOuterId.set(outer, new Tracer(parent, outer, parent.values.types[outer]!));
  const clientIndex = graph.clientIndex?.outer;
  return { graph: closed, captures: [...byOuterId.values()], ...(clientIndex === undefined ? {} : { clientIndex }) };
}
