/**
 * Counts that the server learns only as a sum, through an aggregator's `next` (docs/guide.md,
 * "An aggregator's next"): each client holds private labels; it counts them per class and the
 * secure chain `aggregator(s.secure({ ... }))` returns the example-weighted MEAN of the clients'
 * label frequencies, sum_i n_i (c_i / n_i) / sum_i n_i = sum_i c_i / sum_i n_i, from two masked
 * sums. Beside it, the raw `secureSum` of the counts gives the exact SUM. The secure stage clips
 * each coordinate of an update to [-clip, clip] (a declared clip, like a clip stage); raw
 * secureSum clips nothing and fails with FT309 on a value outside its range.
 *
 *   npm run build && node dist/examples/secure-sum-of-counts.js
 */
import { pathToFileURL } from "node:url";
import { atClients, atServer, cast, div, expandDims, f32, i32, map, maximum, mul, oneHot, program, secureSum, sum } from "fedtensor";
import { aggregationStages as s, aggregator, clientsFrom, padClients, Rng } from "fedtensor/lib";

export const CLASSES = 4;
/** The most examples a client may hold: the secure stage's maxWeight (a larger count is FT309). */
export const MAX_EXAMPLES = 50;
export const MAX_CLIENTS = 20;

const chain = aggregator(s.secure({ bits: 30, clip: 1, maxWeight: MAX_EXAMPLES, maxClients: MAX_CLIENTS }));

export const labelShares = program(
  {
    labels: atClients(i32(["N"]), { private: true }),
    mask: atClients(f32(["N"]), { private: true }),
    count: atClients(f32([]), { private: true }),
    key: atServer(i32([2])),
    round: i32([]),
    // A key feeds one release (FT111): the raw secureSum has its own.
    totalsKey: atServer(i32([2])),
  },
  ({ labels, mask, count, key, round, totalsKey }) => {
    // Each client's counts per class (padding has mask 0), and its label frequencies c_i / n_i, in [0, 1].
    const counts = map((y, m) => sum(mul(oneHot(y, CLASSES), expandDims(m, -1)), 0), labels, mask);
    const frequencies = map((c, n) => div(c, maximum(n, 1)), counts, count);
    // next: the updates, each client's { mask, count } (the count is the mean's weight), and the chain's inputs.
    const { value: shares } = chain.next(frequencies, { mask, count }, { key, round });
    // The exact sum of the counts: int32 in [0, MAX_EXAMPLES] per client and class.
    const totals = secureSum(map((c) => cast(c, "int32"), counts), { bits: 30, key: totalsKey, range: [0, MAX_EXAMPLES] });
    return { shares, totals };
  },
  { name: "label_shares" },
);

/** `clients` clients with 1..MAX_EXAMPLES labels each, skewed towards a class of their own. */
export function syntheticLabels(rng: Rng, clients: number): number[][] {
  return Array.from({ length: clients }, (_, i) =>
    Array.from({ length: rng.int(1, MAX_EXAMPLES + 1) }, () => (rng.float() < 0.6 ? i % CLASSES : rng.int(0, CLASSES))),
  );
}

/** Runs the program on the clients' labels: the shares (a mean) and the totals (a sum), as numbers. */
export async function release(labels: readonly (readonly number[])[]): Promise<{ shares: number[]; totals: number[] }> {
  const data = clientsFrom(labels.map((y) => ({ y: [...y] })), { dtypes: { y: "int32" } });
  const { y, mask, count } = padClients(data);
  const out = await labelShares.run({ labels: y, mask, count, key: [7, 11], round: 0, totalsKey: [13, 17] });
  const result = { shares: Array.from(await out.shares.data(), Number), totals: Array.from(await out.totals.data()) };
  out.shares.dispose();
  out.totals.dispose();
  return result;
}

async function main(): Promise<void> {
  const labels = syntheticLabels(Rng.fromSeed(0), 12);
  const { shares, totals } = await release(labels);
  console.log(`label_shares: ${labelShares.signature}`);
  console.log(`sum of counts (secureSum):         ${totals.join(", ")}`);
  console.log(`mean label share (secure next):    ${shares.map((v) => v.toFixed(4)).join(", ")}`);
  console.log(`sum of counts / examples, checked: ${totals.map((t) => (t / totals.reduce((a, b) => a + b, 0)).toFixed(4)).join(", ")}`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) await main();
