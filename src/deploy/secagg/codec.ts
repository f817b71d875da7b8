/**
 * Binary fields on the wire are base64 strings (RFC 4648, padded). atob/btoa exist in browsers
 * and in Node 16+, so this needs no Buffer; the masked vector is little-endian uint32 words
 * whatever the host's byte order.
 */

/** The length of the base64 text of n bytes. */
export const base64Length = (bytes: number): number => 4 * Math.ceil(bytes / 3);

const CHUNK = 0x8000;

export function toBase64(bytes: Uint8Array): string {
  let binary = "";
  for (let at = 0; at < bytes.length; at += CHUNK) {
    binary += String.fromCharCode(...bytes.subarray(at, at + CHUNK));
  }
  return btoa(binary);
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

export function wordsToBase64(words: Uint32Array): string {
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
