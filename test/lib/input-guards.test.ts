/**
 * The library guards what the CLI guards (FT302): what a program or the algorithm library is
 * given is checked where it enters, so a mistake in the data is an error rather than a
 * silently wrong result.
 */
import * as tf from "@tensorflow/tfjs";
import { describe, expect, test } from "vitest";
import { FedTensorError, atClients, f32, i32, map, program, reduceSum, sum } from "../../src/index.js";
import { evaluationProgram } from "../../src/lib/algorithms/evaluation.js";
import { fedAvgProgram } from "../../src/lib/algorithms/fedavg.js";
import { batchClients, clientsFrom, padClients } from "../../src/lib/data/clients.js";
import { labelledDataset } from "../../src/lib/data/dataset.js";
import { partitionIid } from "../../src/lib/data/partition.js";
import { batchCohort, federate } from "../../src/lib/data/federated.js";
import { Rng } from "../../src/lib/random.js";
import { batchInputs, separableCohort, tiny } from "./helpers.js";

async function failure(run: () => Promise<unknown>): Promise<string> {
  const error = await run().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(FedTensorError);
  return (error as FedTensorError).message;
}

const cohort = separableCohort([6, 3], 2);
const params = tiny.init(Rng.fromSeed(0));
const fedavg = fedAvgProgram(tiny);
const round = (batches: Record<string, unknown>) => () => fedavg.run({ params, ...batchInputs(cohort), ...batches, lr: 0.1 } as never);

