/**
 * Randomness inside a program, and what it costs in privacy: FedSGD on a synthetic linear
 * regression where every client applies dropout to its features with its own key
 * (foldIn(key, clientIndex())), clips its gradient to L2 norm C, and the server adds Gaussian
 * noise of standard deviation z C to the sum (the Gaussian mechanism of DP-FedSGD, written by
 * hand; the library's is FedAvg with the chain clip,dp, `fedtensor run --aggregator dp`). The RDP
 * accountant then says what (epsilon, delta) the rounds spent, for cohorts sampled at rate q.
 *
 *   npm run build && node dist/examples/noisy-fedsgd.js
 */
import { pathToFileURL } from "node:url";
import {
  add,
  atClients,
  atServer,
  broadcast,
  clientIndex,
  div,
  dropout,
  f32,
  foldIn,
  grad,
  i32,
  map,
  matmul,
  mean,
  minimum,
  mul,
  normal,
  program,
  reduceSum,
  sqrt,
  sub,
  sum,
  useBackend,
} from "fedtensor";
import { Rng, sampledGaussianEpsilon } from "fedtensor/lib";

const FEATURES = 8;
const CLIP = 1;
const NOISE_MULTIPLIER = 1.1;

export const noisyRound = program(
  {
    w: atServer(f32([FEATURES])),
    key: atServer(i32([2])),
    x: atClients(f32(["N", FEATURES])),
    y: atClients(f32(["N"])),
    lr: atServer(f32([])),
  },
  ({ w, key, x, y, lr }) => {
    const clipped = map(
      (wm, k, xm, ym) => {
        // Each client masks its own features: its key is the round key folded with its index.
        const dropped = dropout(xm, 0.1, foldIn(k, clientIndex()));
        const loss = (v: typeof wm) => {
          const residual = sub(matmul(dropped, v), ym);
          return mean(mul(residual, residual));
        };
        const g = grad(loss)(wm);
        const norm = sqrt(add(sum(mul(g, g)), 1e-12));
        return mul(g, minimum(div(CLIP, norm), 1));
      },
      broadcast(w),
      broadcast(key),
      x,
      y,
    );
    const total = reduceSum(clipped);
    // The server's noise comes from the round key itself: one draw, at the SERVER.
    const noisy = add(total, mul(normal(foldIn(key, -1), [FEATURES]), NOISE_MULTIPLIER * CLIP));
    return sub(w, mul(lr, noisy));
  },
  { name: "noisy_fedsgd_round" },
);

async function main(): Promise<void> {
  console.log(`backend: ${await useBackend()}`);
  console.log(`noisyRound: ${noisyRound.signature}`);
  const rng = Rng.fromSeed(0);
  const truth = Array.from({ length: FEATURES }, () => rng.normal());
  const [clients, examples, population, rounds] = [20, 32, 1000, 200];
  let w = new Array<number>(FEATURES).fill(0);
  for (let round = 0; round < rounds; round++) {
    const x = Array.from({ length: clients }, () => Array.from({ length: examples }, () => Array.from({ length: FEATURES }, () => rng.normal())));
    const y = x.map((rows) => rows.map((row) => row.reduce((s, v, i) => s + v * truth[i]!, 0) + 0.1 * rng.normal()));
    const out = await noisyRound.run({ w, key: [0, round], x, y, lr: 0.5 / clients });
    w = Array.from(await out.data());
    out.dispose();
  }
  const error = Math.sqrt(w.reduce((s, v, i) => s + (v - truth[i]!) ** 2, 0) / FEATURES);
  console.log(`RMS error of the weights after ${rounds} rounds: ${error.toFixed(3)}`);
  const spent = sampledGaussianEpsilon({ samplingRate: clients / population, noiseMultiplier: NOISE_MULTIPLIER, steps: rounds }, 1e-5);
  console.log(
    `cohorts of ${clients} from ${population} clients, z = ${NOISE_MULTIPLIER}: (epsilon ${spent.epsilon.toFixed(2)}, delta 1e-5)` +
      ` at RDP order ${spent.order} (Balle et al. 2020 conversion)`,
  );
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) await main();
