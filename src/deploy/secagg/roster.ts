/**
 * A client's check of the signed key list a share-keys request carries (step 2): each client
 * once, this client's own keys as it advertised them, at least min_clients clients (FT372),
 * every other entry signed under the identity key this client pinned for it (FT357), and the
 * graph seed the list gives (FT371). The server cannot hand a client keys of its own making,
 * nor choose who neighbours whom.
 */
import { fromBase64, toBase64 } from "./codec.js";
import { graphSeed, publicGraph } from "./graph.js";
import { type IdentityPins, keysTranscript, verifyTranscript, SIGNATURE_BYTES } from "./identity.js";
import { KEY_BYTES, type KeyPair } from "./keys.js";
import type { ShareKeysRequest } from "./messages.js";
import { type ResolvedSecAggParams, degreeOf } from "./params.js";
import type { Neighbour } from "./reuse.js";

export interface RosterCheck {
  readonly id: string;
  readonly session: string;
  readonly params: ResolvedSecAggParams;
  readonly encryption: KeyPair;
  readonly masking: KeyPair;
  readonly identityKey: Uint8Array;
  readonly pins: IdentityPins;
  /** FT336: a malformed list. */
  refuse(why: string): never;
  /** A list that shows the server deviating: FT357 (a key not signed as pinned), FT371 (the graph), FT372 (too few). */
  leave(code: "FT357" | "FT371" | "FT372", why: string): never;
}

/** This client's neighbours in the graph the list gives, and every listed client's identity key. */
export function checkRoster(request: ShareKeysRequest, c: RosterCheck): { neighbours: (Neighbour & { id: string })[]; identities: Map<string, Uint8Array> } {
  const roster = request.roster;
  const ids = new Set(roster.map((e) => e.id));
  if (ids.size !== roster.length) c.refuse("a client is listed twice in the key list");
  if (roster.length < c.params.min_clients) c.leave("FT372", `${roster.length} clients advertised keys, fewer than the ${c.params.min_clients} the round's setup promised`);
  const own = roster.find((e) => e.id === c.id);
  if (own?.encryption_key !== toBase64(c.encryption.publicKey) || own.masking_key !== toBase64(c.masking.publicKey))
    c.refuse("this client's keys are not in the key list as it advertised them");
  const keys = new Map<string, Neighbour>();
  const identities = new Map<string, Uint8Array>([[c.id, c.identityKey]]);
  for (const e of roster) {
    if (e.id === c.id) continue;
    const encryptionKey = fromBase64(e.encryption_key)!;
    const maskingKey = fromBase64(e.masking_key)!;
    const identityKey = checkSigned(e, encryptionKey, maskingKey, c);
    keys.set(e.id, { encryptionKey, maskingKey, identityKey });
    identities.set(e.id, identityKey);
  }
  const seed = graphSeed(c.session, c.params.round, roster);
  if (seed !== request.graph_seed)
    c.leave("FT371", `the graph seed ${request.graph_seed.slice(0, 16)}... is not the ${seed.slice(0, 16)}... its signed key list gives: the server chose the neighbours`);
  const graph = publicGraph([...ids], Math.min(degreeOf(c.params), roster.length - 1), seed);
  return { neighbours: [...graph.get(c.id)!].map((id) => ({ id, ...keys.get(id)! })), identities };
}

/**
 * A neighbour's keys must carry its signature under its identity key, and that key must be the
 * one this client pinned for it (FT357): the server cannot hand this client keys of its own.
 */
function checkSigned(n: ShareKeysRequest["roster"][number], encryptionKey: Uint8Array, maskingKey: Uint8Array, c: RosterCheck): Uint8Array {
  const identityKey = fromBase64(n.identity_key);
  const signature = fromBase64(n.signature);
  const transcript = keysTranscript(c.session, c.params.round, n.id, encryptionKey, maskingKey);
  if (identityKey?.length !== KEY_BYTES || signature?.length !== SIGNATURE_BYTES || !verifyTranscript(identityKey, transcript, signature))
    c.leave("FT357", `the keys of ${n.id} do not carry its signature for this session and round`);
  if (!c.pins.check(n.id, n.identity_key)) c.leave("FT357", `the identity key shown for ${n.id} is not the one this client pinned for it`);
  return identityKey;
}
