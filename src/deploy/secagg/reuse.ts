/**
 * Key reuse across rounds (Flamingo's idea, Ma et al. 2023: one setup, many summations): after
 * a round in which no client dropped, the next rounds of the key window (params.key_rounds)
 * skip advertise-keys and share-keys. The server's setup names the key setup to reuse and the
 * client answers it with its masked input at once: three messages a round instead of five.
 *
 * Why it stays private (docs/deployment.md, "Key reuse across rounds"):
 * - The pair-mask seed of each round is HKDF of the pair's X25519 secret with the key setup's
 *   session and the round in its info (keys.ts): a fresh seed per round, never one seed twice.
 * - The self-mask seeds are fresh random bytes, one per round of the window, each shared (and
 *   committed to) in the setup round and revealed only at the unmask step of its own round.
 * - A masking key rebuilt from its shares gives the server that client's pair seeds of every
 *   round of the setup. So keys are reused only after a round whose survivor set is the whole
 *   signed key list: an honest client hands out key shares only of neighbours missing from the
 *   set it signed, and it signs one set a round, so if every client of the list signed the
 *   whole list, no honest client handed out a key share. The client checks exactly that: the
 *   reuse setup must carry every listed client's signature over the set it signed itself (FT373).
 * - In a round that reuses keys, a dropped neighbour's pair masks are removed with the pair
 *   seeds of that round only, which its surviving neighbours reveal; its masking key is never
 *   rebuilt, so its other rounds stay hidden. Any dropout ends the window.
 * - Each round of the window is served once and in increasing order (FT374): a second vector
 *   masked with one self-mask seed would reveal the difference of two inputs.
 */
import { ftError } from "../../errors/error.js";
import { fromBase64 } from "./codec.js";
import type { NeighbourGraph } from "./graph.js";
import { survivorsTranscript, verifyTranscript } from "./identity.js";
import type { KeyPair } from "./keys.js";
import type { Reuse, Setup } from "./messages.js";
import type { ResolvedSecAggParams } from "./params.js";
import type { Advertised, SharedKeys } from "./unmask.js";

export interface Neighbour {
  readonly encryptionKey: Uint8Array;
  readonly maskingKey: Uint8Array;
  readonly identityKey: Uint8Array;
}

/** A neighbour's shares this client holds: of its self-mask seed of each round of the window, and of its masking key. */
export interface HeldShares {
  readonly seedShares: readonly Uint8Array[];
  readonly keyShare: Uint8Array;
}

/** What a client keeps of its key setup for the rounds of the window. */
export interface KeySetup {
  readonly session: string;
  readonly round: number;
  readonly params: ResolvedSecAggParams;
  readonly masking: KeyPair;
  /** Its self-mask seeds, one per round of the window (zeroed once used), and its own share of each. */
  readonly seeds: readonly Uint8Array[];
  readonly ownSeedShares: readonly Uint8Array[];
  readonly neighbours: ReadonlyMap<string, Neighbour>;
  /** The neighbours that shared keys with this client: its pair masks, and whose shares it holds. */
  readonly maskedWith: ReadonlySet<string>;
  readonly held: ReadonlyMap<string, HeldShares>;
  /** Every client of the signed key list, with its identity key (each signature was checked). */
  readonly roster: ReadonlyMap<string, Uint8Array>;
}

/** A round this client finished (it answered the unmask step): what a reuse setup is checked against. */
export interface FinishedRound {
  readonly keys: KeySetup;
  readonly session: string;
  readonly round: number;
  readonly survivors: ReadonlySet<string>;
  /** False once its key setup's secrets were dropped (the window is over, a dropout, a refused reuse). */
  readonly usable: boolean;
}

/** Zeroes every secret of a key setup: its window is over. */
export function wipe(keys: KeySetup): void {
  keys.masking.secretKey.fill(0);
  for (const b of [...keys.seeds, ...keys.ownSeedShares]) b.fill(0);
  for (const h of keys.held.values()) for (const b of [...h.seedShares, h.keyShare]) b.fill(0);
}

