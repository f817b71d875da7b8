/**
 * SecAgg+'s parameters, named as Flower's SecAggPlusWorkflow names them so that its users
 * recognise them, and their resolution for a cohort of n clients.
 *
 * - num_shares: how many Shamir shares each client splits its self-mask seed and its masking
 *   secret key into; it keeps one and sends one to each neighbour, so a client has
 *   num_shares - 1 neighbours in the mask graph. A number in (0, 1] is a proportion of the
 *   cohort (ceil(p n)). An even count is raised by one, so that each client has as many
 *   neighbours on each side of the ring; it is capped at n (then every client neighbours every
 *   other: Bonawitz's original SecAgg).
 * - reconstruction_threshold: how many shares rebuild a secret; a number in (0, 1] is a
 *   proportion of num_shares. It must be a strict majority of num_shares: an honest client
 *   reveals one kind of share per neighbour (a self-mask share or a secret-key share, never
 *   both), so a server that tells half the neighbours "u survived" and the other half
 *   "u dropped" cannot collect a threshold of both kinds.
 * - clipping_range c: each value is clipped to [-c, c] before quantization.
 * - quantization_range Q: the clipped value maps to [0, Q] ((x + c) Q / 2c, rounded
 *   stochastically, so the rounding is unbiased).
 * - modulus_range M: masks and sums live in Z_M; a power of two up to 2^32. The sum of n
 *   quantized values is exact while n Q < M.
 * - vector_length: the length of every client's vector (the program's type fixes it).
 * - round: the round's id. Every message carries it; the transport gives each round a new one.
 * - min_clients: the fewest clients a sum of this round may hold, announced in the setup: a
 *   client refuses a cohort (advertised keys, survivor set) below it (FT372), and a later
 *   setup that promises fewer than an earlier one (rounds.ts). Absent, reconstruction_threshold.
 * - key_rounds: how many rounds one key setup serves (reuse.ts): the round that makes the keys,
 *   and up to key_rounds - 1 rounds after it that reuse them while no client drops. Each client
 *   pre-shares one self-mask seed per round of the window. Absent, 1 (no reuse; FT375 outside
 *   [1, MAX_KEY_ROUNDS]).
 */
import { ftError } from "../../errors/error.js";

export interface SecAggParams {
  readonly round: number;
  readonly vector_length: number;
  readonly num_shares: number;
  readonly reconstruction_threshold: number;
  readonly clipping_range: number;
  readonly quantization_range: number;
  readonly modulus_range: number;
  readonly min_clients?: number;
  readonly key_rounds?: number;
}

/** The parameters for one cohort: integer share counts, and the cohort's size. */
export interface ResolvedSecAggParams extends SecAggParams {
  /** The number of clients the round starts with. */
  readonly clients: number;
  /** The fewest clients a sum may hold: at least reconstruction_threshold. */
  readonly min_clients: number;
  readonly key_rounds: number;
}

/** Flower's defaults for the ranges (clipping 8, quantization 2^22, modulus 2^32). */
export const SECAGG_DEFAULTS = {
  clipping_range: 8,
  quantization_range: 2 ** 22,
  modulus_range: 2 ** 32,
} as const;

/** The longest vector a round takes: 2^24 words is a 64 MiB masked input. */
export const MAX_VECTOR_LENGTH = 2 ** 24;
/** The largest cohort: Shamir over GF(256) has 255 share coordinates. */
export const MAX_SHARES = 255;
export const MAX_CLIENTS = 100_000;
/** The most rounds one key setup serves: each round of the window adds a seed share per neighbour to the share-keys message. */
export const MAX_KEY_ROUNDS = 16;

const bad = (what: string, why: string) => ftError("FT335", { what, why });

type RangeName = "clipping_range" | "quantization_range" | "modulus_range";
/** The domain of each range (Flower's; masks are 32-bit words): what a value must be, and the test. */
export const rangeDomains: Readonly<Record<RangeName, { readonly expected: string; holds(value: number): boolean }>> = {
  clipping_range: { expected: "a finite number > 0", holds: (x) => Number.isFinite(x) && x > 0 },
  quantization_range: { expected: "a whole number >= 1", holds: (x) => Number.isSafeInteger(x) && x >= 1 },
  modulus_range: { expected: "a power of two from 2 to 2^32 (4294967296)", holds: (x) => Number.isSafeInteger(x) && x >= 2 && x <= 2 ** 32 && Number.isInteger(Math.log2(x)) },
};

/** Whether the sum of `clients` values quantized to [0, quantization_range] is exact mod modulus_range (it cannot wrap). */
export const sumFits = (clients: number, quantizationRange: number, modulusRange: number): boolean => clients * quantizationRange < modulusRange;

const isProportion = (x: number): boolean => x > 0 && x <= 1;

/** ceil(p n) for a proportion p, without float error: 0.14 x 50 is 7.000000000000001 in binary, and 7 is meant. */
const ceilOfProportion = (p: number, n: number): number => Math.ceil(p * n - 1e-9);

/**
 * SecAgg+'s default neighbour count for n clients, after Bell et al. 2020: a degree that grows
 * as log n (2 ceil(log2 n) + 1 shares, odd), all clients below 8.
 */
export function defaultNumShares(clients: number): number {
  return Math.min(clients, 2 * Math.ceil(Math.log2(Math.max(2, clients))) + 1);
}

