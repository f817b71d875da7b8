/**
 * FedPer on private MNIST shards, written in the language (docs/guide.md "Client state"): a
 * two-layer network whose body (w1, b1) is federated and whose head (w2, b2) each client keeps.
 * The clients' data are private (`atClients(spec, { private: true })`) and so are their heads,
 * trained on it: the body's deltas reach the SERVER only through dpSum (clipped to CLIP, noise
 * multiplier NOISE), and each head comes back to its own client as client state
 * (`keepOnClients`: try returning `heads: newHeads` without it, and tsc says FT109).
 *
 * The shards partition gives each client two digits: a head of its own fits them better than
 * one shared head would, which is what FedPer is for. `fedtensor run --algorithm fedper
 * --aggregator clip,dp` runs the library's FedPer (src/lib/algorithms/fedper.ts) the same way.
 *
 *   npm run build && node dist/examples/fedper-mnist.js
 */
import { pathToFileURL } from "node:url";
import * as tf from "@tensorflow/tfjs";
import {
  add, atClients, atServer, broadcast, div, dpSum, f32, grad, i32, keepOnClients, map, matmul, maximum, mul, oneHot, program, relu, scan, secretKey, softmaxCrossEntropy, sub, sum, useBackend,
  type Tensor,
} from "fedtensor";
import { federate, type FederatedDataset, type HostData, loadMnist, partitionShards, Rng, roundCohort } from "fedtensor/lib";

export const HIDDEN = 32;
export const CLIP = 1;
export const NOISE = 0.5;
const LR = 0.1;

// One client's values inside map(): the server's body is public there, its head and data private.
type M<S extends readonly (number | string)[], D extends "float32" | "int32" = "float32"> = Tensor<S, D, "member" | "member-private">;
type Body = { w1: M<[784, 32]>; b1: M<[32]> };
type Head = { w2: M<[32, 10]>; b2: M<[10]> };
type Batch = { x: M<["B", 784]>; y: M<["B"], "int32">; mask: M<["B"]> };

/** Mean cross-entropy of a batch's real examples under body and head. */
function batchLoss(p: Body & Head, batch: Batch) {
  const hidden = relu(add(matmul(batch.x, p.w1), p.b1));
  const losses = softmaxCrossEntropy(add(matmul(hidden, p.w2), p.b2), oneHot(batch.y, 10));
  return div(sum(mul(losses, batch.mask)), maximum(sum(batch.mask), 1));
}

const own = { private: true } as const;

export const fedPerRound = program(
  {
    params: atServer({ w1: f32([784, HIDDEN]), b1: f32([HIDDEN]) }),
    heads: atClients({ w2: f32([HIDDEN, 10]), b2: f32([10]) }, own),
    x: atClients(f32(["S", "B", 784]), own),
    y: atClients(i32(["S", "B"]), own),
    mask: atClients(f32(["S", "B"]), own),
    cohort: f32([]),
    key: atServer(i32([2])),
  },
  ({ params, heads, x, y, mask, cohort, key }) => {
    // Each client trains the server's body and its own head together over its batches.
    const local = map(
      (body, head, xs, ys, ms) => {
        const [trained] = scan({ ...body, ...head }, { x: xs, y: ys, mask: ms }, (p, batch) => [sub(p, mul(grad(batchLoss)(p, batch), LR)), undefined] as const);
        return { delta: { w1: sub(trained.w1, body.w1), b1: sub(trained.b1, body.b1) }, head: { w2: trained.w2, b2: trained.b2 } };
      },
      broadcast(params),
      heads,
      x,
      y,
      mask,
    );
    // The body moves by the DP mean of the deltas; each head stays with its client.
    const released = dpSum(local.delta, { clip: CLIP, noiseMultiplier: NOISE, key });
    return { params: add(params, div(released, cohort)), heads: keepOnClients(local.head) };
  },
  { name: "fedper_mnist" },
);

