/**
 * On onnx's CPU provider a map with per-client products runs as a Loop over clients (a
 * client_loop), and a scan inside it reads each step of a client's batches straight from the
 * cohort tensor (GatherND of [client, step]): the client's rows are not first copied out of the
 * cohort (a Gather of the whole member), unless some other use needs them whole. Either way the
 * round computes what the reference interpreter does.
 */
import * as tf from "@tensorflow/tfjs";
import { describe, expect, test } from "vitest";
import { atClients, atServer, broadcast, f32, map, matmul, mul, program, reduceMean, reduceSum, scan, sub, sum, transpose } from "../../src/index.js";
import { interpret } from "../../src/interpret/reference.js";
import type { OutputLeaf } from "../../src/interpret/io.js";
import type { GraphProto, NodeProto } from "../../src/lower/onnx/proto.js";
import { buildModel } from "../../src/lower/onnx/model.js";
import { onnxLowering } from "../../src/runtime/lowering.js";
import { batchProgram } from "../../src/transform/batch.js";

const [clients, steps, batch, features] = [3, 4, 2, 3];
const specs = { w: atServer(f32([features, 2])), x: atClients(f32([steps, batch, features])) };
const values = (n: number, scale: number) => Array.from({ length: n }, (_, i) => Math.sin(i * 1.7 + scale) * scale);
const inputs = {
  w: tf.tensor(values(features * 2, 0.5), [features, 2]),
  x: tf.tensor(values(clients * steps * batch * features, 1), [clients, steps, batch, features]),
};

/** A few least-squares-like steps per client from the broadcast w: per-client weights times per-client data. */
const train = (wc: never, xs: never) => scan(wc, xs, (acc, b) => [sub(acc, mul(matmul(transpose(b), matmul(b, acc)), 0.05)), undefined] as const)[0];
const stepsOnly = program(specs, ({ w, x }) => reduceMean(map((wc, xs) => train(wc as never, xs as never), broadcast(w), x)));
// The same, and each client's batches also summed whole: that use needs the member gathered.
const alsoWhole = program(specs, ({ w, x }) => reduceMean(map((wc, xs) => mul(train(wc as never, xs as never), sum(xs)), broadcast(w), x)));

/** Every node of a graph and of the graphs in its nodes' attributes (Loop bodies), with the depth it is at. */
function nodes(graph: GraphProto, depth = 0): { node: NodeProto; depth: number }[] {
  return graph.node.flatMap((node) => [{ node, depth }, ...node.attribute.flatMap((a) => (a.g === undefined ? [] : nodes(a.g, depth + 1)))]);
}

async function onnxAndReference(p: typeof stepsOnly): Promise<[number[], number[]]> {
  const out = (await p.run(inputs as never, { backend: "onnx", workers: 0 })) as tf.Tensor;
  const onnx = Array.from(await out.data());
  out.dispose();
  const host = { w: (await inputs.w.array()) as number[][], x: (await inputs.x.array()) as number[][][][] };
  return [onnx, Array.from((interpret(p.ir, host) as OutputLeaf).data)];
}

describe("a client loop's scan on onnx", () => {
  const cohortX = "input1";
  const model = (p: typeof stepsOnly) => nodes(buildModel(batchProgram(p.ir, clients, onnxLowering({ executionProvider: "cpu" }).policy).ir).graph);

  test("reads each step from the cohort tensor: no Gather copies a client's batches", async () => {
    const all = model(stepsOnly);
    expect(all.some(({ node }) => node.op_type === "Loop")).toBe(true);
    expect(all.filter(({ node }) => node.op_type === "Gather" && node.input[0] === cohortX)).toEqual([]);
    // The step's read is in the scan's body, inside the client loop's body.
    expect(all.filter(({ node }) => node.op_type === "GatherND" && node.input[0] === cohortX).map(({ depth }) => depth)).toEqual([2]);
    const [onnx, reference] = await onnxAndReference(stepsOnly);
    expect(onnx).toHaveLength(features * 2);
    onnx.forEach((v, i) => expect(v).toBeCloseTo(reference[i]!, 5));
  });

  test("gathers a client's batches whole, once, where another use needs them", async () => {
    const all = model(alsoWhole as never);
    expect(all.filter(({ node }) => node.op_type === "Gather" && node.input[0] === cohortX).map(({ depth }) => depth)).toEqual([1]);
    const [onnx, reference] = await onnxAndReference(alsoWhole as never);
    onnx.forEach((v, i) => expect(v).toBeCloseTo(reference[i]!, 4));
  });
});
