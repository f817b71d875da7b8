/**
 * The server's last step: rebuild, from the unmask shares, the self-mask seed of every client
 * whose masked vector arrived and the masking secret key of every client that shared keys but
 * sent no masked vector, then take their masks out of the running sum. Each rebuilt secret is
 * checked against the client's commitment (the seed's hash, its advertised public key); a
 * share off the committed polynomial is logged with its sender. A secret that cannot be rebuilt
 * aborts the round: the sum would still hold an unremoved mask.
 *
 * For a dropped client d and each surviving neighbour v, the server derives s_dv from d's
 * rebuilt key and v's public key (as v did from its key and d's): these are pair secrets of a
 * client whose vector the server never received, so they unmask nothing. In a round that
 * reuses keys (reuse.ts) d's key is never rebuilt (it would give d's pair seeds of the window's
 * earlier rounds too): each surviving neighbour v reveals s_dv of this round alone.
 */
import { equalBytes, pairSecret, publicKeyOf, seedCommitment } from "./keys.js";
import { applyMask, pairSign } from "./masks.js";
import type { ResolvedSecAggParams } from "./params.js";
import { type SubmittedShare, rebuildSecret } from "./shares.js";
import type { NeighbourGraph } from "./graph.js";
import { fromBase64 } from "./codec.js";
import type { Unmask } from "./messages.js";

/** A client's advertised public keys: the encryption key as sent (the server only forwards it). */
export interface Advertised {
  readonly encryptionKey: string;
  readonly maskingKey: Uint8Array;
  /** Its Ed25519 identity key and its signature over its keys (base64, forwarded to its neighbours as sent). */
  readonly identityKey: string;
  readonly signature: string;
}

/** A client's share-keys message: its seed commitments (one per round of the key window) and one sealed share pack per neighbour. */
export interface SharedKeys {
  readonly seedCommitments: readonly Uint8Array[];
  readonly sealed: ReadonlyMap<string, { readonly nonce: string; readonly ciphertext: string }>;
}

/** The shares a client sent in the unmask step, by the client they are shares of. */
export interface UnmaskShares {
  readonly seedShares: ReadonlyMap<string, Uint8Array>;
  readonly keyShares: ReadonlyMap<string, Uint8Array>;
  /** In a round that reuses keys: its pair seed of this round with each dropped neighbour. */
  readonly pairSeeds: ReadonlyMap<string, Uint8Array>;
}

export interface MaskRemoval {
  readonly params: ResolvedSecAggParams;
  /** The session and round of the setup that made the keys: this round's, or an earlier one's it reuses. */
  readonly keysSession: string;
  readonly keysRound: number;
  readonly graph: NeighbourGraph;
  /** The clients whose masked vectors are in the sum. */
  readonly survivors: readonly string[];
  /** The clients that shared keys but sent no masked vector: their neighbours masked with them. */
  readonly droppedAfterSharing: readonly string[];
  readonly shared: ReadonlyMap<string, SharedKeys>;
  readonly advertised: ReadonlyMap<string, Advertised>;
  readonly unmasked: ReadonlyMap<string, UnmaskShares>;
  /** The running sum of the masked vectors; the masks are removed in place. */
  readonly sum: Uint32Array;
  readonly log: (message: string, client: string) => void;
}

/**
 * A client's unmask answer against what the server asked of it: seed shares of the survivors
 * it was asked about, and for the dropped ones key shares (a round that made its keys) or pair
 * seeds (a round that reuses keys: no key is ever rebuilt there, reuse.ts), each client once.
 * The shares, or why they are refused.
 */
