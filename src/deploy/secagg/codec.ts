/**
 * Binary fields on the wire are base64 strings (RFC 4648, padded), with no Buffer (browsers
 * have none): a table to encode, atob (browsers, Node 16+) to decode. The masked vector is
 * little-endian uint32 words whatever the host's byte order.
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

export function wordsToBase64(words: Uint32Array): string {
  if (LITTLE_ENDIAN) return toBase64(new Uint8Array(words.buffer, words.byteOffset, words.byteLength));
  const bytes = new Uint8Array(words.length * 4);
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < words.length; i++) view.setUint32(4 * i, words[i]!, true);
  return toBase64(bytes);
}

/** The words of a base64 text of exactly `length` little-endian uint32 words, or null. */
export function wordsFromBase64(text: string, length: number): Uint32Array | null {
  if (text.length !== base64Length(4 * length)) return null;
  const bytes = fromBase64(text);
  if (bytes === null || bytes.length !== 4 * length) return null;
  const view = new DataView(bytes.buffer);
  const out = new Uint32Array(length);
  for (let i = 0; i < length; i++) out[i] = view.getUint32(4 * i, true);
  return out;
}
