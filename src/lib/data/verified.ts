/**
 * Data the library has already checked, so that a check at the boundary where data enters
 * (a data set loaded, a cohort batched from it) is not repeated every round: a round of 10
 * clients x 600 MNIST images holds 4.7 million pixels, and scanning them again each round
 * would cost a fifth of the round. Typed arrays are marked only by the code that made them
 * from checked data; tfjs tensors, which cannot change, are marked once checked.
 */
const verified = new WeakSet<object>();

export function markVerified(...values: readonly object[]): void {
  for (const value of values) verified.add(value);
}

export function isVerified(value: unknown): boolean {
  return typeof value === "object" && value !== null && verified.has(value);
}

/** The index of the first NaN or infinite value, or -1 when all are finite. */
export function firstNonFinite(data: ArrayLike<number>): number {
  // One multiply-add per value and no branch: x * 0 is NaN exactly for NaN and +-Infinity.
  let probe = 0;
  for (let i = 0; i < data.length; i++) probe += data[i]! * 0;
  if (probe === 0) return -1;
  for (let i = 0; i < data.length; i++) if (!Number.isFinite(data[i]!)) return i;
  return -1;
}