export function checkUnmask(m: Unmask, asked: { readonly survivors: ReadonlySet<string>; readonly dropped: ReadonlySet<string> }, reusedKeys: boolean): UnmaskShares | string {
  const seedShares = new Map(m.seed_shares.map((s) => [s.of, fromBase64(s.share)!]));
  const keyShares = new Map(m.key_shares.map((s) => [s.of, fromBase64(s.share)!]));
  const pairSeeds = new Map((m.pair_seeds ?? []).map((s) => [s.of, fromBase64(s.seed)!]));
  if (seedShares.size !== m.seed_shares.length || keyShares.size !== m.key_shares.length || pairSeeds.size !== (m.pair_seeds?.length ?? 0)) return "a client's share is given twice";
  if (!reusedKeys && m.pair_seeds !== undefined) return "pair seeds in a round that made its keys";
  if (reusedKeys && keyShares.size > 0) return "key shares in a round that reuses keys";
  for (const of of seedShares.keys()) if (!asked.survivors.has(of)) return `a seed share of ${of}, which the server did not ask for`;
  for (const [what, shares] of [["key share", keyShares], ["pair seed", pairSeeds]] as const)
    for (const of of shares.keys()) if (!asked.dropped.has(of)) return `a ${what} of ${of}, which the server did not ask for`;
  return { seedShares, keyShares, pairSeeds };
}

export type Removal = { readonly ok: true } | { readonly ok: false; readonly reason: string };

function sharesOf(client: string, kind: "seedShares" | "keyShares", unmasked: ReadonlyMap<string, UnmaskShares>): SubmittedShare[] {
  const out: SubmittedShare[] = [];
  for (const [from, shares] of unmasked) {
    const share = shares[kind].get(client);
    if (share) out.push({ from, share });
  }
  return out;
}

export async function removeMasks(r: MaskRemoval): Promise<Removal> {
  const { params, graph, sum } = r;
  const t = params.reconstruction_threshold;
  const survivors = new Set(r.survivors);
  const modulus = params.modulus_range;

  const reused = params.round !== r.keysRound;
  for (const u of r.survivors) {
    const commitment = r.shared.get(u)!.seedCommitments[params.round - r.keysRound]!;
    const rebuilt = await rebuildSecret(sharesOf(u, "seedShares", r.unmasked), t, (seed) =>
      equalBytes(seedCommitment(seed, params.round, u), commitment),
    );
    for (const from of rebuilt.inconsistent) r.log(`${from}'s share of ${u}'s self-mask seed is inconsistent`, from);
    if (rebuilt.secret === null) return { ok: false, reason: `cannot rebuild ${u}'s self-mask seed: ${rebuilt.reason}` };
    applyMask(sum, rebuilt.secret, -1, modulus);
    rebuilt.secret.fill(0);
  }

  for (const d of r.droppedAfterSharing) {
    const maskedWithD = [...graph.get(d)!].filter((v) => survivors.has(v));
    if (maskedWithD.length === 0) continue; // no surviving vector carries a mask of d's
    if (reused) {
      for (const v of maskedWithD) {
        const secret = r.unmasked.get(v)?.pairSeeds.get(d);
        if (secret === undefined) return { ok: false, reason: `${v} gave no pair seed with dropped client ${d}` };
        applyMask(sum, secret, pairSign(v, d) === 1 ? -1 : 1, modulus);
      }
      continue;
    }
    const publicKey = r.advertised.get(d)!.maskingKey;
    const rebuilt = await rebuildSecret(sharesOf(d, "keyShares", r.unmasked), t, (key) => equalBytes(publicKeyOf(key), publicKey));
    for (const from of rebuilt.inconsistent) r.log(`${from}'s share of ${d}'s masking key is inconsistent`, from);
    if (rebuilt.secret === null) return { ok: false, reason: `cannot rebuild dropped client ${d}'s masking key: ${rebuilt.reason}` };
    for (const v of maskedWithD) {
      const secret = pairSecret(rebuilt.secret, r.advertised.get(v)!.maskingKey, "pair-mask", r.keysSession, params.round, d, v);
      // v added pairSign(v, d) PRG(s_vd); take it out.
      applyMask(sum, secret, pairSign(v, d) === 1 ? -1 : 1, modulus);
      secret.fill(0);
    }
    rebuilt.secret.fill(0);
  }
  return { ok: true };
}
