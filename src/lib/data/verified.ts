/**
 * The finiteness scan every data check uses. Nothing is remembered as "checked": a typed array
 * can be written by whoever holds it (a data set, a cohort's batches), and a tfjs tensor's
 * storage is handed out too (on the cpu backend `dataSync()` returns the tensor's own array, and
 * webgl/webgpu return their CPU copy the same way), so a mark would outlive an edit. A program
 * scans its data each time it is given it instead: one multiply-add per value, 36 ms for all
 * 47 million pixels of MNIST's 60,000 training images (0.3 ms for their labels) on one core of
 * a loaded machine (bench/check-cost.ts), so about 4 ms for a round of 10 clients x 600 images,
 * well under that round's training; a digest to detect edits would cost the same pass.
 */

/** The index of the first NaN or infinite value, or -1 when all are finite. */
export function firstNonFinite(data: ArrayLike<number>): number {
  // One multiply-add per value and no branch: x * 0 is NaN exactly for NaN and +-Infinity.
  let probe = 0;
  for (let i = 0; i < data.length; i++) probe += data[i]! * 0;
  if (probe === 0) return -1;
  for (let i = 0; i < data.length; i++) if (!Number.isFinite(data[i]!)) return i;
  return -1;
}
