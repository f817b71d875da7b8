/**
 * One wire frame: a 4-byte little-endian header length, the UTF-8 JSON header, the body.
 * Parsing checks the size limits before anything is decoded, then the header's schema.
 */
import { z } from "zod";
import { MAX_HEADER_BYTES, WIRE_VERSION } from "./messages.js";

export interface Frame<H> {
  readonly header: H;
  readonly body: Uint8Array;
}

/** A frame that is not one of the protocol's: refused with this reason, the connection kept or closed by the receiver. */
export class FrameError extends Error {}

export function encodeFrame(header: object, body: Uint8Array = new Uint8Array(0)): Uint8Array {
  const json = new TextEncoder().encode(JSON.stringify(header));
  const out = new Uint8Array(4 + json.length + body.length);
  new DataView(out.buffer).setUint32(0, json.length, true);
  out.set(json, 4);
  out.set(body, 4 + json.length);
  return out;
}

/**
 * The frame's header, checked against `schema`, and its body, checked against the limit its
 * type allows (`maxBody`, by message type; 0 when absent).
 */
export function decodeFrame<S extends z.ZodType<{ type: string }>>(bytes: Uint8Array, schema: S, maxBody: Readonly<Record<string, number>>, maxFrame: number): Frame<z.infer<S>> {
  if (bytes.length > maxFrame) throw new FrameError(`a message of ${bytes.length} bytes exceeds the limit of ${maxFrame}`);
  if (bytes.length < 4) throw new FrameError(`a message of ${bytes.length} bytes has no header`);
  const headerLength = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(0, true);
  if (headerLength > MAX_HEADER_BYTES) throw new FrameError(`a header of ${headerLength} bytes exceeds the limit of ${MAX_HEADER_BYTES}`);
  if (4 + headerLength > bytes.length) throw new FrameError("the message is shorter than its header");
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes.subarray(4, 4 + headerLength)));
  } catch {
    throw new FrameError("the header is not UTF-8 JSON");
  }
  const version = (json as { v?: unknown } | null)?.v;
  if (version !== WIRE_VERSION) throw new FrameError(`wire version ${JSON.stringify(version)} where this peer speaks ${WIRE_VERSION}`);
  const parsed = schema.safeParse(json);
  if (!parsed.success) throw new FrameError(`malformed header: ${z.prettifyError(parsed.error).replace(/\n/g, " ").slice(0, 300)}`);
  const body = bytes.subarray(4 + headerLength);
  const limit = maxBody[parsed.data.type] ?? 0;
  if (body.length > limit) throw new FrameError(`a ${parsed.data.type} body of ${body.length} bytes exceeds the limit of ${limit}`);
  return { header: parsed.data, body };
}
