/**
 * A federated label histogram released two ways, written from docs/guide.md and
 * docs/language.md alone. Each client holds private labels (`atClients(spec, { private: true })`,
 * built with `clientsFrom` from per-client arrays of different sizes, docs/data.md) and counts
 * them with a user helper, `labelCounts`, written with `helper(...)` (docs/language.md "Writing
 * helpers"): calling it with labels at one placement and the mask at another fails `tsc` with
 * FT104 (test/fixtures/type-errors/ft104-histogram-helper.ts).
 *
 * The counts leave the clients only through the two aggregators that may take private data to
 * the SERVER:
 * - `secureSum`: the exact histogram through secure aggregation (pairwise masks that cancel in
 *   the sum). This is a SIMULATION in one process: the masking arithmetic is real, but every
 *   client runs here, so nothing is hidden from this process (docs/language.md "Secure
 *   aggregation"). It is exact and has no DP.
 * - `dpSum`: each client's counts clipped to L2 norm CLIP, summed, plus N(0, (z CLIP)^2) noise
 *   per bin (the Gaussian mechanism, client-level DP). No client holds more than CLIP labels,
 *   so the clipping changes nothing and the noise has std z CLIP.
 * Both keys are SERVER inputs drawn from node:crypto by `secretKey()`, one per release (FT111).
 *
 *   npm run build && node dist/examples/federated-histogram.js
 */
import { pathToFileURL } from "node:url";
import {
  RdpAccountant, atClients, atServer, cast, dpSum, expandDims, f32, helper, i32, map, mul, oneHot, program, secretKey, secureSum, sum, useBackend,
  type Float, type Int,
} from "fedtensor";
import { clientsFrom, padClients, Rng } from "fedtensor/lib";

export const CLASSES = 10;
/** The most labels one client holds: the secure sum's range and the DP clip. */
export const CLIP = 40;
export const NOISE_MULTIPLIER = 1;
export const DELTA = 1e-5;

/** One client's label counts: a one-hot row per example, padding rows (mask 0) zeroed, summed. */
export const labelCounts = helper("labelCounts", (labels: Int<["N"]>, mask: Float<["N"]>) =>
  sum(mul(oneHot(labels, CLASSES), expandDims(mask, -1)), 0));

export const histogramInputs = {
  labels: atClients(i32(["N"]), { private: true }),
  mask: atClients(f32(["N"]), { private: true }),
  maskKey: atServer(i32([2])),
  noiseKey: atServer(i32([2])),
};

export const federatedHistogram = program(
  histogramInputs,
  ({ labels, mask, maskKey, noiseKey }) => {
    const counts = map((y, m) => labelCounts(y, m), labels, mask);
    return {
      // Integer counts in [0, CLIP] each: the masked modular sum is exact.
      secure: secureSum(map((c) => cast(c, "int32"), counts), { bits: 20, key: maskKey, range: [0, CLIP] }),
      noisy: dpSum(counts, { clip: CLIP, noiseMultiplier: NOISE_MULTIPLIER, key: noiseKey }),
    };
  },
  { name: "federated_histogram" },
);

/** Synthetic clients: 5 to CLIP labels each, skewed towards a client's two favourite classes. */
export function syntheticClients(rng: Rng, clients: number): { label: number[] }[] {
  return Array.from({ length: clients }, () => {
    const favourites = [rng.int(0, CLASSES), rng.int(0, CLASSES)];
    const label = Array.from({ length: rng.int(5, CLIP + 1) }, () => (rng.float() < 0.7 ? favourites[rng.int(0, 2)]! : rng.int(0, CLASSES)));
    return { label };
  });
}

/** The histogram counted directly, for comparison. */
export function exactCounts(clients: readonly { label: readonly number[] }[]): number[] {
  const counts = new Array<number>(CLASSES).fill(0);
  for (const { label } of clients) for (const y of label) counts[y]!++;
  return counts;
}

/** Runs the program on the clients: both histograms, with fresh keys from node:crypto. */
export async function releaseHistograms(clients: readonly { label: number[] }[]): Promise<{ secure: number[]; noisy: number[] }> {
  const { label, mask } = padClients(clientsFrom([...clients], { dtypes: { label: "int32" } }));
  const out = await federatedHistogram.run({ labels: label, mask, maskKey: secretKey(), noiseKey: secretKey() });
  const secure = Array.from(await out.secure.data());
  const noisy = Array.from(await out.noisy.data());
  out.secure.dispose();
  out.noisy.dispose();
  return { secure, noisy };
}

/** The (epsilon, DELTA) of the one DP release: every client takes part (sampling rate 1). */
export const releaseEpsilon = (): number => new RdpAccountant().step(1, NOISE_MULTIPLIER).epsilon(DELTA);

async function main(): Promise<void> {
  console.log(`backend: ${await useBackend()}`);
  console.log(`federatedHistogram: ${federatedHistogram.signature}`);
  for (const line of federatedHistogram.privacy) console.log(`  ${line}`);
  const clients = syntheticClients(Rng.fromSeed(0), 100);
  const { secure, noisy } = await releaseHistograms(clients);
  console.log(`exact counts:              ${exactCounts(clients).join(", ")}`);
  console.log(`secureSum (exact, no DP):  ${secure.join(", ")}`);
  console.log(`dpSum (noise std ${NOISE_MULTIPLIER * CLIP}):     ${noisy.map((v) => v.toFixed(0)).join(", ")}`);
  console.log(`the DP release: (epsilon ${releaseEpsilon().toFixed(2)}, delta ${DELTA.toExponential()}) client-level DP, one release (RdpAccountant)`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) await main();
