/**
 * SecAgg+ against a server that lies (Bell et al. 2020's malicious server), played by our own
 * server code with its messages altered on the way out:
 * - it substitutes a neighbour's keys with keys of its own making, signed by an identity of its
 *   own or carrying the neighbour's real signature: the client refuses (FT357) before it seals
 *   anything, so the server never holds a share sealed to a key it knows;
 * - it picks the neighbour graph itself (a seed of its choice, or a key list it altered to
 *   hash as it likes): refused (FT371, FT357);
 * - at the consistency check it tells some of a survivor's neighbours that it dropped and the
 *   others that it survived, to collect both its self-mask seed and its masking key: the clients
 *   told the minority's set never see threshold-many signatures over it, abort (FT370) and reveal
 *   nothing, so the server holds no key share of the survivor at all and its vector stays masked;
 * - it tells each client its own survivor set, chosen so that without the check the shares
 *   revealed would unmask the sum of two clients (below the threshold): no set gathers
 *   threshold-many signatures, and no client reveals anything.
 */
import { x25519 } from "@noble/curves/ed25519.js";
import { describe, expect, it } from "vitest";
import { type ConsistencyCheck, type SecAggParams, type ShareKeysRequest, type Unmask, SecAggRounds, SecAggServer, encodeMessage, webCryptoRandomBytes } from "../../src/deploy/secagg/index.js";
import { fromBase64, toBase64 } from "../../src/deploy/secagg/codec.js";
import { graphSeed } from "../../src/deploy/secagg/graph.js";
import { keysTranscript, newIdentity, signTranscript } from "../../src/deploy/secagg/identity.js";
import { PROTOCOL, equalBytes, seedCommitment } from "../../src/deploy/secagg/keys.js";
import { applyMask } from "../../src/deploy/secagg/masks.js";
import { rebuildSecret } from "../../src/deploy/secagg/shares.js";
import { driveRounds, ids, randomVectors } from "./secagg-helpers.js";

const params = (round: number): SecAggParams => ({ round, vector_length: 2048, num_shares: 5, reconstruction_threshold: 3, clipping_range: 1, quantization_range: 2 ** 16, modulus_range: 2 ** 32 });

/** Chi-square of the top 4 bits against uniform (15 degrees of freedom); a uniform vector exceeds 57.4 once in a million. */
function chiSquare(words: Uint32Array): number {
  const bins = new Array<number>(16).fill(0);
  for (const w of words) bins[w >>> 28]!++;
  const expected = words.length / 16;
  return bins.reduce((sum, count) => sum + (count - expected) ** 2 / expected, 0);
}

/** Five clients that met in an honest round 1 (each pinned the others' identity keys), and round 2's server at its share-keys step. */
async function afterAnHonestRound() {
  const vectors = randomVectors(ids(5), 2048, 0.5);
  const rounds = new Map(ids(5).map((id) => [id, new SecAggRounds()]));
  expect((await driveRounds(new SecAggServer(params(1), ids(5)), rounds, vectors))?.kind).toBe("done");
  const server = new SecAggServer(params(2), ids(5));
  const outcome = await driveRounds(server, rounds, vectors, "share-keys");
  if (outcome?.kind !== "messages") throw new Error("no share-keys step");
  return { rounds, vectors, server, requests: outcome.messages as ReadonlyMap<string, ShareKeysRequest> };
}

/** A share-keys request whose key list the server altered, with the graph seed recomputed so that only the alteration can be caught. */
function altered(request: ShareKeysRequest, session: string, change: (entry: ShareKeysRequest["roster"][number]) => ShareKeysRequest["roster"][number]): ShareKeysRequest {
  const roster = request.roster.map(change);
  return { ...request, roster, graph_seed: graphSeed(session, request.round, roster) };
}

/**
 * A round of five clients run by the real server to its consistency check; then the lying
 * server announces to each client the set `told(id)`, collects the signatures, forwards to each
 * client those over its own set (the liar's best), and gathers whatever the clients reveal.
 */
