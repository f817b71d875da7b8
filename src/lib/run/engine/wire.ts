/**
 * Values as they cross Redis (a round's shared inputs, a chunk's partial accumulator): one
 * binary record per key, so a tensor's bytes travel as they are rather than as base64 JSON,
 * a third larger. Exact: a float32 arrives with the same bits.
 *
 * Layout: a 4-byte little-endian header length, the header (JSON: per entry its name and
 * either a number or a tensor's shape and dtype), then each tensor's bytes in header order
 * (float32 and int32 little-endian, one byte per bool).
 */
import * as tf from "@tensorflow/tfjs";

type WireDtype = "float32" | "int32" | "bool";

type HeaderEntry = { readonly name: string; readonly number: number } | { readonly name: string; readonly shape: readonly number[]; readonly dtype: WireDtype };

/** A value on the host: a plain number (a learning rate given as a JS number), or a shape and typed array, which programs take as inputs. */
export type HostLike = { readonly shape: readonly number[]; readonly data: Float32Array | Int32Array | Uint8Array };

const isHost = (x: unknown): x is HostLike =>
  typeof x === "object" && x !== null && "shape" in x && "data" in x && ArrayBuffer.isView((x as HostLike).data);

function wireDtype(dtype: string): WireDtype {
  if (dtype === "float32" || dtype === "int32" || dtype === "bool") return dtype;
  throw new TypeError(`a ${dtype} tensor cannot be sent to a worker`);
}

const bytesOf = (a: ArrayBufferView) => Buffer.from(a.buffer, a.byteOffset, a.byteLength);

/** One value's header entry and bytes. */
async function encodeValue(name: string, value: unknown): Promise<{ entry: HeaderEntry; bytes?: Buffer }> {
  if (typeof value === "number") return { entry: { name, number: value } };
  if (value instanceof tf.Tensor) {
    const data = await value.data();
    const typed = value.dtype === "bool" ? Uint8Array.from(data as Uint8Array) : (data as Float32Array | Int32Array);
    return { entry: { name, shape: value.shape, dtype: wireDtype(value.dtype) }, bytes: bytesOf(typed) };
  }
  if (isHost(value)) {
    const dtype = value.data instanceof Float32Array ? "float32" : value.data instanceof Int32Array ? "int32" : "bool";
    return { entry: { name, shape: value.shape, dtype }, bytes: bytesOf(value.data) };
  }
  throw new TypeError(`cannot send ${Object.prototype.toString.call(value)} to a worker`);
}

/** `values` (tensors, host tensors, numbers) as one binary record. */
export async function encodeRecord(values: ReadonlyMap<string, unknown>): Promise<Buffer> {
  const encoded = await Promise.all([...values].map(([name, value]) => encodeValue(name, value)));
  const header = Buffer.from(JSON.stringify(encoded.map((e) => e.entry)), "utf8");
  const length = Buffer.alloc(4);
  length.writeUInt32LE(header.length);
  return Buffer.concat([length, header, ...encoded.flatMap((e) => (e.bytes === undefined ? [] : [e.bytes]))]);
}

const elementBytes: Readonly<Record<WireDtype, number>> = { float32: 4, int32: 4, bool: 1 };

/** A binary record's values on the host, by name; TypeError when the bytes are not a whole record. */
export function decodeRecord(record: Buffer): Map<string, HostLike | number> {
  if (record.length < 4) throw new TypeError(`a record of ${record.length} bytes has no header`);
  const headerEnd = 4 + record.readUInt32LE(0);
  if (headerEnd > record.length) throw new TypeError(`a record of ${record.length} bytes is shorter than its header`);
  const entries = JSON.parse(record.subarray(4, headerEnd).toString("utf8")) as HeaderEntry[];
  const values = new Map<string, HostLike | number>();
  let offset = headerEnd;
  for (const entry of entries) {
    if ("number" in entry) {
      values.set(entry.name, entry.number);
      continue;
    }
    const size = entry.shape.reduce((n, d) => n * d, 1) * elementBytes[entry.dtype];
    if (offset + size > record.length) throw new TypeError(`a record of ${record.length} bytes ends inside ${entry.name}`);
    // Copied out: a Buffer's bytes may sit at an offset that a Float32Array cannot view.
    const bytes = record.buffer.slice(record.byteOffset + offset, record.byteOffset + offset + size);
    offset += size;
    const data = entry.dtype === "float32" ? new Float32Array(bytes) : entry.dtype === "int32" ? new Int32Array(bytes) : new Uint8Array(bytes);
    values.set(entry.name, { shape: entry.shape, data });
  }
  if (offset !== record.length) throw new TypeError(`a record of ${record.length} bytes has ${record.length - offset} bytes after its values`);
  return values;
}

/** A host value as a tensor on the current backend. */
export function toTensor(value: HostLike | number): tf.Tensor {
  if (typeof value === "number") return tf.scalar(value);
  const dtype = value.data instanceof Float32Array ? "float32" : value.data instanceof Int32Array ? "int32" : "bool";
  return tf.tensor(value.data, [...value.shape], dtype);
}
