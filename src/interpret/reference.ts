/**
 * The reference interpreter: a plain float64 evaluator of the IR with an explicit loop over
 * clients (DrJAX's "virtual global tensor" semantics, unbatched). It is the oracle the
 * optimised TensorFlow.js path is tested against, so it aims to be simple, obviously correct
 * and complete rather than fast.
 *
 * Every primitive has one evaluation rule, keyed by its name as in ir/primitives.ts: tensor
 * rules compute one tensor from tensors and are applied once per client when an operand is
 * at the CLIENTS; control rules (placement primitives, map, scan, aggregate) see placed values
 * as they are. Every value produced is checked against its IR type, which binds named dims.
 */
import { ftError } from "../errors/error.js";
import type { Graph, Node, ProgramIR, ValueType } from "../ir/types.js";
import { arrayRules } from "./array-rules.js";
import { controlRules as placementAndControlRules } from "./control-rules.js";
import { randomControlRules, randomRules } from "./random-rules.js";
import { secureControlRules, secureRules } from "./secure-rules.js";
import { robustControlRules } from "./robust-rules.js";
import { sequenceMultiRules, sequenceRules } from "./sequence-rules.js";
import { elementwiseRules } from "./elementwise-rules.js";
import { readInputs, writeOutputs, type InputTree, type OutputTree } from "./io.js";
import { reductionRules } from "./reduction-rules.js";
import type { ControlRule, Evaluator, MultiTensorRule, RuleContext, TensorRule } from "./rule.js";
import type { Tensor } from "./tensor.js";
import { AtClients, checkValue, DimBindings, isAtClientsValue, type Value } from "./values.js";
import { windowRules } from "./window-rules.js";

export type { InputLeaf, InputTree, InputValue, OutputLeaf, OutputTree } from "./io.js";

export interface InterpretOptions {
  /** The number of clients when no input is at the CLIENTS (else it must agree with them). */
  readonly clients?: number;
  /**
   * Sees every application of a tensor rule (once per client for CLIENTS operands), for
   * callers that audit a run, e.g. the differential tests looking for comparisons whose
   * operands tie to within float32 rounding.
   */
  readonly observe?: TensorObserver;
}

export type TensorObserver = (op: string, inputs: readonly Tensor[], output: Tensor) => void;

export const tensorRules: Record<string, TensorRule> = { ...elementwiseRules, ...arrayRules, ...reductionRules, ...windowRules, ...randomRules, ...sequenceRules, ...secureRules };
export const multiOutputRules: Record<string, MultiTensorRule> = { ...sequenceMultiRules };
export const controlRules: Record<string, ControlRule> = { ...placementAndControlRules, ...randomControlRules, ...secureControlRules, ...robustControlRules };

/**
 * Applies a tensor rule, once per client when an operand is at the CLIENTS (other operands
 * shared). dim_size reads only a shape, the same for every member: it runs once, on the first.
 */
function perClient(rule: TensorRule, inputs: readonly Value[], cx: RuleContext): Value {
  const placed = inputs.find(isAtClientsValue);
  if (placed === undefined) return rule(inputs as readonly Tensor[], cx);
  if (cx.op === "dim_size") return rule(inputs.map((x) => (isAtClientsValue(x) ? x.members[0]! : x)), cx);
  return new AtClients(placed.members.map((_, i) => rule(inputs.map((x) => (isAtClientsValue(x) ? x.members[i]! : x)), cx)));
}

/** perClient for a rule with several outputs: each output at the CLIENTS gathers its members. */
function perClientMany(rule: MultiTensorRule, inputs: readonly Value[], cx: RuleContext, observe: TensorObserver | undefined): Value[] {
  const run = (tensors: readonly Tensor[]): Tensor[] => {
    const outputs = rule(tensors, cx);
    observe?.(cx.op, tensors, outputs[0]!);
    return outputs;
  };
  const placed = inputs.find(isAtClientsValue);
  if (placed === undefined) return run(inputs as readonly Tensor[]);
  const members = placed.members.map((_, i) => run(inputs.map((x) => (isAtClientsValue(x) ? x.members[i]! : x))));
  return members[0]!.map((_, o) => new AtClients(members.map((m) => m[o]!)));
}

