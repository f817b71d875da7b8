/**
 * Classification metrics and federated evaluation against values computed by hand in float64:
 * per-client accuracy and loss of a small softmax regression, top-k by rank (top-1 is accuracy,
 * even when every logit ties), confusion matrices that sum to the examples, federated sums that
 * equal the central evaluation of the pooled examples, and personalization's fine-tuning step;
 * and the same values on onnx, tfjs wasm and cpu as from the float64 reference interpreter.
 */
import { describe, expect, test } from "vitest";
import { add, f32, matmul } from "../../src/index.js";
import { classificationEvaluationProgram } from "../../src/lib/algorithms/classification.js";
import { evaluationProgram } from "../../src/lib/algorithms/evaluation.js";
import { federatedEvaluationProgram, personalizationProgram } from "../../src/lib/algorithms/federated-evaluation.js";
import { defineModel } from "../../src/lib/models/model.js";
import { interpret } from "../../src/interpret/reference.js";
import { differences, toHost } from "../differential/compare.js";
import { characterModel } from "../../src/lib/models/character.js";
import { Rng } from "../../src/lib/random.js";
import { host, read } from "./helpers.js";

const specs = { w: f32([2, 3]), b: f32([3]) };
/** Softmax regression on 2 features and 3 classes. */
const three = defineModel<typeof specs, [2], 3>({
  name: "three",
  params: specs,
  inputShape: [2],
  classes: 3,
  logits: (p, x) => add(matmul(x, p.w), p.b),
  init: () => ({ w: host([2, 3], [0, 0, 0, 0, 0, 0]), b: host([3], [0, 0, 0]) }),
});
const W = [
  [1, -0.5, 0.25],
  [-1, 0.75, 0.5],
];
const B = [0.1, 0, -0.2];
const params = { w: host([2, 3], W.flat()), b: host([3], B) };
const zeroParams = three.init(undefined as never);

type Example = readonly [number, number, number];
/** Each client's held-out examples [x0, x1, label]; client 2 holds none. Under `params`, client 0's labels rank 0, 1, 1, 0, 2; client 1's all 0. */
const clients: readonly (readonly Example[])[] = [
  [[1, 0, 0], [0, 1, 2], [1, 1, 1], [-1, 0, 1], [2, -1, 1]],
  [[0.5, 0.5, 2], [-2, 1, 1], [0, 0, 0]],
  [],
];

function logitsOf(w: number[][], b: number[], [x0, x1]: Example): number[] {
  return b.map((bias, c) => x0 * w[0]![c]! + x1 * w[1]![c]! + bias);
}
/** Rank of the label among the logits, ties going to the lower class as argmax breaks them. */
function rank(logits: number[], label: number): number {
  return logits.filter((l, c) => l > logits[label]! || (l === logits[label]! && c < label)).length;
}
function crossEntropy(logits: number[], label: number): number {
  const top = Math.max(...logits);
  return Math.log(logits.reduce((s, l) => s + Math.exp(l - top), 0)) + top - logits[label]!;
}
/** Hand-computed accuracy, top-2 accuracy and mean loss of examples under (w, b). */
function byHand(w: number[][], b: number[], examples: readonly Example[]) {
  const n = Math.max(examples.length, 1);
  const ranks = examples.map((e) => rank(logitsOf(w, b, e), e[2]));
  return {
    accuracy: ranks.filter((r) => r === 0).length / n,
    topKAccuracy: ranks.filter((r) => r < 2).length / n,
    loss: examples.reduce((s, e) => s + crossEntropy(logitsOf(w, b, e), e[2]), 0) / n,
    examples: examples.length,
  };
}

/** Clients' examples as held-out batches [C, T, batch, 2] (padding masked), T the most batches of any client. */
function heldOut(groups: readonly (readonly Example[])[], batch: number, extraBatches = 0) {
  const steps = Math.max(1, ...groups.map((g) => Math.ceil(g.length / batch))) + extraBatches;
  const slots = groups.length * steps * batch;
  const x = new Float32Array(slots * 2);
  const y = new Int32Array(slots);
  const mask = new Float32Array(slots);
  groups.forEach((g, c) =>
    g.forEach(([x0, x1, label], i) => {
      const slot = c * steps * batch + i;
      x.set([x0, x1], slot * 2);
      y[slot] = label;
      mask[slot] = 1;
    }),
  );
  const shape = [groups.length, steps, batch];
  return { x: { shape: [...shape, 2], data: x }, y: { shape, data: y }, mask: { shape, data: mask } };
}
const oneSet = (t: { shape: number[]; data: Float32Array | Int32Array }) => ({ shape: t.shape.slice(1), data: t.data });

const close = (got: number, want: number) => expect(Math.abs(got - want)).toBeLessThanOrEqual(1e-5 * Math.max(1, Math.abs(want)));

