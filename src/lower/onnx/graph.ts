/**
 * Building ONNX graphs: unique value names across the whole model (Loop bodies refer to outer
 * values by name), nodes with typed attributes, constants as initializers of the main graph,
 * and static value types (every shape is concrete once a program is specialised).
 */
import type { DType } from "../../ir/types.js";
import {
  AttributeType,
  DataType,
  type AttributeProto,
  type DataTypeCode,
  type GraphProto,
  type NodeProto,
  type TensorProto,
  type ValueInfoProto,
} from "./proto.js";

/** Element types of ONNX values: the IR's dtypes, int64 for shapes and indices, uint32 for the random generator's words. */
export type ElementType = DType | "int64" | "uint32";

const dataTypeOf: Record<ElementType, DataTypeCode> = {
  float32: DataType.FLOAT,
  int32: DataType.INT32,
  bool: DataType.BOOL,
  int64: DataType.INT64,
  uint32: DataType.UINT32,
};

/** An attribute value: a number is an int, `{ float }` a float, an array of numbers ints. */
export type AttributeValue = number | readonly number[] | string | { readonly float: number } | GraphProto;

function attribute(name: string, value: AttributeValue): AttributeProto {
  if (typeof value === "number") return { name, type: AttributeType.INT, i: value };
  if (typeof value === "string") return { name, type: AttributeType.STRING, s: new TextEncoder().encode(value) };
  if (Array.isArray(value)) return { name, type: AttributeType.INTS, ints: [...(value as number[])] };
  if ("float" in value) return { name, type: AttributeType.FLOAT, f: value.float };
  return { name, type: AttributeType.GRAPH, g: value as GraphProto };
}

/** Typed-array bytes as raw_data (little-endian, as ONNX stores it and as x86 and ARM hold it). */
function rawBytes(values: Float32Array | Int32Array | Uint32Array | BigInt64Array | Uint8Array): Uint8Array {
  return new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
}

function typedValues(type: ElementType, values: ArrayLike<number>): Float32Array | Int32Array | Uint32Array | BigInt64Array | Uint8Array {
  switch (type) {
    case "float32":
      return Float32Array.from(values);
    case "int32":
      return Int32Array.from(values);
    case "uint32":
      return Uint32Array.from(values);
    case "bool":
      return Uint8Array.from(values, (v) => (v !== 0 ? 1 : 0));
    case "int64":
      return BigInt64Array.from(Array.from(values, (v) => BigInt(v)));
  }
}

export function valueInfo(name: string, type: ElementType, shape: readonly number[]): ValueInfoProto {
  return { name, type: { tensor_type: { elem_type: dataTypeOf[type], shape: { dim: shape.map((d) => ({ dim_value: d })) } } } };
}

/** What every graph of one model shares: fresh names and the constants. */
export class ModelScope {
  private count = 0;
  readonly initializers: TensorProto[] = [];
  private readonly small = new Map<string, string>();

  fresh(prefix = "t"): string {
    return `${prefix}${this.count++}`;
  }

  /** A constant tensor, stored once per model; small ones (shapes, scalars) are shared by value. */
  constant(type: ElementType, shape: readonly number[], values: ArrayLike<number>): string {
    const key = values.length <= 16 ? `${type}[${shape.join(",")}]${Array.from(values).join(",")}` : undefined;
    const known = key === undefined ? undefined : this.small.get(key);
    if (known !== undefined) return known;
    const name = this.fresh("c");
    this.initializers.push({ name, dims: [...shape], data_type: dataTypeOf[type], raw_data: rawBytes(typedValues(type, values)) });
    if (key !== undefined) this.small.set(key, name);
    return name;
  }

  /** An int64 vector (shapes, axes, pads, indices). */
  ints(values: readonly number[]): string {
    return this.constant("int64", [values.length], values);
  }

  scalar(type: ElementType, value: number): string {
    return this.constant(type, [], [value]);
  }
}

