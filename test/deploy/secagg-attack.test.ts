/**
 * The attack on the server: record its whole state and every byte it receives during a round
 * with dropouts at both recoverable points, then try to learn one client's update from the
 * record. The masked vectors are statistically uniform mod M (chi-square), and stay so after
 * stripping the self masks the record lets the server rebuild; the record holds no
 * pair secret of two clients in the sum, no channel key, no survivor's secret key and no seed
 * of a client whose key it rebuilt, and for no client do its unmask shares rebuild both the
 * self-mask seed and the masking key.
 */
import { x25519 } from "@noble/curves/ed25519.js";
import { describe, expect, it } from "vitest";
import { type Parsed, type SecAggParams, parseClientMessage, parseServerMessage, webCryptoRandomBytes } from "../../src/deploy/secagg/index.js";
import { fromBase64 } from "../../src/deploy/secagg/codec.js";
import { equalBytes, pairSecret, publicKeyOf, seedCommitment } from "../../src/deploy/secagg/keys.js";
import { applyMask, pairSign } from "../../src/deploy/secagg/masks.js";
import { quantizeVector } from "../../src/deploy/secagg/quantize.js";
import { resolveSecAggParams } from "../../src/deploy/secagg/params.js";
import { rebuildSecret } from "../../src/deploy/secagg/shares.js";
import { ids, randomVectors, runRound } from "./secagg-helpers.js";

const params: SecAggParams = {
  round: 11,
  vector_length: 4096,
  num_shares: 9,
  reconstruction_threshold: 5,
  clipping_range: 8,
  quantization_range: 2 ** 22,
  modulus_range: 2 ** 32,
};

/** A recorded message as the parser gives it, loosely typed: the test reads fields of every step. */
type Loose = Record<string, any>;
function parsed(result: Parsed<object>): Loose {
  if (!result.ok) throw new Error(result.reason);
  return result.message;
}

/** Chi-square of the top 4 bits of the words against the uniform distribution (15 degrees of freedom). */
function chiSquare(words: Uint32Array): number {
  const bins = new Array<number>(16).fill(0);
  for (const w of words) bins[w >>> 28]!++;
  const expected = words.length / 16;
  return bins.reduce((sum, count) => sum + (count - expected) ** 2 / expected, 0);
}
/** The chi-square(15) quantile at 1 - 1e-6 (Wilson-Hilferty): a uniform vector exceeds it once in a million. */
const CHI2_15_CRITICAL = 57.4;

/** Every byte string reachable from a value: typed arrays, and strings as UTF-8 and, when base64, decoded. */
function collectBytes(value: unknown, into: Uint8Array[], seen = new Set<unknown>()): void {
  if (value === null || value === undefined || typeof value === "number" || typeof value === "boolean" || typeof value === "function") return;
  if (typeof value === "string") {
    into.push(new TextEncoder().encode(value));
    if (/^[A-Za-z0-9+/]+={0,2}$/.test(value) && value.length % 4 === 0) into.push(fromBase64(value)!);
    return;
  }
  if (seen.has(value)) return;
  seen.add(value);
  if (ArrayBuffer.isView(value)) {
    into.push(new Uint8Array(value.buffer, value.byteOffset, value.byteLength).slice());
    return;
  }
  if (value instanceof Map) {
    for (const [k, v] of value) {
      collectBytes(k, into, seen);
      collectBytes(v, into, seen);
    }
    return;
  }
  if (value instanceof Set || Array.isArray(value)) {
    for (const v of value) collectBytes(v, into, seen);
    return;
  }
  for (const key of Reflect.ownKeys(value as object)) collectBytes((value as Record<string | symbol, unknown>)[key], into, seen);
}