describe("the algorithm library's round inputs", () => {
  test("a label outside the model's classes is FT302, not a loss of 0", async () => {
    const y = Int32Array.from(cohort.y.data);
    y[3] = 2;
    expect(await failure(round({ y: { shape: cohort.y.shape, data: y } }))).toBe(
      "FT302: fedavg_tiny input y: label 2 at flat index 3 is outside model tiny's classes [0, 2)",
    );
    y[3] = -1;
    expect(await failure(round({ y: tf.tensor(y, cohort.y.shape, "int32") }))).toMatch(/label -1 at flat index 3/);
  });

  test("NaN or Infinity in the features is FT302", async () => {
    const x = Float32Array.from(cohort.x.data);
    x[5] = Number.NaN;
    expect(await failure(round({ x: { shape: cohort.x.shape, data: x } }))).toBe(
      "FT302: fedavg_tiny input x: value NaN at flat index 5 is not finite; training needs finite values",
    );
    x[5] = Number.POSITIVE_INFINITY;
    expect(await failure(round({ x: tf.tensor(x, cohort.x.shape) }))).toMatch(/value Infinity at flat index 5 is not finite/);
  });

  test("a negative or non-finite count is FT302; all counts zero is FT310", async () => {
    expect(await failure(round({ count: { shape: [2], data: Float32Array.from([6, -3]) } }))).toBe(
      "FT302: fedavg_tiny input count: client 1's count -3 is not a count (finite and >= 0)",
    );
    expect(await failure(round({ count: { shape: [2], data: new Float32Array(2) } }))).toMatch(/^FT310: fedavg_tiny input count: all 2 clients have count 0/);
  });

  test("evaluation checks its labels and features too", async () => {
    const evaluate = evaluationProgram(tiny);
    const y = { shape: [1, 2], data: Int32Array.from([0, 5]) };
    const message = await failure(() => evaluate.run({ params, x: { shape: [1, 2, 2], data: new Float32Array(4) }, y, mask: { shape: [1, 2], data: new Float32Array(2) } } as never));
    expect(message).toBe("FT302: evaluate_tiny input y: label 5 at flat index 1 is outside model tiny's classes [0, 2)");
  });

  test("a data set's features are checked where it is made, and its batches again each time, so an edit in place cannot slip by", async () => {
    const x = Float32Array.from([0, 1, 2, Number.NaN]);
    expect(() => labelledDataset("toy", { x, y: Int32Array.from([0, 1]), featureShape: [2], numClasses: 2 })).toThrow(
      "FT302: toy: feature value NaN of example 1 is not finite; training needs finite values",
    );
    const set = labelledDataset("toy", { x: Float32Array.from([0, 1, 2, 3]), y: Int32Array.from([0, 1]), featureShape: [2], numClasses: 2 });
    const batches = batchCohort(federate(set, set, partitionIid(2, 2, Rng.fromSeed(0))), [0, 1], { batchSize: 1, rng: Rng.fromSeed(0) });
    const inputs = { params, lr: 0.1, x: batches.x, y: batches.y, mask: batches.mask, count: batches.count };
    await fedavg.run(inputs as never);
    // Written after the library made and checked them: each is caught, not trained on.
    batches.y.data[1] = 7;
    expect(await failure(() => fedavg.run(inputs as never))).toMatch(/input y: label 7 at flat index 1 is outside model tiny's classes \[0, 2\)/);
    batches.y.data[1] = 1;
    batches.x.data[0] = Number.NaN;
    expect(await failure(() => fedavg.run(inputs as never))).toMatch(/input x: value NaN at flat index 0 is not finite/);
  });
});

describe("data edited after the library checked it (issue 34)", () => {
  // Two clients of 2-feature examples, labels 0 and 1: clientsFrom checks them once.
  const data = clientsFrom(
    [
      { x: [[0, 1], [1, 0], [2, 2]], y: [0, 1, 0] },
      { x: [[1, 1], [0, 2]], y: [1, 1] },
    ],
    { dtypes: { y: "int32" } },
  );
  const inputsOf = (cohort: { x: unknown; y: unknown; mask: unknown; count: unknown }) => ({ params, lr: 0.1, x: cohort.x, y: cohort.y, mask: cohort.mask, count: cohort.count });

  test("NaN written into batchClients' batches after a run is FT302, not a model of NaN", async () => {
    const batches = batchClients(data, [0, 1], { batchSize: 2, rng: Rng.fromSeed(1) });
    const inputs = inputsOf(batches);
    await fedavg.run(inputs as never);
    batches.x.data[0] = Number.NaN;
    expect(await failure(() => fedavg.run(inputs as never))).toMatch(/^FT302: fedavg_tiny input x: value NaN at flat index 0 is not finite/);
  });

  test("NaN written into padClients' tensors before the first run is FT302", async () => {
    const padded = padClients(data);
    padded.x.data[3] = Number.NaN;
    expect(await failure(() => fedavg.run(inputsOf({ ...padded, x: { shape: [2, 1, 3, 2], data: padded.x.data }, y: { shape: [2, 1, 3], data: padded.y.data }, mask: { shape: [2, 1, 3], data: padded.mask.data } }) as never))).toMatch(
      /input x: value NaN at flat index 3 is not finite/,
    );
  });

  test("an edit of the data clientsFrom checked reaches the batches and is FT302 there", async () => {
    const own = clientsFrom([{ x: [[0, 1], [1, 0]], y: [0, 1] }], { dtypes: { y: "int32" } });
    own.fields.y.data[1] = 7;
    const batches = batchClients(own, [0], { batchSize: 2, rng: Rng.fromSeed(2) });
    expect(await failure(() => fedavg.run(inputsOf(batches) as never))).toMatch(/input y: label 7 at flat index \d is outside model tiny's classes \[0, 2\)/);
  });

  test("a tensor checked once and then written through dataSync() (the cpu backend's own storage) is FT302", async () => {
    expect(tf.getBackend()).toBe("cpu");
    const batches = batchClients(data, [0, 1], { batchSize: 2, rng: Rng.fromSeed(1) });
    const x = tf.tensor(batches.x.data, batches.x.shape);
    const y = tf.tensor(batches.y.data, batches.y.shape, "int32");
    const inputs = { ...inputsOf(batches), x, y };
    await fedavg.run(inputs as never);
    const storage = x.dataSync() as Float32Array;
    storage[1] = Number.NaN;
    expect(x.dataSync()[1]).toBeNaN(); // the same storage: the edit is the tensor's
    expect(await failure(() => fedavg.run(inputs as never))).toMatch(/input x: value NaN at flat index 1 is not finite/);
    storage[1] = 0;
    (y.dataSync() as Int32Array)[0] = 7;
    expect(await failure(() => fedavg.run(inputs as never))).toMatch(/input y: label 7 at flat index 0 is outside model tiny's classes/);
    tf.dispose([x, y]);
  });
});

describe("a program's inputs", () => {
  const labels = program({ y: atClients(i32(["B"])) }, ({ y }) => reduceSum(map((m) => sum(m), y)));
  const values = program({ x: atClients(f32([2])) }, ({ x }) => reduceSum(x));

  test("a non-integer for an i32 input is FT302, not truncated", async () => {
    expect(await failure(() => labels.run({ y: { shape: [1, 2], data: Float32Array.from([1, 2.5]) } }))).toBe(
      "FT302: input y: value 2.5 at flat index 1 is not a 32-bit integer, where int32 is declared",
    );
    expect(await failure(() => labels.run({ y: [[1, 0.5]] }))).toMatch(/value 0.5 at flat index 1 is not a 32-bit integer/);
    const ok = await labels.run({ y: { shape: [1, 2], data: Float32Array.from([1, 2]) } });
    expect(ok.dataSync()[0]).toBe(3);
    ok.dispose();
  });

  test("a negative or fractional shape is FT302", async () => {
    expect(await failure(() => values.run({ x: { shape: [-1, 2], data: new Float32Array(0) } }))).toBe(
      "FT302: input x: shape [-1,2] is not a list of sizes (integers >= 0)",
    );
    expect(await failure(() => values.run({ x: { shape: [1.5, 2], data: new Float32Array(3) } }))).toMatch(/shape \[1.5,2\] is not a list of sizes/);
  });

  test("a host tensor whose data is null or a string is FT302", async () => {
    expect(await failure(() => values.run({ x: { shape: [1, 2], data: null } } as never))).toBe(
      "FT302: input x: data is null, not a typed array or an array of numbers",
    );
    expect(await failure(() => values.run({ x: { shape: [1, 2], data: "12" } } as never))).toBe(
      "FT302: input x: data is string, not a typed array or an array of numbers",
    );
    expect(await failure(() => values.run({ x: { shape: [1, 2], data: [1, "2"] } } as never))).toMatch(/data is an array, not a typed array or an array of numbers/);
  });
});
