/**
 * The counter-based generator behind FedTensor's random numbers: Threefry-2x32 with 20 rounds
 * (Salmon et al. 2011, "Parallel random numbers: as easy as 1, 2, 3"; the generator of JAX),
 * in exact 32-bit arithmetic. This is the definition every backend must reproduce bit for
 * bit: the reference interpreter and the tfjs kernels call it, the ONNX lowering builds the
 * same rounds from uint32 Add, BitShift, BitwiseOr and BitwiseXor (src/lower/onnx/random.ts),
 * and the tests compare all of them with the Random123 known-answer vectors.
 *
 * Words are carried as int32 (the IR has no unsigned dtype): the same 32 bits, read signed.
 *
 * How keys and counters are used (src/front/random.ts builds on these two):
 * - threefryPairs: one block per (key, counter) pair, keys and counters broadcast numpy-style;
 *   foldIn(key, d) is the block of counter (d, 1).
 * - randomBits: `size` words per key; word i is word (i mod 2) of the block of counter
 *   (floor(i / 2), 0), so a draw of n words is a prefix of a draw of more, and no counter of
 *   randomBits is ever one of foldIn's.
 */

const ROTATIONS = [
  [13, 15, 26, 6],
  [17, 29, 16, 24],
] as const;
/** Threefry's key-schedule parity constant. */
const KS_PARITY = 0x1bd11bda;

const rotl = (x: number, r: number): number => (x << r) | (x >>> (32 - r));

/** One Threefry-2x32-20 block: the two output words (as int32) of key (k0, k1) and counter (x0, x1). */
export function threefry2x32(k0: number, k1: number, x0: number, x1: number): [number, number] {
  const ks = [k0 | 0, k1 | 0, (k0 ^ k1 ^ KS_PARITY) | 0];
  let a = (x0 + ks[0]!) | 0;
  let b = (x1 + ks[1]!) | 0;
  for (let group = 0; group < 5; group++) {
    for (const r of ROTATIONS[group % 2]!) {
      a = (a + b) | 0;
      b = rotl(b, r) ^ a;
    }
    // Key injection after every four rounds: ks[(g+1) % 3] and ks[(g+2) % 3] + g + 1.
    a = (a + ks[(group + 1) % 3]!) | 0;
    b = (b + ks[(group + 2) % 3]! + group + 1) | 0;
  }
  return [a, b];
}

export interface WordTensor {
  readonly shape: readonly number[];
  readonly data: Int32Array;
}

const size = (shape: readonly number[]): number => shape.reduce((n, d) => n * d, 1);

/** Flat position in a tensor of `shape` (aligned right, size-1 dims broadcast) of each flat index of `out`. */
function broadcastPositions(shape: readonly number[], out: readonly number[]): Int32Array {
  const positions = new Int32Array(size(out));
  const offset = out.length - shape.length;
  const strides = shape.map((_, axis) => size(shape.slice(axis + 1)));
  for (let flat = 0; flat < positions.length; flat++) {
    let rest = flat;
    let position = 0;
    for (let axis = out.length - 1; axis >= 0; axis--) {
      const index = rest % out[axis]!;
      rest = Math.floor(rest / out[axis]!);
      const own = axis - offset;
      if (own >= 0 && shape[own] !== 1) position += index * strides[own]!;
    }
    positions[flat] = position;
  }
  return positions;
}

/**
 * Blocks of keys [...K, 2] and counters [...M, 2], K and M broadcast together to B (the
 * caller has checked they can): [...B, 2].
 */
export function threefryPairs(key: WordTensor, counter: WordTensor, lead: readonly number[]): WordTensor {
  const keyAt = broadcastPositions(key.shape.slice(0, -1), lead);
  const counterAt = broadcastPositions(counter.shape.slice(0, -1), lead);
  const data = new Int32Array(keyAt.length * 2);
  for (let i = 0; i < keyAt.length; i++) {
    const k = 2 * keyAt[i]!;
    const c = 2 * counterAt[i]!;
    const [y0, y1] = threefry2x32(key.data[k]!, key.data[k + 1]!, counter.data[c]!, counter.data[c + 1]!);
    data[2 * i] = y0;
    data[2 * i + 1] = y1;
  }
  return { shape: [...lead, 2], data };
}

/** `words` random words for each key of keys [...K, 2]: [...K, words] flattened. */
export function randomBits(keys: Int32Array, words: number): Int32Array {
  const count = keys.length / 2;
  const out = new Int32Array(count * words);
  for (let k = 0; k < count; k++) {
    const [k0, k1] = [keys[2 * k]!, keys[2 * k + 1]!];
    for (let block = 0; 2 * block < words; block++) {
      const [y0, y1] = threefry2x32(k0, k1, block, 0);
      out[k * words + 2 * block] = y0;
      if (2 * block + 1 < words) out[k * words + 2 * block + 1] = y1;
    }
  }
  return out;
}

/**
 * A uniform float32 in [min, max) from a word: its top 23 bits m give u = m 2^-23 in [0, 1)
 * exactly (as JAX's uniform), then u (max - min) + min with float32 rounding after each
 * operation (none for [0, 1)). The ONNX lowering computes the same two float32 operations.
 */
export function uniformFromWord(word: number, min: number, max: number): number {
  const u = (word >>> 9) * 2 ** -23;
  if (min === 0 && max === 1) return u;
  return Math.fround(Math.fround(u * Math.fround(max - min)) + Math.fround(min));
}