/** Names used by a graph's nodes, including those its sub-graphs take from outer scopes. */
function usedNames(nodes: readonly NodeProto[], into: Set<string>): Set<string> {
  for (const node of nodes) {
    node.input.forEach((name) => into.add(name));
    for (const attr of node.attribute) if (attr.g !== undefined) usedNames(attr.g.node, into);
  }
  return into;
}

/**
 * A run-time check of a model: an int64 scalar output that must be 0; the session fails with
 * `fail(value)` otherwise (ONNX graphs cannot raise errors themselves).
 */
export interface OnnxCheck {
  readonly value: string;
  fail(count: number): Error;
}

/** One ONNX graph under construction: the main graph or a Loop body. */
export class OnnxGraph {
  /** The checks of this graph's values: only the main graph's reach the model's outputs. */
  readonly checks: OnnxCheck[] = [];
  private readonly nodes: NodeProto[] = [];
  private readonly produced = new Set<string>();
  /** Outputs of the nodes made so far, by op, inputs and attributes: the same node twice is made once. */
  private readonly made = new Map<string, string[]>();

  constructor(readonly model: ModelScope) {}

  /**
   * Adds a node (or finds the same one); returns its output names. An Identity makes no node:
   * its input is passed on. (onnxruntime 1.30's optimiser drops an Identity in mid-graph whose
   * output is a graph output and leaves later consumers of its input naming a value that no
   * longer exists; finish() adds the Identities outputs need, after every other node.)
   */
  op(type: string, inputs: readonly string[], attrs: Readonly<Record<string, AttributeValue>> = {}, outputs = 1): string[] {
    if (type === "Identity") return [inputs[0]!];
    return this.node(type, inputs, attrs, outputs);
  }

  /** `shared: false` makes a node even where the same one exists (an output's Identity, which must be new each time). */
  private node(type: string, inputs: readonly string[], attrs: Readonly<Record<string, AttributeValue>>, outputs: number, shared = true): string[] {
    // Nodes with a body (Loop) are never the same; every other op FedTensor emits is a pure function of its inputs.
    const key = !shared || Object.values(attrs).some((v) => typeof v === "object" && "node" in v) ? undefined : JSON.stringify([type, inputs, attrs, outputs]);
    const known = key === undefined ? undefined : this.made.get(key);
    if (known !== undefined) return known;
    const names = Array.from({ length: outputs }, () => this.model.fresh());
    const attributes = Object.entries(attrs).map(([name, value]) => attribute(name, value));
    this.nodes.push({ input: [...inputs], output: names, op_type: type, attribute: attributes });
    names.forEach((n) => this.produced.add(n));
    if (key !== undefined) this.made.set(key, names);
    return names;
  }

  /** A node with one output. */
  op1(type: string, inputs: readonly string[], attrs: Readonly<Record<string, AttributeValue>> = {}): string {
    return this.op(type, inputs, attrs)[0]!;
  }

  /**
   * The finished graph. An output must be a value this graph computes, once: inputs, outer
   * values, constants and repeats go through Identity. Nodes nothing uses are left out.
   */
  finish(name: string, inputs: readonly ValueInfoProto[], outputs: readonly { name: string; type: ElementType; shape: readonly number[] }[]): GraphProto {
    const seen = new Set<string>();
    const outputInfos = outputs.map((out) => {
      let value = out.name;
      // Not shared: a value output three times needs two Identities, not the same one twice.
      if (!this.produced.has(value) || seen.has(value)) value = this.node("Identity", [value], {}, 1, false)[0]!;
      seen.add(value);
      return valueInfo(value, out.type, out.shape);
    });
    const needed = new Set(outputInfos.map((o) => o.name));
    const kept: NodeProto[] = [];
    for (const node of [...this.nodes].reverse()) {
      if (!node.output.some((o) => needed.has(o))) continue;
      kept.push(node);
      usedNames([node], needed);
    }
    return { name, node: kept.reverse(), initializer: [], input: [...inputs], output: outputInfos };
  }
}
