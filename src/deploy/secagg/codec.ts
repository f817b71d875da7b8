/**
 * The small binary fields of the JSON messages (keys, nonces, sealed shares) are base64
 * strings (RFC 4648, padded), with no Buffer (browsers have none): a table to encode, atob
 * (browsers, Node 16+) to decode. The masked vector travels as raw bytes after its message's
 * JSON (messages.ts): little-endian uint32 words whatever the host's byte order.
 */

/** The length of the base64 text of n bytes. */
export const base64Length = (bytes: number): number => 4 * Math.ceil(bytes / 3);

const ALPHABET = new TextEncoder().encode("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/");
const PAD = 61; // "="
const ascii = new TextDecoder();

/**
 * RFC 4648 base64 with padding. Written out with a table into ASCII bytes and decoded once
 * (native), because btoa over a binary string costs several times more for a masked vector.
 */
export function toBase64(bytes: Uint8Array): string {
  const out = new Uint8Array(base64Length(bytes.length));
  let o = 0;
  let i = 0;
  for (; i + 2 < bytes.length; i += 3) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    out[o++] = ALPHABET[n >>> 18]!;
    out[o++] = ALPHABET[(n >>> 12) & 63]!;
    out[o++] = ALPHABET[(n >>> 6) & 63]!;
    out[o++] = ALPHABET[n & 63]!;
  }
  const rest = bytes.length - i;
  if (rest > 0) {
    const n = (bytes[i]! << 16) | (rest === 2 ? bytes[i + 1]! << 8 : 0);
    out[o++] = ALPHABET[n >>> 18]!;
    out[o++] = ALPHABET[(n >>> 12) & 63]!;
    out[o++] = rest === 2 ? ALPHABET[(n >>> 6) & 63]! : PAD;
    out[o++] = PAD;
  }
  return ascii.decode(out);
}

/** The bytes of a base64 text, or null when it is not base64. */
export function fromBase64(text: string): Uint8Array | null {
  let binary: string;
  try {
    binary = atob(text);
  } catch {
    return null;
  }
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}

const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/** Writes `words` into `out` at `offset` as little-endian uint32 words, whatever the host's byte order. */
export function writeWords(words: Uint32Array, out: Uint8Array, offset: number): void {
  if (LITTLE_ENDIAN) return out.set(new Uint8Array(words.buffer, words.byteOffset, words.byteLength), offset);
  const view = new DataView(out.buffer, out.byteOffset + offset, words.byteLength);
  for (let i = 0; i < words.length; i++) view.setUint32(4 * i, words[i]!, true);
}

/** The little-endian uint32 words of `bytes` (any alignment; its length a multiple of 4), copied. */
export function readWords(bytes: Uint8Array): Uint32Array {
  if (LITTLE_ENDIAN) {
    // Copied into a buffer of its own: a Node Buffer's slice() is a view into a shared pool, not a copy.
    const out = new Uint32Array(bytes.length >>> 2);
    new Uint8Array(out.buffer).set(bytes.subarray(0, out.byteLength));
    return out;
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Uint32Array(bytes.length >>> 2);
  for (let i = 0; i < out.length; i++) out[i] = view.getUint32(4 * i, true);
  return out;
}
