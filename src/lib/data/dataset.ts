/**
 * A labelled dataset held once in memory: features of every example in one flat array and
 * an int32 label per example. Federated views (partitions, cohorts, batches) refer to its
 * examples by index instead of copying them.
 */
import { ftError } from "../../errors/error.js";
import { elementCount, type HostData } from "./host-tensor.js";
import { firstNonFinite } from "./verified.js";

/**
 * A labelled data set in host memory: the features row-major, int32 labels, one example's feature
 * shape and the number of classes.
 *
 * @example
 * const train: LabelledDataset<Float32Array> = loadMnist("train");
 * console.log(train.featureShape, train.numClasses, train.y.length); // [784] 10 60000
 */
export interface LabelledDataset<X extends HostData = HostData> {
  /** Features, row-major [size, ...featureShape]: float32 pixels, or int32 token ids. */
  readonly x: X;
  /** Labels in [0, numClasses). */
  readonly y: Int32Array;
  readonly featureShape: readonly number[];
  readonly numClasses: number;
}

/**
 * Checks that features, labels and shapes agree; throws FT302 naming `what` otherwise.
 *
 * @example
 * import { labelledDataset } from "fedtensor/lib";
 * const xor = labelledDataset("xor", { x: Float32Array.of(0, 0, 0, 1, 1, 0, 1, 1), y: Int32Array.of(0, 1, 1, 0), featureShape: [2], numClasses: 2 });
 */
export function labelledDataset<X extends HostData>(
  what: string,
  parts: { x: X; y: Int32Array; featureShape: readonly number[]; numClasses: number },
): LabelledDataset<X> {
  const { x, y, featureShape, numClasses } = parts;
  const featureSize = elementCount(featureShape);
  if (!featureShape.every((dim) => Number.isInteger(dim) && dim > 0)) {
    throw ftError("FT302", { what, why: `feature shape [${featureShape.join(", ")}] needs positive integer dims` });
  }
  if (x.length !== y.length * featureSize) {
    throw ftError("FT302", {
      what,
      why: `${y.length} labels need ${y.length * featureSize} feature values, got ${x.length}`,
    });
  }
  for (let i = 0; i < y.length; i++) {
    const label = y[i]!;
    if (!(label >= 0 && label < numClasses)) {
      throw ftError("FT302", { what, why: `label ${label} of example ${i} is outside [0, ${numClasses})` });
    }
  }
  const bad = x instanceof Float32Array ? firstNonFinite(x) : -1;
  if (bad >= 0) {
    throw ftError("FT302", { what, why: `feature value ${x[bad]} of example ${Math.floor(bad / featureSize)} is not finite; training needs finite values` });
  }
  return { x, y, featureShape: [...featureShape], numClasses };
}

