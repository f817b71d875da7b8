/**
 * Multi-round DP training as ONE program: a SERVER loop (fori) of DP-FedSGD rounds on a
 * synthetic linear regression whose client data is declared private. Each round every client
 * computes its gradient on its own examples, dpSum clips each to L2 norm C, sums them and adds
 * N(0, (z C)^2) at the SERVER; the model steps on the noisy mean. The data leaves the clients
 * only through dpSum, so the program traces (the model carried by the loop stays free of
 * private data: docs/language.md "Privacy"), and its signature lists the release with its
 * cost: rho = 1 / (2 z^2) zCDP per round (Bun and Steinke 2016), ROUNDS rounds in all.
 *
 * The noise key is a SERVER input, fresh every round (foldIn of the round number, FT111
 * otherwise), and this script draws it from node:crypto: a constant key would let anyone who
 * reads the program regenerate the noise (FT110).
 *
 *   npm run build && node dist/examples/dp-training-loop.js
 */
import { randomBytes } from "node:crypto";
import { pathToFileURL } from "node:url";
import { atClients, atServer, broadcast, div, dpSum, f32, foldIn, fori, grad, i32, map, matmul, mean, mul, program, sub, useBackend } from "fedtensor";
import { Rng } from "fedtensor/lib";

export const FEATURES = 8;
export const ROUNDS = 40;
export const CLIP = 1;
export const NOISE_MULTIPLIER = 5;

export const dpTraining = program(
  {
    w: atServer(f32([FEATURES])),
    key: atServer(i32([2])),
    x: atClients(f32(["N", FEATURES]), { private: true }),
    y: atClients(f32(["N"]), { private: true }),
    lr: atServer(f32([])),
    clients: atServer(f32([])),
  },
  ({ w, key, x, y, lr, clients }) =>
    fori(ROUNDS, w, (round, v) => {
      const gradients = map(
        (vm, xm, ym) => {
          const loss = (u: typeof vm) => {
            const residual = sub(matmul(xm, u), ym);
            return mean(mul(residual, residual));
          };
          return grad(loss)(vm);
        },
        broadcast(v),
        x,
        y,
      );
      // The only way the clients' data reaches the SERVER: clipped, summed, noised.
      const noisy = dpSum(gradients, { clip: CLIP, noiseMultiplier: NOISE_MULTIPLIER, key: foldIn(key, round) });
      return sub(v, mul(lr, div(noisy, clients)));
    }),
  { name: "dp_training_loop" },
);

/** A synthetic regression cohort: y = x . truth + noise, `examples` rows per client. */
export function syntheticCohort(rng: Rng, clients: number, examples: number): { truth: number[]; x: number[][][]; y: number[][] } {
  const truth = Array.from({ length: FEATURES }, () => rng.normal());
  const x = Array.from({ length: clients }, () => Array.from({ length: examples }, () => Array.from({ length: FEATURES }, () => rng.normal())));
  const y = x.map((rows) => rows.map((row) => row.reduce((s, v, i) => s + v * truth[i]!, 0) + 0.1 * rng.normal()));
  return { truth, x, y };
}

/** A secret key: two words from the OS CSPRNG, never from a seed. */
export const secretKey = (): number[] => Array.from(new Int32Array(randomBytes(8).buffer));

/** (epsilon, delta)-DP from rho-zCDP: epsilon = rho + 2 sqrt(rho ln(1/delta)) (Bun and Steinke 2016, Proposition 1.3). */
export const zcdpEpsilon = (rho: number, delta: number): number => rho + 2 * Math.sqrt(rho * Math.log(1 / delta));

async function main(): Promise<void> {
  console.log(`backend: ${await useBackend()}`);
  console.log(`dpTraining: ${dpTraining.signature}`);
  for (const line of dpTraining.privacy) console.log(`  ${line}`);
  const clients = 50;
  const { truth, x, y } = syntheticCohort(Rng.fromSeed(0), clients, 32);
  const out = await dpTraining.run({ w: new Array(FEATURES).fill(0), key: secretKey(), x, y, lr: 0.5, clients });
  const w = Array.from(await out.data());
  out.dispose();
  const error = Math.sqrt(w.reduce((s, v, i) => s + (v - truth[i]!) ** 2, 0) / FEATURES);
  const start = Math.sqrt(truth.reduce((s, v) => s + v * v, 0) / FEATURES);
  console.log(`RMS error of the weights: ${start.toFixed(3)} at the start, ${error.toFixed(3)} after ${ROUNDS} rounds`);
  // Every round releases the same clients' data (no sampling), so the rounds' rho add up.
  const rho = ROUNDS / (2 * NOISE_MULTIPLIER ** 2);
  console.log(`privacy: ${ROUNDS} rounds at z = ${NOISE_MULTIPLIER}: rho = ${rho.toFixed(2)} zCDP, (epsilon ${zcdpEpsilon(rho, 1e-5).toFixed(1)}, delta 1e-5)`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) await main();