async function lieAtTheCheck(round: number, told: (id: string) => string[]) {
  const vectors = randomVectors(ids(5), 2048, 0.5);
  const rounds = new Map(ids(5).map((id) => [id, new SecAggRounds()]));
  const server = new SecAggServer(params(round), ids(5));
  const masked = new Map<string, Uint32Array>();
  const commitments = new Map<string, Uint8Array>();
  // The real server to its consistency-check requests, recording what it received.
  const recording = new Map([...rounds].map(([id, r]) => [id, Object.assign(Object.create(r) as SecAggRounds, {
    respond: async (n: number, raw: Uint8Array, vector: () => Float32Array) => {
      const answer = await r.respond(n, raw, vector);
      if (answer.step === "share-keys") commitments.set(id, fromBase64(answer.seed_commitments[0]!)!);
      if (answer.step === "masked-input") masked.set(id, answer.vector.slice());
      return answer;
    },
  })]));
  const outcome = await driveRounds(server, recording, vectors, "consistency-check");
  if (outcome?.kind !== "messages") throw new Error("no consistency check");
  const signatures = new Map<string, string>();
  for (const id of ids(5)) {
    const lie = { protocol: PROTOCOL, round, step: "consistency-check", to: id, survivors: told(id) } as const;
    const answer = (await rounds.get(id)!.respond(round, encodeMessage(lie), () => vectors.get(id)!)) as ConsistencyCheck;
    signatures.set(id, answer.signature);
  }
  const sameSet = (a: string, b: string) => JSON.stringify(told(a).sort()) === JSON.stringify(told(b).sort());
  const answers: Unmask[] = [];
  const refusals: string[] = [];
  for (const id of ids(5)) {
    const forwarded = ids(5).filter((other) => sameSet(id, other)).map((other) => ({ id: other, signature: signatures.get(other)! }));
    const request = { protocol: PROTOCOL, round, step: "unmask", to: id, signatures: forwarded } as const;
    await rounds.get(id)!.respond(round, encodeMessage(request), () => vectors.get(id)!).then(
      (answer) => answers.push(answer as Unmask),
      (error: Error) => refusals.push(error.message),
    );
  }
  /** What the server can rebuild of `u` from every share it was given: its seed (checked by its commitment) and its masking key (by its public key). */
  const rebuilt = async (u: string) => {
    const sharesOf = (kind: "seed_shares" | "key_shares") => answers.flatMap((a) => a[kind].filter((s) => s.of === u).map((s) => ({ from: a.from, share: fromBase64(s.share)! })));
    const seed = await rebuildSecret(sharesOf("seed_shares"), 3, (b) => equalBytes(seedCommitment(b, round, u), commitments.get(u)!));
    const keyShares = sharesOf("key_shares");
    const key = await rebuildSecret(keyShares, 3, () => true);
    return { seed: seed.secret, key: key.secret, keyShares: keyShares.length };
  };
  return { masked, answers, refusals, rebuilt };
}

