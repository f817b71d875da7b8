/**
 * Tensors on the wire (a round's shared inputs, a client's partial accumulator): one binary
 * record, exact to the bit, with no dependency on TensorFlow.js or Node, so the browser page
 * reads and writes the same bytes as the Node client.
 *
 * Layout: a 4-byte little-endian header length, the header (UTF-8 JSON: per entry its name and
 * either a number or a tensor's dtype and shape), then each tensor's bytes in header order
 * (float32 and int32 little-endian, one byte per bool). The header is parsed with zod: a
 * malformed record is refused here, never half-read.
 */
import { z } from "zod";

export type RecordDtype = "float32" | "int32" | "bool";
export type RecordData = Float32Array | Int32Array | Uint8Array;
/** A tensor on the host: its dtype, shape and values. */
export interface RecordTensor {
  readonly dtype: RecordDtype;
  readonly shape: readonly number[];
  readonly data: RecordData;
}
export type RecordValue = RecordTensor | number;

/** At most this many dims and entries: a header that claims more is malformed, not large. */
const MAX_RANK = 8;
const MAX_ENTRIES = 4096;

const entrySchema = z.union([
  z.strictObject({ name: z.string().min(1).max(200), number: z.number() }),
  z.strictObject({
    name: z.string().min(1).max(200),
    dtype: z.enum(["float32", "int32", "bool"]),
    shape: z.array(z.number().int().min(0).max(2 ** 31 - 1)).max(MAX_RANK),
  }),
]);
const headerSchema = z.array(entrySchema).max(MAX_ENTRIES);

const elementBytes: Readonly<Record<RecordDtype, number>> = { float32: 4, int32: 4, bool: 1 };

export const dtypeOf = (data: RecordData): RecordDtype => (data instanceof Float32Array ? "float32" : data instanceof Int32Array ? "int32" : "bool");

/** `values` as one record. */
export function encodeRecord(values: ReadonlyMap<string, RecordValue>): Uint8Array {
  const entries = [...values].map(([name, value]) => (typeof value === "number" ? { name, number: value } : { name, dtype: value.dtype, shape: [...value.shape] }));
  const header = new TextEncoder().encode(JSON.stringify(entries));
  const tensors = [...values.values()].filter((v): v is RecordTensor => typeof v !== "number");
  const size = 4 + header.length + tensors.reduce((n, t) => n + t.data.byteLength, 0);
  const out = new Uint8Array(size);
  new DataView(out.buffer).setUint32(0, header.length, true);
  out.set(header, 4);
  let offset = 4 + header.length;
  for (const t of tensors) {
    out.set(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength), offset);
    offset += t.data.byteLength;
  }
  return out;
}

/** A record's values by name; throws RecordError when the bytes are not exactly one well-formed record. */
export function decodeRecord(bytes: Uint8Array): Map<string, RecordValue> {
  if (bytes.length < 4) throw new RecordError(`a record of ${bytes.length} bytes has no header`);
  const headerEnd = 4 + new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(0, true);
  if (headerEnd > bytes.length) throw new RecordError(`a record of ${bytes.length} bytes is shorter than its header`);
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes.subarray(4, headerEnd)));
  } catch {
    throw new RecordError("the record's header is not UTF-8 JSON");
  }
  const parsed = headerSchema.safeParse(json);
  if (!parsed.success) throw new RecordError(`the record's header is malformed: ${z.prettifyError(parsed.error).split("\n")[0]}`);
  const values = new Map<string, RecordValue>();
  let offset = headerEnd;
  for (const entry of parsed.data) {
    if (values.has(entry.name)) throw new RecordError(`the record names ${entry.name} twice`);
    if ("number" in entry) {
      values.set(entry.name, entry.number);
      continue;
    }
    const count = entry.shape.reduce((n, d) => n * d, 1);
    const size = count * elementBytes[entry.dtype];
    if (!Number.isSafeInteger(size) || offset + size > bytes.length) throw new RecordError(`the record ends inside ${entry.name}`);
    // Copied out (a Node Buffer's slice would share its pool): the bytes may sit at an offset that a Float32Array cannot view.
    const copy = new Uint8Array(bytes.subarray(offset, offset + size)).buffer;
    offset += size;
    const data = entry.dtype === "float32" ? new Float32Array(copy) : entry.dtype === "int32" ? new Int32Array(copy) : new Uint8Array(copy);
    values.set(entry.name, { dtype: entry.dtype, shape: entry.shape, data });
  }
  if (offset !== bytes.length) throw new RecordError(`the record has ${bytes.length - offset} bytes after its values`);
  return values;
}

/** A record that is not one: the receiver refuses the message that carried it. */
export class RecordError extends Error {}
