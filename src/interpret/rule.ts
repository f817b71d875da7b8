/**
 * The shape of a per-primitive evaluation rule. Every primitive other than the placement and
 * control ones computes one tensor from tensors; the interpreter applies such a rule once per
 * client when an operand is at the CLIENTS (sharing the other operands).
 */
import type { Attrs } from "../ir/primitives.js";
import type { Graph, Node, ValueType } from "../ir/types.js";
import type { Tensor } from "./tensor.js";
import type { DimBindings, Value } from "./values.js";

export interface RuleContext {
  readonly op: string;
  readonly attrs: Attrs;
  /** The declared types of the node's inputs, for messages. */
  readonly inputTypes: readonly ValueType[];
  readonly dims: DimBindings;
  /** The number of clients in the cohort (FT302 when the run has none). */
  readonly clients: () => number;
}

export type TensorRule = (inputs: readonly Tensor[], cx: RuleContext) => Tensor;
/** A rule with several outputs (sort: values and positions). */
export type MultiTensorRule = (inputs: readonly Tensor[], cx: RuleContext) => Tensor[];

export const attrNumber = (cx: RuleContext, key: string): number => cx.attrs[key] as number;
export const attrNumbers = (cx: RuleContext, key: string): number[] => cx.attrs[key] as number[];

/** What the placement and control rules need of the running interpreter. */
export interface Evaluator {
  readonly types: readonly ValueType[];
  readonly dims: DimBindings;
  readonly clients: () => number;
  /** Runs a closed graph on values for its inputs; `what` names it in messages. */
  evaluate(graph: Graph, args: readonly Value[], what: string): Value[];
}

/** A rule that sees placed values as they are and may run the node's bodies. */
export type ControlRule = (inputs: readonly Value[], node: Node, run: Evaluator) => Value[];