describe("SecAgg+ against a lying server", () => {
  it("a neighbour's keys replaced by the server's, under an identity of its own: refused (FT357), nothing sealed", async () => {
    const { rounds, vectors, server, requests } = await afterAnHonestRound();
    const fake = newIdentity(webCryptoRandomBytes);
    const [e, m] = [x25519.getPublicKey(x25519.utils.randomSecretKey()), x25519.getPublicKey(x25519.utils.randomSecretKey())];
    const lie = altered(requests.get("client-000")!, server.session, (n) =>
      n.id !== "client-001" ? n : { ...n, encryption_key: toBase64(e), masking_key: toBase64(m), identity_key: toBase64(fake.publicKey), signature: toBase64(signTranscript(fake, keysTranscript(server.session, 2, "client-001", e, m))) },
    );
    await expect(rounds.get("client-000")!.respond(2, encodeMessage(lie), () => vectors.get("client-000")!)).rejects.toThrow(
      /FT357: SecAgg\+ client client-000: the identity key shown for client-001 is not the one this client pinned for it; it leaves the round/,
    );
  });

  it("a neighbour's keys replaced while its real identity key and signature are kept: refused (FT357)", async () => {
    const { rounds, vectors, server, requests } = await afterAnHonestRound();
    const lie = altered(requests.get("client-003")!, server.session, (n) => (n.id === "client-004" ? { ...n, encryption_key: toBase64(x25519.getPublicKey(x25519.utils.randomSecretKey())) } : n));
    await expect(rounds.get("client-003")!.respond(2, encodeMessage(lie), () => vectors.get("client-003")!)).rejects.toThrow(/FT357: .*the keys of client-004 do not carry its signature for this session and round/);
  });

  it("a neighbour graph of the server's choosing: another seed is refused (FT371), and so is a key list altered to hash to one (FT357)", async () => {
    const { rounds, vectors, server, requests } = await afterAnHonestRound();
    const request = requests.get("client-002")!;
    await expect(rounds.get("client-002")!.respond(2, encodeMessage({ ...request, graph_seed: "ab".repeat(32) }), () => vectors.get("client-002")!)).rejects.toThrow(
      /FT371: SecAgg\+ client client-002: the graph seed abababababababab\.\.\. is not the [0-9a-f]{16}\.\.\. its signed key list gives: the server chose the neighbours; it leaves the round/,
    );
    // Grinding the seed through a signature it made up for another client: every signature in the list is checked.
    const ground = altered(request, server.session, (n) => (n.id === "client-000" ? { ...n, signature: toBase64(webCryptoRandomBytes(64)) } : n));
    await expect(rounds.get("client-002")!.respond(2, encodeMessage(ground), () => vectors.get("client-002")!)).rejects.toThrow(/FT357: .*the keys of client-000 do not carry its signature/);
  });

  it("telling two of a survivor's neighbours it dropped and the others it survived: those two abort (FT370), no key share of it leaves, its input stays masked", async () => {
    const victim = "client-004";
    const all = ids(5);
    const toldDropped = new Set(["client-000", "client-001"]);
    const lie = await lieAtTheCheck(3, (id) => (toldDropped.has(id) ? all.filter((s) => s !== victim) : all));
    // The two told the other set see 2 signatures over it, below the threshold of 3: they reveal nothing.
    expect(lie.refusals).toEqual([
      expect.stringMatching(/FT370: SecAgg\+ client client-000: 2 signatures over the survivor set this client signed, fewer than reconstruction_threshold 3; it reveals nothing/),
      expect.stringMatching(/FT370: SecAgg\+ client client-001: 2 signatures/),
    ]);
    expect(lie.answers.map((a) => a.from)).toEqual(["client-002", "client-003", "client-004"]);
    // Not merely below the threshold: no key share of any client left anyone (every client that revealed was told one set, with no one dropped).
    for (const u of all) {
      const { seed, key, keyShares } = await lie.rebuilt(u);
      expect(keyShares).toBe(0);
      expect(key).toBeNull();
      expect(seed).not.toBeNull(); // seeds only: what unmasks the honest sum of all five, never one input
    }
    // What the server can strip of the victim's vector (its self mask) leaves it behind its pair masks: uniform, no trace of the input.
    const { seed } = await lie.rebuilt(victim);
    const vector = lie.masked.get(victim)!;
    applyMask(vector, seed!, -1, 2 ** 32);
    expect(chiSquare(vector)).toBeLessThan(57.4);
  });

  it("a survivor set of its own for each client, which without the check would unmask the sum of two clients: every client aborts (FT370), nothing leaves", async () => {
    // Without the check each client would reveal seed shares of 000 and 001 and enough key shares of 002, 003 and 004 (each set
    // has the threshold's 3 clients, and each client gives one kind of share per neighbour) for the server to strip every mask
    // from y_000 + y_001: the sum of two clients, below the threshold.
    const told: Record<string, string[]> = {
      "client-000": ["client-000", "client-001", "client-003"],
      "client-001": ["client-000", "client-001", "client-004"],
      "client-002": ["client-000", "client-001", "client-002"],
      "client-003": ["client-000", "client-001", "client-003"],
      "client-004": ["client-000", "client-001", "client-004"],
    };
    // The claim above, counted: each of 000 and 001 is in every set (5 seed shares), each of 002-004 left out of at least 3 (key shares).
    for (const u of ["client-000", "client-001"]) expect(Object.values(told).filter((set) => set.includes(u))).toHaveLength(5);
    for (const w of ["client-002", "client-003", "client-004"]) expect(Object.entries(told).filter(([id, set]) => id !== w && !set.includes(w)).length).toBeGreaterThanOrEqual(3);
    const lie = await lieAtTheCheck(4, (id) => told[id]!);
    expect(lie.answers).toEqual([]);
    expect(lie.refusals).toHaveLength(5);
    for (const refusal of lie.refusals) expect(refusal).toMatch(/FT370: .*[12] signatures over the survivor set this client signed, fewer than reconstruction_threshold 3/);
  });
});
