/**
 * A compiled graph: the lowering of every node to a kernel (a function on tfjs tensors),
 * scheduled in order with each intermediate tensor disposed right after its last use, so a
 * run leaves exactly its outputs behind (SPEC section 6: no tensor leaks across rounds).
 *
 * Ownership: graph inputs belong to the caller and constants to the compiled graph; every
 * other tensor belongs to the run. Outputs are always fresh tensors the caller owns.
 */
import type { Tensor as TfTensor } from "@tensorflow/tfjs-core";
import type { Graph, Node, ValueType } from "../ir/types.js";

export type Kernel = (inputs: readonly TfTensor[]) => TfTensor[];

export interface LoweringContext {
  readonly backend: string;
  readonly types: readonly ValueType[];
  /** Compiles a body graph (of scan or client_loop) with the same lowering. */
  compile(graph: Graph): CompiledGraph;
  /** Makes a tensor a kernel keeps (a constant operand) the compiled graph's, freed with it. */
  own<T extends TfTensor>(tensor: T): T;
}

export type LoweringRule = (node: Node, ctx: LoweringContext) => Kernel;

/** A value's shape: every dim is a number once the program is specialised for its run. */
export const shapeOf = (ctx: LoweringContext, id: number): number[] => ctx.types[id]!.shape as number[];

interface Step {
  readonly op: string;
  readonly kernel: Kernel;
  readonly inputs: readonly number[];
  readonly outputs: readonly number[];
  /** Slots whose last use is this step and which the run owns: disposed after it. */
  readonly release: readonly number[];
}

export class CompiledGraph {
  private readonly steps: Step[] = [];
  private readonly slotCount: number;
  private readonly inputSlots: number[];
  private readonly outputSlots: number[];
  /** Constant tensors, made once, owned by this graph. */
  private readonly constants = new Map<number, TfTensor>();
  /** Compiled bodies of this graph's loops, disposed with it. */
  private readonly bodies: CompiledGraph[] = [];
  /** Tensors kernels keep (see LoweringContext.own). */
  private readonly owned: TfTensor[] = [];

  /** `parentCtx` gives the backend and types; this graph provides the context's ownership of tensors. */
  constructor(graph: Graph, rules: Readonly<Record<string, LoweringRule>>, parentCtx: Omit<LoweringContext, "own">) {
    const ctx: LoweringContext = {
      ...parentCtx,
      compile: (body) => {
        const compiled = parentCtx.compile(body);
        this.bodies.push(compiled);
        return compiled;
      },
      own: (tensor) => {
        this.owned.push(tensor);
        return tensor;
      },
    };
    const slotOf = new Map<number, number>();
    const slot = (id: number): number => {
      let s = slotOf.get(id);
      if (s === undefined) slotOf.set(id, (s = slotOf.size));
      return s;
    };
    this.inputSlots = graph.inputs.map(slot);
    const borrowed = new Set(this.inputSlots);
    const lastUse = new Map<number, number>();
    const stepNodes: Node[] = [];
    for (const node of graph.nodes) {
      const rule = rules[node.op];
      if (rule === undefined) throw new Error(`internal: no ${ctx.backend} lowering for ${node.op}`);
      const kernel = rule(node, ctx);
      if (node.op === "constant" || node.op === "fill" || node.op === "iota") {
        // Constants are made now and reused by every run.
        const [value] = kernel([]);
        this.constants.set(slot(node.outputs[0]!), value!);
        borrowed.add(slot(node.outputs[0]!));
        continue;
      }
      node.inputs.forEach((id) => lastUse.set(slot(id), stepNodes.length));
      node.outputs.forEach((id) => lastUse.set(slot(id), Math.max(lastUse.get(slot(id)) ?? -1, stepNodes.length)));
      stepNodes.push(node);
      this.steps.push({ op: node.op, kernel, inputs: node.inputs.map(slot), outputs: node.outputs.map(slot), release: [] });
    }
    this.outputSlots = graph.outputs.map(slot);
    const kept = new Set([...borrowed, ...this.outputSlots]);
    const releaseAt: number[][] = this.steps.map(() => []);
    for (const [s, step] of lastUse) if (!kept.has(s)) releaseAt[step]!.push(s);
    this.steps = this.steps.map((step, i) => ({ ...step, release: releaseAt[i]! }));
    this.slotCount = slotOf.size;
  }

  /** Runs the graph; the inputs stay the caller's, the outputs become the caller's. */
  run(inputs: readonly TfTensor[]): TfTensor[] {
    const env: (TfTensor | undefined)[] = new Array(this.slotCount);
    this.inputSlots.forEach((s, i) => (env[s] = inputs[i]));
    for (const [s, t] of this.constants) env[s] = t;
    try {
      for (const step of this.steps) {
        const args = step.inputs.map((s) => env[s]!);
        const outs = step.kernel(args);
        step.outputs.forEach((s, i) => {
          const out = outs[i]!;
          // A kernel may hand back one of its arguments (a no-op reshape): own a handle of it.
          env[s] = args.includes(out) ? out.clone() : out;
        });
        for (const s of step.release) {
          env[s]!.dispose();
          env[s] = undefined;
        }
      }
    } catch (error) {
      this.disposeOwned(env);
      throw error;
    }
    const seen = new Set<TfTensor>();
    const borrowedValues = new Set<TfTensor>([...inputs, ...this.constants.values()]);
    return this.outputSlots.map((s) => {
      const t = env[s]!;
      // Outputs the caller would not own (an input, a constant, the same tensor twice) are cloned.
      if (borrowedValues.has(t) || seen.has(t)) return t.clone();
      seen.add(t);
      return t;
    });
  }

  private disposeOwned(env: (TfTensor | undefined)[]): void {
    const borrowed = new Set<number>([...this.inputSlots, ...this.constants.keys()]);
    env.forEach((t, s) => {
      if (t !== undefined && !borrowed.has(s) && !t.isDisposed) t.dispose();
    });
  }

  /** Frees the constants; the graph cannot run afterwards. */
  dispose(): void {
    for (const t of this.constants.values()) t.dispose();
    this.constants.clear();
    for (const body of this.bodies) body.dispose();
    for (const t of this.owned) t.dispose();
    this.owned.length = 0;
  }
}