/**
 * The num_shares that survives any `dropouts` clients leaving after their masked input, with a
 * majority threshold: every seed keeps num_shares - dropouts >= threshold shares when
 * num_shares >= 2 dropouts + 1. This is a guarantee whatever the graph, so it grows with the
 * dropouts (0.6 n + 1 for 30%); the log n degree of defaultNumShares tolerates random dropouts
 * with high probability only, as Bell et al. analyse, and for large n.
 */
export function numSharesForDropouts(clients: number, dropouts: number): number {
  return Math.min(clients, Math.max(defaultNumShares(clients), 2 * dropouts + 1));
}

/** The smallest threshold the parameters take: a strict majority of the shares. */
export const majorityThreshold = (numShares: number): number => Math.floor(numShares / 2) + 1;

/**
 * num_shares for a cohort of `clients` clients: a proportion of the cohort (ceil(p n)) or a
 * count, raised to odd and capped at n (FT335).
 */
export function resolveNumShares(numShares: number, clients: number): number {
  let shares: number;
  if (isProportion(numShares)) shares = ceilOfProportion(numShares, clients);
  else if (Number.isSafeInteger(numShares) && numShares >= 2) shares = numShares;
  else throw bad("num_shares", `must be a whole number >= 2 or a proportion in (0, 1], got ${numShares}`);
  if (shares % 2 === 0) shares += 1;
  shares = Math.min(shares, clients);
  if (shares < 2) throw bad("num_shares", `${numShares} of ${clients} clients is ${shares} share: each client needs a neighbour to mask with`);
  if (shares > MAX_SHARES) throw bad("num_shares", `at most ${MAX_SHARES} shares (Shamir over GF(256)), got ${shares}`);
  return shares;
}

/** reconstruction_threshold for `shares` shares: a proportion of them (ceil(p shares)) or a count; a strict majority (FT335). */
export function resolveThreshold(threshold: number, shares: number): number {
  let count: number;
  if (isProportion(threshold)) count = ceilOfProportion(threshold, shares);
  else if (Number.isSafeInteger(threshold)) count = threshold;
  else throw bad("reconstruction_threshold", `must be a whole number or a proportion in (0, 1], got ${threshold}`);
  if (count < 2 || count > shares || 2 * count <= shares)
    throw bad("reconstruction_threshold", `must be at least 2, at most num_shares (${shares}) and a strict majority of it, got ${count}`);
  return count;
}

/** Checks the parameters and resolves the share counts for `clients` clients (FT335 on bad values). */
export function resolveSecAggParams(params: SecAggParams, clients: number): ResolvedSecAggParams {
  const { round, vector_length, num_shares, reconstruction_threshold, clipping_range, quantization_range, modulus_range } = params;
  if (!Number.isSafeInteger(round) || round < 0) throw bad("round", `must be a whole number >= 0, got ${round}`);
  if (!Number.isSafeInteger(clients) || clients < 2 || clients > MAX_CLIENTS)
    throw bad("cohort", `needs between 2 and ${MAX_CLIENTS} clients, got ${clients}`);
  if (!Number.isSafeInteger(vector_length) || vector_length < 1 || vector_length > MAX_VECTOR_LENGTH)
    throw bad("vector_length", `must be a whole number in [1, ${MAX_VECTOR_LENGTH}], got ${vector_length}`);
  for (const [name, value] of [["clipping_range", clipping_range], ["quantization_range", quantization_range], ["modulus_range", modulus_range]] as const)
    if (!rangeDomains[name].holds(value)) throw bad(name, `must be ${rangeDomains[name].expected}, got ${value}`);
  if (!sumFits(clients, quantization_range, modulus_range))
    throw bad(
      "modulus_range",
      `${clients} clients x quantization_range ${quantization_range} must stay below modulus_range ${modulus_range} for the sum to be exact`,
    );

  const shares = resolveNumShares(num_shares, clients);
  const threshold = resolveThreshold(reconstruction_threshold, shares);
  const promised = params.min_clients ?? threshold;
  if (!Number.isSafeInteger(promised) || promised < 1 || promised > MAX_CLIENTS) throw bad("min_clients", `must be a whole number in [1, ${MAX_CLIENTS}], got ${promised}`);
  // Never below the threshold: a step with fewer answers aborts anyway. Above the cohort, the round aborts at its first step.
  const minClients = Math.max(threshold, promised);
  const keyRounds = resolveKeyRounds(params.key_rounds ?? 1);

  return {
    round,
    vector_length,
    num_shares: shares,
    reconstruction_threshold: threshold,
    clipping_range,
    quantization_range,
    modulus_range,
    clients,
    min_clients: minClients,
    key_rounds: keyRounds,
  };
}

/** key_rounds checked: a whole number in [1, MAX_KEY_ROUNDS] (FT375). */
export function resolveKeyRounds(keyRounds: number): number {
  if (!Number.isSafeInteger(keyRounds) || keyRounds < 1 || keyRounds > MAX_KEY_ROUNDS) throw ftError("FT375", { max: MAX_KEY_ROUNDS, value: keyRounds });
  return keyRounds;
}

/** A client's check of the parameters the server sent: they must be a fixed point of resolution. */
export function checkResolvedParams(params: ResolvedSecAggParams): ResolvedSecAggParams {
  const again = resolveSecAggParams(params, params.clients);
  for (const key of Object.keys(again) as (keyof ResolvedSecAggParams)[]) {
    if (again[key] !== params[key]) throw bad(key, `the server sent ${params[key]}, which resolves to ${again[key]}`);
  }
  return again;
}

/** Neighbours per client in the mask graph: num_shares - 1 (the client keeps one share). */
export const degreeOf = (p: ResolvedSecAggParams): number => p.num_shares - 1;
