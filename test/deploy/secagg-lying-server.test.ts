/**
 * SecAgg+ against a server that lies (Bell et al. 2020's malicious server), played by our own
 * server code with its messages altered on the way out:
 * - it substitutes a neighbour's keys with keys of its own making, signed by an identity of its
 *   own or carrying the neighbour's real signature: the client refuses (FT357) before it seals
 *   anything, so the server never holds a share sealed to a key it knows;
 * - it tells some of a survivor's neighbours that it dropped and the others that it survived, to
 *   collect both its self-mask seed and its masking key: each honest neighbour reveals one kind,
 *   the threshold is a strict majority, so it rebuilds one secret only, and the survivor's
 *   vector stays masked (uniform) after everything the server can strip.
 */
import { x25519 } from "@noble/curves/ed25519.js";
import { describe, expect, it } from "vitest";
import { type SecAggParams, type ShareKeysRequest, type Unmask, SecAggRounds, SecAggServer, encodeMessage, webCryptoRandomBytes } from "../../src/deploy/secagg/index.js";
import { fromBase64, toBase64 } from "../../src/deploy/secagg/codec.js";
import { keysTranscript, newIdentity, signTranscript } from "../../src/deploy/secagg/identity.js";
import { equalBytes, seedCommitment } from "../../src/deploy/secagg/keys.js";
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

describe("SecAgg+ against a lying server", () => {
  it("a neighbour's keys replaced by the server's, under an identity of its own: refused (FT357), nothing sealed", async () => {
    const { rounds, vectors, server, requests } = await afterAnHonestRound();
    const fake = newIdentity(webCryptoRandomBytes);
    const encryption = x25519.utils.randomSecretKey();
    const masking = x25519.utils.randomSecretKey();
    const request = requests.get("client-000")!;
    const lie: ShareKeysRequest = {
      ...request,
      neighbours: request.neighbours.map((n) => {
        if (n.id !== "client-001") return n;
        const [e, m] = [x25519.getPublicKey(encryption), x25519.getPublicKey(masking)];
        return { ...n, encryption_key: toBase64(e), masking_key: toBase64(m), identity_key: toBase64(fake.publicKey), signature: toBase64(signTranscript(fake, keysTranscript(server.session, 2, "client-001", e, m))) };
      }),
    };
    await expect(rounds.get("client-000")!.respond(2, encodeMessage(lie), () => vectors.get("client-000")!)).rejects.toThrow(
      /FT357: SecAgg\+ client client-000: the identity key shown for client-001 is not the one this client pinned for it; it leaves the round/,
    );
  });

  it("a neighbour's keys replaced while its real identity key and signature are kept: refused (FT357)", async () => {
    const { rounds, vectors, requests } = await afterAnHonestRound();
    const request = requests.get("client-003")!;
    const lie: ShareKeysRequest = { ...request, neighbours: request.neighbours.map((n) => (n.id === "client-004" ? { ...n, encryption_key: toBase64(x25519.getPublicKey(x25519.utils.randomSecretKey())) } : n)) };
    await expect(rounds.get("client-003")!.respond(2, encodeMessage(lie), () => vectors.get("client-003")!)).rejects.toThrow(/FT357: .*the keys of client-004 do not carry its signature for this session and round/);
  });

  it("telling half of a survivor's neighbours it dropped and the others it survived: one secret rebuilt at most, its input stays masked", async () => {
    const vectors = randomVectors(ids(5), 2048, 0.5);
    const rounds = new Map(ids(5).map((id) => [id, new SecAggRounds()]));
    const server = new SecAggServer(params(3), ids(5));
    const commitments = new Map<string, Uint8Array>();
    let masked: Uint32Array | undefined;
    // Run to the unmask step, recording the victim's commitment and masked vector as the server receives them.
    let requests = new Map([...server.start()].map(([id, m]) => [id, encodeMessage(m)]));
    let outcome;
    for (;;) {
      for (const [id, raw] of requests) {
        const answer = await rounds.get(id)!.respond(3, raw, () => vectors.get(id)!);
        if (answer.step === "share-keys") commitments.set(id, fromBase64(answer.seed_commitment)!);
        if (answer.step === "masked-input" && id === "client-004") masked = answer.vector.slice();
        server.receive(id, encodeMessage(answer));
      }
      outcome = await server.advance();
      if (outcome.kind !== "messages") throw new Error("ended early");
      if (outcome.step === "unmask") break;
      requests = new Map([...outcome.messages].map(([id, m]) => [id, encodeMessage(m)]));
    }
    // The lie about client-004 (which sent its masked vector): dropped to 000 and 001, survived to 002, 003 and itself.
    const answers: Unmask[] = [];
    for (const [id, request] of outcome.messages) {
      if (request.step !== "unmask") continue;
      const toldDropped = id === "client-000" || id === "client-001";
      const lie = toldDropped ? { ...request, survivors: request.survivors.filter((s) => s !== "client-004"), dropped: [...request.dropped, "client-004"] } : request;
      answers.push((await rounds.get(id)!.respond(3, encodeMessage(lie), () => vectors.get(id)!)) as Unmask);
    }
    const sharesOf = (kind: "seed_shares" | "key_shares") => answers.flatMap((a) => a[kind].filter((s) => s.of === "client-004").map((s) => ({ from: a.from, share: fromBase64(s.share)! })));
    const seed = await rebuildSecret(sharesOf("seed_shares"), 3, (b) => equalBytes(seedCommitment(b, 3, "client-004"), commitments.get("client-004")!));
    const key = await rebuildSecret(sharesOf("key_shares"), 3, () => true);
    expect(seed.secret).not.toBeNull(); // 3 seed shares: its own and two neighbours'
    expect(key.secret).toBeNull(); // 2 key shares: below the threshold
    // What the server can strip (the self mask) leaves the vector behind its pair masks: uniform, no trace of the input.
    applyMask(masked!, seed.secret!, -1, 2 ** 32);
    expect(chiSquare(masked!)).toBeLessThan(57.4);
  });
});
