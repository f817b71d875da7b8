/**
 * Tensors as they cross Redis: shape, dtype and the raw little-endian bytes in base64 (BullMQ
 * keeps job data and return values as JSON). Exact: a float32 arrives with the same bits.
 */
import * as tf from "@tensorflow/tfjs";

export interface WireTensor {
  readonly shape: readonly number[];
  readonly dtype: "float32" | "int32" | "bool";
  /** The elements' bytes (float32, int32, or one byte per bool), base64. */
  readonly bytes: string;
}

/** A part's input or output: a tensor, or a plain number (a learning rate given as a JS number). */
export type WireValue = WireTensor | number;

type HostLike = { readonly shape: readonly number[]; readonly data: Float32Array | Int32Array | Uint8Array };

const isHost = (x: unknown): x is HostLike =>
  typeof x === "object" && x !== null && "shape" in x && "data" in x && ArrayBuffer.isView((x as HostLike).data);

const base64 = (a: ArrayBufferView) => Buffer.from(a.buffer, a.byteOffset, a.byteLength).toString("base64");

function wireDtype(dtype: string): WireTensor["dtype"] {
  if (dtype === "float32" || dtype === "int32" || dtype === "bool") return dtype;
  throw new TypeError(`a ${dtype} tensor cannot be sent to a worker`);
}

export async function toWire(value: unknown): Promise<WireValue> {
  if (typeof value === "number") return value;
  if (value instanceof tf.Tensor) {
    const data = await value.data();
    const bytes = value.dtype === "bool" ? Uint8Array.from(data as Uint8Array) : (data as Float32Array | Int32Array);
    return { shape: value.shape, dtype: wireDtype(value.dtype), bytes: base64(bytes) };
  }
  if (isHost(value)) {
    const dtype = value.data instanceof Float32Array ? "float32" : value.data instanceof Int32Array ? "int32" : "bool";
    return { shape: value.shape, dtype, bytes: base64(value.data) };
  }
  throw new TypeError(`cannot send ${Object.prototype.toString.call(value)} to a worker`);
}

/** A wire value as host data (the shape and a typed array, which programs take as inputs); numbers stay numbers. */
export function fromWireHost(value: WireValue): HostLike | number {
  if (typeof value === "number") return value;
  const buffer = Buffer.from(value.bytes, "base64");
  // Copied out: a Buffer's bytes may sit at an offset that a Float32Array cannot view.
  const bytes = buffer.buffer.slice(buffer.byteOffset, buffer.byteOffset + buffer.byteLength);
  const data = value.dtype === "float32" ? new Float32Array(bytes) : value.dtype === "int32" ? new Int32Array(bytes) : new Uint8Array(bytes);
  return { shape: value.shape, data };
}

/** A wire tensor as a tensor on the current backend. */
export function fromWire(value: WireTensor): tf.Tensor {
  const { shape, data } = fromWireHost(value) as HostLike;
  return tf.tensor(data, [...shape], value.dtype);
}

export async function recordToWire(values: ReadonlyMap<string, unknown>): Promise<Record<string, WireValue>> {
  const out: Record<string, WireValue> = {};
  for (const [name, value] of values) out[name] = await toWire(value);
  return out;
}