/** The rule, reporting each application to the observer when there is one. */
function observed(rule: TensorRule, observe: TensorObserver | undefined): TensorRule {
  if (observe === undefined) return rule;
  return (tensors, cx) => {
    const output = rule(tensors, cx);
    observe(cx.op, tensors, output);
    return output;
  };
}

class Run implements Evaluator {
  constructor(
    readonly types: readonly ValueType[],
    readonly dims: DimBindings,
    private readonly clientCount: number | undefined,
    private readonly observe: TensorObserver | undefined,
  ) {}

  readonly clients = (): number => {
    if (this.clientCount === undefined) {
      throw ftError("FT302", { what: "options.clients", why: "no input is at the CLIENTS, so the number of clients must be given" });
    }
    return this.clientCount;
  };

  evaluate(graph: Graph, args: readonly Value[], what: string): Value[] {
    const env = new Map<number, Value>();
    const bind = (id: number, value: Value | undefined, role: string): void => {
      if (value === undefined) throw new Error(`internal: ${role} has no value for value ${id}`);
      checkValue(value, this.types[id]!, this.clients, this.dims, role);
      env.set(id, value);
    };
    const lookup = (id: number): Value => {
      const value = env.get(id);
      if (value === undefined) throw new Error(`internal: value ${id} is used in ${what} before it is defined`);
      return value;
    };
    graph.inputs.forEach((id, i) => bind(id, args[i], `${what} input ${i}`));
    for (const node of graph.nodes) {
      const outputs = this.node(node, node.inputs.map(lookup));
      node.outputs.forEach((id, i) => bind(id, outputs[i], `${node.op}() result`));
    }
    return graph.outputs.map(lookup);
  }

  private node(node: Node, inputs: readonly Value[]): Value[] {
    const control: ControlRule | undefined = controlRules[node.op];
    if (control !== undefined) return control(inputs, node, this);
    const cx: RuleContext = { op: node.op, attrs: node.attrs, inputTypes: node.inputs.map((id) => this.types[id]!), dims: this.dims, clients: this.clients };
    const many = multiOutputRules[node.op];
    if (many !== undefined) return perClientMany(many, inputs, cx, this.observe);
    const rule = tensorRules[node.op];
    if (rule === undefined) throw new Error(`internal: the reference interpreter has no rule for primitive ${node.op}`);
    return [perClient(observed(rule, this.observe), inputs, cx)];
  }
}

/** FT302 unless `ir` is a program's IR, with the fix for the usual slip: the program itself. */
function checkProgramIR(ir: unknown): void {
  const isIR = (x: unknown): boolean => typeof x === "object" && x !== null && (x as { format?: unknown }).format === "fedtensor-ir";
  if (isIR(ir)) return;
  const why = isIR((ir as { ir?: unknown } | null | undefined)?.ir)
    ? "got the program itself: pass program.ir"
    : `expected a program's IR (program.ir, or a loaded IR file), got ${ir === null || typeof ir !== "object" ? String(ir) : "another object"}`;
  throw ftError("FT302", { what: "interpret() program", why });
}

/**
 * Runs a program on data. `inputs` follows the program's input tree by name; a value at the
 * CLIENTS is given, and returned, with a leading client axis [C, ...member shape].
 * @placement the program's: CLIENTS values are given and returned with a leading client axis.
 * @example
 * const p = program({ x: atClients(f32([2])) }, ({ x }) => reduceSum(x));
 * interpret(p.ir, { x: { shape: [3, 2], data: [1, 2, 3, 4, 5, 6] } }); // [9, 12] at the SERVER
 */
export function interpret(ir: ProgramIR, inputs: InputTree, options: InterpretOptions = {}): OutputTree {
  checkProgramIR(ir);
  const dims = new DimBindings();
  const { args, clients } = readInputs(ir, inputs, options.clients, dims);
  const outputs = new Run(ir.values, dims, clients, options.observe).evaluate(ir.graph, args, "program");
  return writeOutputs(ir, outputs);
}