type HostHead = Record<"w2" | "b2", Float32Array>;
const headShapes = { w2: [HIDDEN, 10], b2: [10] } as const;

/** The clients' heads, by client id: what `fedtensor run` keeps in its client-state store. */
export class Heads {
  private readonly byClient = new Map<number, HostHead>();
  constructor(private readonly initial: HostHead) {}
  get(client: number): HostHead {
    return this.byClient.get(client) ?? this.initial;
  }
  has(client: number): boolean {
    return this.byClient.has(client);
  }
  /** The cohort's heads stacked [C, ...] for the program. */
  stack(clients: Int32Array): Record<"w2" | "b2", tf.Tensor> {
    const stacked = (name: "w2" | "b2") => {
      const size = this.initial[name].length;
      const data = new Float32Array(clients.length * size);
      clients.forEach((c, i) => data.set(this.get(c)[name], i * size));
      return tf.tensor(data, [clients.length, ...headShapes[name]]);
    };
    return { w2: stacked("w2"), b2: stacked("b2") };
  }
  /** Each client's row of the kept output becomes its head. */
  async keep(clients: Int32Array, kept: Record<"w2" | "b2", tf.Tensor>): Promise<void> {
    const [w2, b2] = [(await kept.w2.data()) as Float32Array, (await kept.b2.data()) as Float32Array];
    clients.forEach((c, i) => this.byClient.set(c, { w2: w2.slice(i * HIDDEN * 10, (i + 1) * HIDDEN * 10), b2: b2.slice(i * 10, (i + 1) * 10) }));
  }
}

/** `rounds` FedPer rounds of `perRound` clients on `data`; returns the body and the clients' heads. */
export async function trainFedPer(data: FederatedDataset<HostData>, rounds: number, perRound: number, rng: Rng): Promise<{ params: Record<"w1" | "b1", tf.Tensor>; heads: Heads }> {
  const init = (shape: number[], scale: number) => tf.randomUniform(shape, -scale, scale, "float32", 1);
  let params = { w1: init([784, HIDDEN], Math.sqrt(6 / (784 + HIDDEN))), b1: tf.zeros([HIDDEN]) };
  const heads = new Heads({ w2: (await init([HIDDEN, 10], Math.sqrt(6 / (HIDDEN + 10))).data()) as Float32Array, b2: new Float32Array(10) });
  for (let round = 1; round <= rounds; round++) {
    const cohort = roundCohort(data, { rng, round, clientsPerRound: perRound, batchSize: 20 });
    const x = { shape: [...cohort.x.shape.slice(0, 3), 784], data: cohort.x.data };
    const stacked = heads.stack(cohort.clients);
    const out = await fedPerRound.run({ params, heads: stacked, x, y: cohort.y, mask: cohort.mask, cohort: perRound, key: secretKey() });
    await heads.keep(cohort.clients, out.heads);
    tf.dispose([...Object.values(params), ...Object.values(stacked), ...Object.values(out.heads)]);
    params = out.params;
  }
  return { params, heads };
}

/** MNIST in shards of one digit, two shards a client. */
export function mnistShards(clients: number, rng: Rng): FederatedDataset<HostData> {
  const train = loadMnist("train");
  return federate(train, loadMnist("test"), partitionShards(train.y, { numShards: 2 * clients, shardsPerClient: 2 }, rng.fork("partition")));
}

async function main(): Promise<void> {
  console.log(`fedPerRound: ${fedPerRound.signature}`);
  console.log(`client state: ${fedPerRound.clientState.join(", ")}; releases: ${fedPerRound.privacy.join("; ")}`);
  console.log(`backend: ${await useBackend()}`);
  const rng = Rng.fromSeed(0);
  const { params } = await trainFedPer(mnistShards(100, rng), 10, 10, rng);
  console.log(`trained 10 rounds; the body's norm ${(await tf.norm(params.w1).data())[0]!.toFixed(3)}; each sampled client keeps its own head`);
}

// Run when executed, not when imported.
if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) await main();