const sameSet = (a: ReadonlySet<string>, b: Iterable<string>): boolean => {
  const list = [...b];
  return list.length === a.size && list.every((id) => a.has(id));
};

/** The parameters two rounds of one key setup share: all but the round. */
const sameParams = (a: ResolvedSecAggParams, b: ResolvedSecAggParams): boolean =>
  (Object.keys(a) as (keyof ResolvedSecAggParams)[]).every((k) => k === "round" || a[k] === b[k]);

/**
 * The client's decision on a setup that asks it to reuse its last key setup: the key setup it
 * may reuse, or FT374 (a round it is past) / FT373 (anything else that makes reuse unsafe).
 * `last` is its last round, if it answered that round's unmask step.
 */
export function checkReuse(setup: Setup, reuse: Reuse, last: FinishedRound | undefined, params: ResolvedSecAggParams): KeySetup {
  const refuse = (why: string): never => {
    throw ftError("FT373", { client: setup.to, why });
  };
  if (last === undefined) return refuse(`round ${setup.round} asks to reuse a key setup, and this client holds none from a round it finished`);
  const keys = last.keys;
  if (setup.round <= last.round) throw ftError("FT374", { client: setup.to, why: `a setup of round ${setup.round} reusing keys, and this client already finished round ${last.round}` });
  if (!sameSet(last.survivors, keys.roster.keys()))
    return refuse(`${keys.roster.size - last.survivors.size} of the ${keys.roster.size} clients of the key list were not in round ${last.round}'s survivor set: their masking keys may have been rebuilt`);
  if (!last.usable) return refuse(`the key setup of round ${keys.round} was dropped after round ${last.round} (its window is over, or a reuse was refused)`);
  if (reuse.keys_session !== keys.session || reuse.keys_round !== keys.round)
    return refuse(`the setup names the key setup of round ${reuse.keys_round} (session ${reuse.keys_session}), this client holds that of round ${keys.round}`);
  if (setup.round - keys.round >= keys.params.key_rounds) return refuse(`round ${setup.round} is past the ${keys.params.key_rounds} rounds of the key setup of round ${keys.round}`);
  if (!sameParams(keys.params, params)) return refuse("its parameters are not those of the key setup");
  const transcript = survivorsTranscript(last.session, last.round, [...last.survivors]);
  const signers = new Set<string>();
  for (const { id, signature } of reuse.signatures) {
    const identityKey = keys.roster.get(id);
    if (identityKey === undefined || signers.has(id)) return refuse(`a signature of ${id}, which is not in the key list or is listed twice`);
    if (!verifyTranscript(identityKey, transcript, fromBase64(signature)!)) return refuse(`the signature of ${id} does not verify over round ${last.round}'s survivor set: it was told another set`);
    signers.add(id);
  }
  if (signers.size !== keys.roster.size) return refuse(`${signers.size} of the ${keys.roster.size} clients signed round ${last.round}'s survivor set: one that did not may have handed out key shares`);
  return keys;
}

/** What a server keeps of a round for the next rounds of its key window. */
export interface ReusedKeys {
  readonly session: string;
  readonly round: number;
  readonly params: ResolvedSecAggParams;
  readonly advertised: ReadonlyMap<string, Advertised>;
  readonly shared: ReadonlyMap<string, SharedKeys>;
  readonly graph: NeighbourGraph;
  /** The last round of the window so far, and every client's signature over its survivor set (the whole key list). */
  readonly lastRound: number;
  readonly signatures: ReadonlyMap<string, string>;
}

/** Why a round of `clients` with `params` cannot reuse `keys` (a full setup then), or undefined when it can. */
export function reuseMisfit(keys: ReusedKeys, params: ResolvedSecAggParams, clients: readonly string[]): string | undefined {
  if (!sameSet(new Set(keys.advertised.keys()), clients)) return "the cohort is not the key setup's";
  if (!sameParams(keys.params, params)) return "the parameters changed";
  if (params.round <= keys.lastRound) return `round ${params.round} is not after round ${keys.lastRound}`;
  if (params.round - keys.round >= params.key_rounds) return `the ${params.key_rounds} rounds of the key setup of round ${keys.round} are over`;
  return undefined;
}
