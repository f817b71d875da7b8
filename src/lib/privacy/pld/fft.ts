/**
 * An in-place iterative radix-2 complex FFT on Float64Arrays, for the PLD accountant's
 * convolutions (pmf.ts). Written here rather than taken from npm: the accountant runs in the
 * browser bundle as well as in Node and needs only this one transform, whose accuracy it
 * relies on (twiddles are computed directly by cos/sin for each index, not by a recurrence
 * that accumulates error); test/privacy/pld.test.ts checks it against direct convolution.
 */
import { ftError } from "../../../errors/error.js";

/** Transforms (re, im) in place; `inverse` computes the unscaled inverse (divide by n after). */
export function fft(re: Float64Array, im: Float64Array, inverse = false): void {
  const n = re.length;
  if (n !== im.length || n === 0 || (n & (n - 1)) !== 0) throw ftError("FT305", { option: "fft length", why: `${n} given; a power of two with re and im alike` });
  // Bit-reversal permutation.
  for (let i = 1, j = 0; i < n; i++) {
    let bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) {
      const [r, m] = [re[i]!, im[i]!];
      re[i] = re[j]!;
      im[i] = im[j]!;
      re[j] = r;
      im[j] = m;
    }
  }
  const { cos, sin } = twiddles(n, inverse);
  for (let size = 2; size <= n; size <<= 1) {
    const half = size >> 1;
    const stride = n / size;
    for (let start = 0; start < n; start += size) {
      for (let k = 0; k < half; k++) {
        const wr = cos[k * stride]!;
        const wi = sin[k * stride]!;
        const a = start + k;
        const b = a + half;
        const tr = re[b]! * wr - im[b]! * wi;
        const ti = re[b]! * wi + im[b]! * wr;
        re[b] = re[a]! - tr;
        im[b] = im[a]! - ti;
        re[a] = re[a]! + tr;
        im[a] = im[a]! + ti;
      }
    }
  }
}

/** cos and sign * sin of 2 pi k / n, k < n / 2, kept for the last few sizes asked for. */
const twiddleCache = new Map<string, { cos: Float64Array; sin: Float64Array }>();
function twiddles(n: number, inverse: boolean): { cos: Float64Array; sin: Float64Array } {
  const key = `${n}:${inverse}`;
  let table = twiddleCache.get(key);
  if (table === undefined) {
    const sign = inverse ? 1 : -1;
    table = { cos: new Float64Array(n >> 1), sin: new Float64Array(n >> 1) };
    for (let k = 0; k < n >> 1; k++) {
      table.cos[k] = Math.cos((2 * Math.PI * k) / n);
      table.sin[k] = sign * Math.sin((2 * Math.PI * k) / n);
    }
    if (twiddleCache.size >= 8) twiddleCache.delete(twiddleCache.keys().next().value!);
    twiddleCache.set(key, table);
  }
  return table;
}

/** The smallest power of two >= n. */
export function nextPowerOfTwo(n: number): number {
  let size = 1;
  while (size < n) size *= 2;
  return size;
}