describe("federated evaluation", () => {
  const program = federatedEvaluationProgram(three, { topK: 2 });

  test("per-client accuracy, top-2 accuracy and loss are those computed by hand", async () => {
    const out = await read(await program.run({ params, ...heldOut(clients, 2) }));
    clients.forEach((examples, c) => {
      const want = byHand(W, B, examples);
      close((out.accuracy as number[])[c]!, want.accuracy);
      close((out.topKAccuracy as number[])[c]!, want.topKAccuracy);
      close((out.loss as number[])[c]!, want.loss);
      expect((out.examples as number[])[c]).toBe(want.examples);
    });
    // The cases are not degenerate: the clients' accuracies differ, and top-2 exceeds top-1 somewhere.
    expect(new Set(out.accuracy as number[]).size).toBeGreaterThan(1);
    expect((out.topKAccuracy as number[]).some((t, c) => t > (out.accuracy as number[])[c]!)).toBe(true);
  });

  test("the confusion matrix counts [label, argmax] pairs and sums to the real examples", async () => {
    const out = await read(await program.run({ params, ...heldOut(clients, 2) }));
    const want = [0, 1, 2].map(() => [0, 0, 0]);
    for (const e of clients.flat()) {
      const logits = logitsOf(W, B, e);
      want[e[2]]![logits.indexOf(Math.max(...logits))]! += 1;
    }
    expect(out.confusion).toEqual(want);
    expect((out.confusion as number[][]).flat().reduce((a, b) => a + b, 0)).toBe(clients.flat().length);
  });

  test("all-masked batches and batch size change nothing", async () => {
    const plain = await read(await program.run({ params, ...heldOut(clients, 2) }));
    const padded = await read(await program.run({ params, ...heldOut(clients, 2, 3) }));
    const wide = await read(await program.run({ params, ...heldOut(clients, 5) }));
    for (const other of [padded, wide]) {
      expect(other.confusion).toEqual(plain.confusion);
      (other.accuracy as number[]).forEach((a, c) => close(a, (plain.accuracy as number[])[c]!));
      (other.loss as number[]).forEach((l, c) => close(l, (plain.loss as number[])[c]!));
    }
  });

  test("example-weighted client accuracy equals central accuracy on the pooled examples", async () => {
    const out = await read(await program.run({ params, ...heldOut(clients, 2) }));
    const pooled = heldOut([clients.flat()], 4);
    const central = await read(await classificationEvaluationProgram(three, { topK: 2 }).run({ params, x: oneSet(pooled.x), y: oneSet(pooled.y), mask: oneSet(pooled.mask) }));
    const [acc, n] = [out.accuracy as number[], out.examples as number[]];
    const weighted = acc.reduce((s, a, c) => s + a * n[c]!, 0) / n.reduce((a, b) => a + b, 0);
    close(weighted, central.accuracy as number);
    expect(central.confusion).toEqual(out.confusion);
  });
});

describe("top-k", () => {
  test("top-1 accuracy is accuracy, also when all logits tie; top-k of all classes is 1", async () => {
    const pooled = heldOut([clients.flat()], 4);
    const inputs = { x: oneSet(pooled.x), y: oneSet(pooled.y), mask: oneSet(pooled.mask) };
    for (const p of [params, zeroParams]) {
      const top1 = await read(await classificationEvaluationProgram(three, { topK: 1 }).run({ params: p, ...inputs }));
      const plain = await read(await evaluationProgram(three).run({ params: p, ...inputs }));
      expect(top1.topKAccuracy).toBe(top1.accuracy);
      expect(top1.accuracy).toBe(plain.accuracy);
      const all = await read(await classificationEvaluationProgram(three, { topK: 3 }).run({ params: p, ...inputs }));
      expect(all.topKAccuracy).toBe(1);
    }
    // All logits tie: argmax is class 0, so the accuracy is the share of label 0 (2 of 8).
    const tied = await read(await classificationEvaluationProgram(three, { topK: 1 }).run({ params: zeroParams, ...inputs }));
    close(tied.accuracy as number, 2 / 8);
  });

  test("k outside [1, classes] is FT305", () => {
    expect(() => classificationEvaluationProgram(three, { topK: 4 })).toThrow(/^FT305: topK: expected a whole k in \[1, 3\]/);
    expect(() => federatedEvaluationProgram(three, { topK: 0 })).toThrow(/FT305/);
  });
});

