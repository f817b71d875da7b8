/**
 * The decoder-only transformer on State of the Union text: int32 windows in, one logit row per
 * window, causal attention (each position's state ignores the characters after it), and a few
 * FedAvg rounds that lower the held-out loss.
 */
import { describe, expect, test } from "vitest";
import { add, atClients, atServer, broadcast, constant, grad, i32, layerNorm, map, matmul, mean, program, reduceMean, sparseSoftmaxCrossEntropy, take } from "../../src/index.js";
import { fedAvgProgram } from "../../src/lib/algorithms/fedavg.js";
import { CHARACTER_VOCABULARY_SIZE } from "../../src/lib/data/sotu.js";
import { transformerModel, transformerStates } from "../../src/lib/models/transformer.js";
import { Rng } from "../../src/lib/random.js";
import { checkAgreement } from "../differential/harness.js";
import { read } from "./helpers.js";
import { sotuLossBeforeAndAfter } from "./sotu-rounds.js";
import { deadline } from "../helpers/deadline.js";

describe("the transformer", () => {
  const sequenceLength = 16;
  const model = transformerModel({ sequenceLength, width: 16, heads: 2, blocks: 2 });

  test("takes int32 windows and gives one row of logits per window", async () => {
    expect(fedAvgProgram(model).signature).toContain(`x={i32[S,B,${sequenceLength}]}@CLIENTS`);
    const logits = program({ params: atServer(model.params), x: atClients(i32(["B", sequenceLength])) }, ({ params, x }) =>
      map((p, ids) => model.logits(p, ids), broadcast(params), x),
    );
    expect(logits.signature).toContain(`-> {f32[B,${CHARACTER_VOCABULARY_SIZE}]}@CLIENTS`);
    const params = model.init(Rng.fromSeed(1));
    const ids = Int32Array.from({ length: 2 * 3 * sequenceLength }, (_, i) => (i * 7) % CHARACTER_VOCABULARY_SIZE);
    const out = (await read(await logits.run({ params, x: { shape: [2, 3, sequenceLength], data: ids } }))) as number[][][];
    expect([out.length, out[0]!.length, out[0]![0]!.length]).toEqual([2, 3, CHARACTER_VOCABULARY_SIZE]);
    expect(out.flat(2).every(Number.isFinite)).toBe(true);
  });

  test("is causal: a position's state depends on the characters up to it only", async () => {
    const params = model.init(Rng.fromSeed(2));
    const states = program({ params: atServer(model.params), x: atClients(i32(["B", sequenceLength])) }, ({ params, x }) =>
      map((p, ids) => transformerStates(p, ids, 2), broadcast(params), x),
    );
    const window = Array.from({ length: sequenceLength }, (_, i) => (i * 5 + 3) % CHARACTER_VOCABULARY_SIZE);
    const change = (at: number) => window.map((c, i) => (i === at ? (c + 1) % CHARACTER_VOCABULARY_SIZE : c));
    const rows = [window, change(sequenceLength - 1), change(5)];
    const out = (await read(await states.run({ params, x: { shape: [1, rows.length, sequenceLength], data: Int32Array.from(rows.flat()) } }))) as number[][][][];
    const [base, changedLast, changedSixth] = out[0]!;
    // Two blocks deep, every position before the changed one keeps its state exactly; the changed one and all after it move.
    expect(changedLast!.slice(0, -1)).toEqual(base!.slice(0, -1));
    expect(changedLast!.at(-1)).not.toEqual(base!.at(-1));
    expect(changedSixth!.slice(0, 5)).toEqual(base!.slice(0, 5));
    changedSixth!.slice(5).forEach((state, t) => expect(state, `position ${t + 5}`).not.toEqual(base![t + 5]));
  });

  test("gives the logits of the whole stream's last position, with the last block computed for that position alone", async () => {
    const params = model.init(Rng.fromSeed(3));
    const specs = { params: atServer(model.params), x: atClients(i32(["B", sequenceLength])) };
    const both = program(specs, ({ params, x }) =>
      map(
        (p, ids) => {
          const last = take(transformerStates(p, ids, 2), constant(sequenceLength - 1, "int32"), 1);
          return { model: model.logits(p, ids), whole: add(matmul(layerNorm(last, p.finalGain, p.finalBias), p.out), p.outBias) };
        },
        broadcast(params),
        x,
      ),
    );
    const ids = Int32Array.from({ length: 2 * 3 * sequenceLength }, (_, i) => (i * 11 + 1) % CHARACTER_VOCABULARY_SIZE);
    const out = (await read(await both.run({ params, x: { shape: [2, 3, sequenceLength], data: ids } }))) as { model: number[][][]; whole: number[][][] };
    out.model.flat(2).forEach((v, i) => expect(v).toBeCloseTo(out.whole.flat(2)[i]!, 4));
  });

  test("three FedAvg rounds on four presidents lower the held-out loss", async () => {
    const { before, after } = await sotuLossBeforeAndAfter(model, { lr: 0.1 });
    expect(before).toBeGreaterThan(0.8 * Math.log(CHARACTER_VOCABULARY_SIZE));
    expect(after).toBeLessThan(before - 0.5);
  }, deadline(120_000));

  test("its logits and the gradient of its federated loss agree on cpu, wasm and onnx with the reference interpreter", async () => {
    const tiny = transformerModel({ sequenceLength: 6, width: 8, heads: 2, blocks: 2 });
    const specs = { params: atServer(tiny.params), x: atClients(i32(["B", 6])), y: atClients(i32(["B"])) };
    const p = program(specs, ({ params, x, y }) => {
      const loss = (q: typeof params, ids: typeof x, labels: typeof y) =>
        map((member, xs, ys) => mean(sparseSoftmaxCrossEntropy(tiny.logits(member, xs), ys)), broadcast(q), ids, labels);
      return {
        logits: map((member, xs) => tiny.logits(member, xs), broadcast(params), x),
        grads: grad((q: typeof params) => reduceMean(loss(q, x, y)))(params),
      };
    });
    const ids = Array.from({ length: 2 * 3 * 6 }, (_, i) => (i * 13 + 2) % CHARACTER_VOCABULARY_SIZE);
    const inputs = {
      params: tiny.init(Rng.fromSeed(4)),
      x: { shape: [2, 3, 6], data: ids },
      y: { shape: [2, 3], data: ids.slice(0, 6) },
    };
    await checkAgreement({ program: p, code: "transformer logits and gradients", inputs: inputs as never, clients: 2 }, ["cpu", "wasm", "onnx"]);
  }, deadline(120_000));

  test("refuses heads that do not divide the width", () => {
    expect(() => transformerModel({ width: 10, heads: 3 })).toThrow(/^FT305: .*3 heads do not divide width 10/);
  });
});