describe("SecAgg+ against a server that records everything", () => {
  it("reveals no individual update: uniform masked vectors, no key material, never a seed and a key of one client", async () => {
    const clientIds = ids(12);
    const vectors = randomVectors(clientIds, params.vector_length, 1);
    const droppedBeforeMasking = ["client-003", "client-008"];
    const droppedAfterMasking = ["client-005", "client-010"];
    // Each client's CSPRNG draws, to find its secrets afterwards (the client zeroes them after use).
    const draws = new Map<string, Uint8Array[]>(clientIds.map((id) => [id, []]));
    const received: { from: string; raw: Uint8Array }[] = [];
    const record: Uint8Array[] = []; // the server's state after every step, and every byte it receives
    const run = await runRound(params, vectors, {
      dropAt: { "masked-input": droppedBeforeMasking, unmask: droppedAfterMasking },
      record: (from, raw) => received.push({ from, raw }),
      afterStep: (server) => collectBytes(server, record),
      clientRandom: (id) => (n) => {
        const bytes = webCryptoRandomBytes(n);
        draws.get(id)!.push(bytes.slice());
        return bytes;
      },
    });
    if (run.outcome.kind !== "done") throw new Error(`aborted: ${JSON.stringify(run.outcome)}`);
    const survivors = run.outcome.result.included;
    expect(survivors).toHaveLength(10);

    // The clients' secrets, identified by the public values they match.
    // Parsed as the server parses them: the masked inputs' vectors as their words.
    const messages = received.map(({ raw }) => parsed(parseClientMessage(raw, Infinity)));
    const advertised = new Map(messages.filter((m) => m.step === "advertise-keys").map((m) => [m.from, m]));
    const commitments = new Map(messages.filter((m) => m.step === "share-keys").map((m) => [m.from, fromBase64(m.seed_commitments[0]!)!]));
    const secrets = new Map<string, { encryption: Uint8Array; masking: Uint8Array; seed?: Uint8Array }>();
    for (const id of clientIds) {
      const mine = draws.get(id)!.filter((d) => d.length === 32);
      const a = advertised.get(id)!;
      const encryption = mine.find((d) => equalBytes(x25519.getPublicKey(d), fromBase64(a.encryption_key)!))!;
      const masking = mine.find((d) => equalBytes(x25519.getPublicKey(d), fromBase64(a.masking_key)!))!;
      const seed = mine.find((d) => commitments.has(id) && equalBytes(seedCommitment(d, params.round, id), commitments.get(id)!));
      expect(encryption && masking).toBeTruthy();
      secrets.set(id, { encryption, masking, ...(seed ? { seed } : {}) });
    }

    for (const message of messages) collectBytes(message, record);
    for (const { raw } of received) record.push(raw);
    const haystack = Buffer.concat(record.map((r) => Buffer.from(r)));
    const hexHaystack = haystack.toString("latin1");
    const absent = (secret: Uint8Array) =>
      haystack.indexOf(Buffer.from(secret)) === -1 && !hexHaystack.includes(Buffer.from(secret).toString("hex")) && !hexHaystack.includes(Buffer.from(secret).toString("base64"));

    // Self-check of the scanner: the public keys are in the record.
    expect(absent(fromBase64(advertised.get("client-000")!.masking_key)!)).toBe(false);

    const inSum = new Set(survivors);
    let pairSecretsChecked = 0;
    for (const a of clientIds) {
      const sa = secrets.get(a)!;
      expect(absent(sa.encryption)).toBe(true); // channel keys never leave a client
      if (inSum.has(a)) expect(absent(sa.masking)).toBe(true);
      for (const b of clientIds) {
        if (a >= b) continue;
        const sb = secrets.get(b)!;
        const channel = pairSecret(sa.encryption, publicKeyOf(sb.encryption), "share-encryption", run.server.session, params.round, a, b);
        expect(absent(channel)).toBe(true);
        expect(absent(x25519.getSharedSecret(sa.encryption, publicKeyOf(sb.encryption)))).toBe(true);
        if (inSum.has(a) && inSum.has(b)) {
          expect(absent(pairSecret(sa.masking, publicKeyOf(sb.masking), "pair-mask", run.server.session, params.round, a, b))).toBe(true);
          expect(absent(x25519.getSharedSecret(sa.masking, publicKeyOf(sb.masking)))).toBe(true);
          pairSecretsChecked++;
        }
      }
    }
    expect(pairSecretsChecked).toBe(45);
    for (const id of droppedBeforeMasking) expect(absent(secrets.get(id)!.seed!)).toBe(true);

    // Never both: from the recorded unmask shares, rebuild whatever can be rebuilt.
    const resolved = resolveSecAggParams(params, clientIds.length);
    const unmasks = messages.filter((m) => m.step === "unmask");
    for (const id of clientIds) {
      const seedShares = unmasks.flatMap((m) => m.seed_shares.filter((s: { of: string }) => s.of === id).map((s: { share: string }) => ({ from: m.from, share: fromBase64(s.share)! })));
      const keyShares = unmasks.flatMap((m) => m.key_shares.filter((s: { of: string }) => s.of === id).map((s: { share: string }) => ({ from: m.from, share: fromBase64(s.share)! })));
      const seed = await rebuildSecret(seedShares, resolved.reconstruction_threshold, () => true);
      const key = await rebuildSecret(keyShares, resolved.reconstruction_threshold, (k) => equalBytes(k, secrets.get(id)!.masking));
      expect(seed.secret !== null && key.secret !== null).toBe(false);
      expect(key.secret !== null).toBe(droppedBeforeMasking.includes(id)); // rebuilt only for the dropped
      if (inSum.has(id)) expect(keyShares).toHaveLength(0);
    }

    // The masked vectors look uniform on Z_M; the quantized updates they hide do not.
    const masked = messages.filter((m) => m.step === "masked-input");
    expect(masked).toHaveLength(10);
    for (const m of masked) expect(chiSquare(m.vector)).toBeLessThan(CHI2_15_CRITICAL);
    const quantized = quantizeVector(vectors.get("client-000")!, resolved, webCryptoRandomBytes).values;
    expect(chiSquare(quantized)).toBeGreaterThan(1000 * CHI2_15_CRITICAL);

    // The strongest use of the record: rebuild a survivor's self-mask seed from the recorded
    // shares and strip it. What is left still hides the update behind the pair masks, which
    // only the clients could remove (the positive control strips them with the clients' keys).
    const step = (2 * params.clipping_range) / params.quantization_range;
    const requests = run.sent.map((raw) => parsed(parseServerMessage(raw, Infinity))).filter((m) => m.step === "masked-input");
    for (const m of masked) {
      const u: string = m.from;
      const seedShares = unmasks.flatMap((r) => r.seed_shares.filter((s: { of: string }) => s.of === u).map((s: { share: string }) => ({ from: r.from, share: fromBase64(s.share)! })));
      const seed = await rebuildSecret(seedShares, resolved.reconstruction_threshold, (b) => equalBytes(seedCommitment(b, params.round, u), commitments.get(u)!));
      expect(seed.secret).not.toBeNull();
      const stripped = (m.vector as Uint32Array).slice();
      applyMask(stripped, seed.secret!, -1, params.modulus_range);
      expect(chiSquare(stripped)).toBeLessThan(CHI2_15_CRITICAL);
      const maskedWith: string[] = requests.find((r) => r.to === u)!.shares.map((s: { from: string }) => s.from);
      expect(maskedWith.length).toBeGreaterThan(0);
      for (const v of maskedWith) {
        const pair = pairSecret(secrets.get(u)!.masking, publicKeyOf(secrets.get(v)!.masking), "pair-mask", run.server.session, params.round, u, v);
        applyMask(stripped, pair, pairSign(u, v) === 1 ? -1 : 1, params.modulus_range);
      }
      const x = vectors.get(u)!;
      for (let i = 0; i < x.length; i++) expect(Math.abs(stripped[i]! * step - params.clipping_range - x[i]!)).toBeLessThanOrEqual(step);
    }
  });
});
