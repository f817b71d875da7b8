/**
 * The character LSTM (src/lib/models/lstm.ts): its gradients through scan, the embedding
 * lookup and the gates, taken of a federated loss (server parameters broadcast, per-client
 * windows, reduceMean), agree on cpu, wasm and onnx with the float64 reference interpreter,
 * and the interpreter's gradients with central finite differences of the loss. A small model
 * (hidden 3, embedding 2, windows of 5) keeps the finite differences to a few hundred losses.
 */
import { expect, test } from "vitest";
import { atClients, atServer, broadcast, i32, map, mean, program, reduceMean, sparseSoftmaxCrossEntropy, valueAndGrad, type ValueOf } from "../../src/index.js";
import { CHARACTER_VOCABULARY_SIZE } from "../../src/lib/data/sotu.js";
import { lstmModel } from "../../src/lib/models/lstm.js";
import { Rng } from "../../src/lib/random.js";
import { checkFiniteDifferences } from "./finite-differences.js";
import { checkAgreement } from "./harness.js";
import type { GeneratedGradient } from "./programs.js";
import { deadline } from "../helpers/deadline.js";

const [clients, batch, sequenceLength] = [2, 3, 5];
const model = lstmModel({ sequenceLength, embedding: 2, hidden: 3 });
const names = Object.keys(model.params) as (keyof typeof model.params)[];
const { embedding, inputKernel, recurrentKernel, bias, out, outBias } = model.params;
const specs = {
  ...{ embedding: atServer(embedding), inputKernel: atServer(inputKernel), recurrentKernel: atServer(recurrentKernel) },
  ...{ bias: atServer(bias), out: atServer(out), outBias: atServer(outBias) },
  ids: atClients(i32(["B", sequenceLength])),
  next: atClients(i32(["B"])),
};
type Inputs = ValueOf<typeof specs>;
type ServerParams = Pick<Inputs, keyof typeof model.params>;

const loss = (params: ServerParams, { ids, next }: Inputs) =>
  reduceMean(map((p, x, y) => mean(sparseSoftmaxCrossEntropy(model.logits(p, x), y)), broadcast(params), ids, next));
const serverParams = (inputs: Inputs) => Object.fromEntries(names.map((name) => [name, inputs[name]])) as ServerParams;

const rng = Rng.fromSeed(7);
// Twice Glorot's start plus a little noise, so that the gates work away from their linear middle.
const params = Object.fromEntries(
  Object.entries(model.init(rng.fork("init"))).map(([name, p]) => [name, { shape: p.shape, data: Array.from(p.data, (v) => 2 * v + 0.1 * (rng.float() - 0.5)) }]),
);
// Ids spread over the vocabulary, some repeated (their rows' gradients add up) and one past it (a row of zeros).
const ids = Array.from({ length: clients * batch * sequenceLength }, (_, i) => (i === 7 ? CHARACTER_VOCABULARY_SIZE : (i * 37) % 41));

const lstmGradient: GeneratedGradient = {
  program: program(specs, (inputs) => {
    const [value, grads] = valueAndGrad((p: ServerParams) => loss(p, inputs))(serverParams(inputs));
    return { value, grads: names.map((name) => grads[name]) };
  }) as never,
  lossProgram: program(specs, (inputs) => [loss(serverParams(inputs), inputs)]) as never,
  code: "valueAndGrad(p => reduceMean(map(crossEntropy(lstmModel({ sequenceLength: 5, embedding: 2, hidden: 3 }).logits), broadcast(p), ids, next)))",
  inputs: {
    ...params,
    ids: { shape: [clients, batch, sequenceLength], data: ids },
    next: { shape: [clients, batch], data: [3, 1, 4, 1, 5, 95] },
  },
  clients,
  params: names,
};

test("the LSTM's gradients through scan agree on cpu, wasm, onnx, the reference interpreter and finite differences", async () => {
  const reference = await checkAgreement(lstmGradient, ["cpu", "wasm", "onnx"]);
  const { checked, skipped } = checkFiniteDifferences(lstmGradient, reference);
  // Every entry of every parameter: the LSTM is smooth, so no entry has a kink to skip.
  expect(skipped).toBe(0);
  expect(checked).toBe(Object.values(params).reduce((n, p) => n + p.data.length, 0));
  // Rows of the table that no id looks up get no gradient; the rows of repeated ids do.
  const embeddingGradient = (reference as unknown as { grads: { data: Float64Array }[] }).grads[0]!.data;
  expect(Array.from(embeddingGradient.subarray(2 * 90, 2 * 96))).toEqual(new Array(12).fill(0));
  expect(embeddingGradient.subarray(0, 2).some((v) => v !== 0)).toBe(true);
}, deadline(300_000));
