/**
 * The FedTensor IR: what program(...) traces to. Plain JSON (see serialize.ts), so programs
 * can be inspected, stored and reloaded.
 *
 * A graph is a list of nodes in topological order. Values are numbered once per program, so a
 * value id means the same thing in every sub-graph; `values[id]` is its type. Sub-graphs
 * (`bodies`: map's function, a loop body, aggregate's functions) are closed: a value used
 * inside but defined outside is passed in explicitly as one of the node's `inputs` (after
 * the node's ordinary operands, see `captures`) and bound to one of the body's `inputs`.
 */
import type { DType, Placement as StaticPlacement, PrivatePlacement } from "../../types/tensor.js";

/**
 * A value's placement in the IR. The types' private placements (clients-private,
 * member-private) are recorded here as the `private` flag beside the placement, so that every
 * rule that asks where a value lives is unchanged.
 */
export type Placement = Exclude<StaticPlacement, PrivatePlacement>;
export type { DType };

/** A traced dim: a size, a name bound at run time, or null when only the run knows it. */
export type DimValue = number | string | null;

/**
 * The static type of an IR value: its shape, dtype, placement and whether it is computed from
 * private client data.
 *
 * @example
 * const p = program({ x: atClients(f32([2])) }, ({ x }) => reduceSum(x));
 * const first: ValueType = p.ir.values[0]!;
 * printType(first); // "{f32[2]}@CLIENTS"
 */
export interface ValueType {
  readonly shape: readonly DimValue[];
  readonly dtype: DType;
  readonly placement: Placement;
  /** Computed from private client data (docs/language.md "Privacy"); absent otherwise. */
  readonly private?: true;
}

export type Json = null | boolean | number | string | readonly Json[] | { readonly [key: string]: Json };

/**
 * One operation of the IR: its op name, input and output value ids, attributes, and the bodies of
 * control flow (map, loops).
 *
 * @example
 * const p = program({ x: atClients(f32([2])) }, ({ x }) => reduceSum(x));
 * const ops = p.ir.graph.nodes.map((node: Node) => node.op);
 */
export interface Node {
  readonly op: string;
  readonly inputs: readonly number[];
  readonly outputs: readonly number[];
  readonly attrs: { readonly [key: string]: Json };
  readonly bodies?: readonly Graph[];
  /** Per body, how many of its trailing inputs are captured values (absent when none). */
  readonly captures?: readonly number[];
}

/**
 * A graph of the IR: its input and output value ids and its nodes in order.
 *
 * @example
 * const p = program({ x: atClients(f32([2])) }, ({ x }) => reduceSum(x));
 * const graph: Graph = p.ir.graph;
 * console.log(graph.inputs.length, graph.outputs.length); // 1 1
 */
export interface Graph {
  readonly inputs: readonly number[];
  readonly nodes: readonly Node[];
  readonly outputs: readonly number[];
}

/** The shape of a tree of values: leaves are value ids (or spec/array positions). */
export type TreeDef = number | readonly TreeDef[] | { readonly [key: string]: TreeDef };

/**
 * A traced program as JSON: the type of every value, the graph of nodes, and where the named
 * inputs and outputs sit; what `fedtensor ir` prints and loadProgram reads.
 *
 * @example
 * const p = program({ x: atClients(f32([2])) }, ({ x }) => reduceSum(x));
 * const ir: ProgramIR = p.ir;
 * console.log(ir.graph.nodes.map((node) => node.op)); // the traced ops
 */
export interface ProgramIR {
  readonly format: "fedtensor-ir";
  readonly version: 1;
  readonly name: string;
  /** Type of every value id. */
  readonly values: readonly ValueType[];
  readonly graph: Graph;
  /** Where the program's named inputs sit among graph.inputs. */
  readonly inputTree: TreeDef;
  /** Where the program's outputs sit among graph.outputs. */
  readonly outputTree: TreeDef;
  /** The paths of the outputs that are client state (keepOnClients), kept by each client; absent when none. */
  readonly clientState?: readonly string[];
}

/** A node's attributes (JSON, so that the IR serialises as it is). */
export type Attrs = { readonly [key: string]: Json };

/** A primitive's typing rule (the table of them is in primitives.ts). */
export interface PrimitiveRule {
  infer(inputs: readonly ValueType[], attrs: Attrs, op: string, bodyOutputs?: readonly (readonly ValueType[])[]): ValueType[];
  /** Control primitives: the parameter types of each body, from the node's operand types. */
  bodyParams?(operands: readonly ValueType[], attrs: Attrs): ValueType[][];
  /**
   * Set on primitives that need every client of the cohort at once (a client's number in it,
   * masks paired across it, comparisons between its clients): no chunk of clients can compute
   * them, so a program with one has no MapReduce form (FT315 names `op` and says `why`).
   */
  wholeCohort?(attrs: Attrs): { readonly op: string; readonly why: string };
}