describe("personalization evaluation", () => {
  const program = personalizationProgram(three, { topK: 2 });
  /** Each client's training data: one batch of one example (and a masked slot: the held-out batch size). */
  const trainExamples: Example[] = [[1, -1, 1], [0.5, 2, 2], [-1, 1, 0]];
  const train = heldOut(trainExamples.map((e) => [e]), 2);
  const trainInputs = { trainX: train.x, trainY: train.y, trainMask: train.mask };

  test("before is the federated evaluation; after follows one SGD step computed by hand", async () => {
    const lr = 0.5;
    const out = await read(await program.run({ params, lr, ...trainInputs, ...heldOut(clients, 2) }));
    const before = out.before as Record<string, number[]>;
    const after = out.after as Record<string, number[]>;
    clients.forEach((examples, c) => {
      close(before.accuracy![c]!, byHand(W, B, examples).accuracy);
      // One step on the client's example: dL/dlogits = softmax - onehot; dW = x outer that; db = that.
      const e = trainExamples[c]!;
      const logits = logitsOf(W, B, e);
      const top = Math.max(...logits);
      const z = logits.reduce((s, l) => s + Math.exp(l - top), 0);
      const g = logits.map((l, k) => Math.exp(l - top) / z - (k === e[2] ? 1 : 0));
      const w = W.map((row, i) => row.map((v, k) => v - lr * e[i]! * g[k]!));
      const b = B.map((v, k) => v - lr * g[k]!);
      const want = byHand(w, b, examples);
      close(after.accuracy![c]!, want.accuracy);
      close(after.topKAccuracy![c]!, want.topKAccuracy);
      close(after.loss![c]!, want.loss);
      expect(after.examples![c]).toBe(examples.length);
    });
    // Fine-tuning moved some client's held-out loss.
    expect(after.loss!.some((l, c) => Math.abs(l - before.loss![c]!) > 1e-3)).toBe(true);
  });

  test("a learning rate of 0 leaves every client as it was", async () => {
    const out = await read(await program.run({ params, lr: 0, ...trainInputs, ...heldOut(clients, 2) }));
    expect(out.after).toEqual(out.before);
  });

  test("training labels outside the classes are FT302", async () => {
    const bad = { ...trainInputs, trainY: { shape: train.y.shape, data: Int32Array.from([1, 0, 7, 0, 0, 0]) } };
    await expect(program.run({ params, lr: 0.1, ...bad, ...heldOut(clients, 2) })).rejects.toThrow(/FT302: personalize_top2_three input y: label 7/);
  });
});

describe.each(["onnx", "wasm", "cpu"] as const)("%s agrees with the reference interpreter", (backend) => {
  test("federated evaluation and personalization", async () => {
    const inputs = { params, ...heldOut(clients, 2) };
    const evaluation = federatedEvaluationProgram(three, { topK: 2 });
    expect(differences(await toHost(await evaluation.run(inputs, { backend })), interpret(evaluation.ir, inputs as never))).toEqual([]);
    const train = heldOut([[[1, -1, 1], [0, 2, 0], [1, 1, 2]], [[0.5, 2, 2]], [[-1, 1, 0]]], 2);
    const personalization = personalizationProgram(three, { topK: 2 });
    const tuning = { ...inputs, lr: 0.3, trainX: train.x, trainY: train.y, trainMask: train.mask };
    expect(differences(await toHost(await personalization.run(tuning, { backend })), interpret(personalization.ir, tuning as never))).toEqual([]);
  });
});

describe("the character model (int32 features, a batch dim it names B)", () => {
  test("federated evaluation and personalization agree with the reference interpreter", async () => {
    const model = characterModel({ sequenceLength: 4, hidden: 8 });
    const rng = Rng.fromSeed(5);
    const ids = (n: number) => Int32Array.from({ length: n }, () => rng.int(0, 96));
    const shape = [2, 2, 3];
    const mask = { shape, data: Float32Array.of(1, 1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 0) };
    const heldOutInputs = { x: { shape: [...shape, 4], data: ids(48) }, y: { shape, data: ids(12) }, mask };
    const params = model.init(rng.fork("init"));
    const evaluation = federatedEvaluationProgram(model);
    const got = await toHost(await evaluation.run({ params, ...heldOutInputs }));
    expect(differences(got, interpret(evaluation.ir, { params, ...heldOutInputs } as never))).toEqual([]);
    const outputs = got as unknown as { examples: { data: ArrayLike<number> }; confusion: { shape: number[]; data: ArrayLike<number> } };
    expect(Array.from(outputs.examples.data)).toEqual([4, 2]);
    expect(outputs.confusion.shape).toEqual([96, 96]);
    expect(Array.from(outputs.confusion.data).reduce((a, b) => a + b, 0)).toBe(6);
    const tuning = { params, lr: 0.5, trainX: { shape: [2, 1, 3, 4], data: ids(24) }, trainY: { shape: [2, 1, 3], data: ids(6) }, trainMask: { shape: [2, 1, 3], data: new Float32Array(6).fill(1) }, ...heldOutInputs };
    const personalization = personalizationProgram(model);
    expect(differences(await toHost(await personalization.run(tuning)), interpret(personalization.ir, tuning as never))).toEqual([]);
  });
});
