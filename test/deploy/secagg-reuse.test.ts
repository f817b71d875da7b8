/**
 * SecAgg+ key reuse across rounds (src/deploy/secagg/reuse.ts): rounds after a setup round
 * without dropouts skip advertise-keys and share-keys (three client messages instead of five),
 * any dropout forces a full setup, a server cannot make a client reuse keys after a dropout or
 * replay a round, and a server that records everything of a reused round with a dropout still
 * cannot strip an individual vector of its masks.
 */
import { describe, expect, it } from "vitest";
import { type ClientMessage, type SecAggParams, type ShareKeys, type StepOutcome, type Unmask, SecAggRounds, SecAggServer, encodeMessage } from "../../src/deploy/secagg/index.js";
import { fromBase64 } from "../../src/deploy/secagg/codec.js";
import { PROTOCOL, equalBytes, seedCommitment } from "../../src/deploy/secagg/keys.js";
import { applyMask, pairSign } from "../../src/deploy/secagg/masks.js";
import { rebuildSecret } from "../../src/deploy/secagg/shares.js";
import type { ReusedKeys } from "../../src/deploy/secagg/reuse.js";
import type { CollectingStep } from "../../src/deploy/secagg/server.js";
import { ids, randomVectors } from "./secagg-helpers.js";

const LENGTH = 1024;
const params = (round: number): SecAggParams => ({ round, vector_length: LENGTH, num_shares: 5, reconstruction_threshold: 3, clipping_range: 1, quantization_range: 2 ** 16, modulus_range: 2 ** 32, key_rounds: 3 });
const CLIENTS = ids(5);

interface Played {
  readonly outcome: StepOutcome;
  /** Each client's answers, in order. */
  readonly sent: Map<string, ClientMessage[]>;
  /** Each client's refusal of a server message, if any. */
  readonly refused: Map<string, string>;
}

/**
 * Plays a round of `server` with the clients' SecAggRounds, every message through the wire
 * format. A client of `drop` answers nothing from the step `dropAt` on.
 */
async function play(server: SecAggServer, rounds: Map<string, SecAggRounds>, vectors: Map<string, Float32Array>, drop: readonly string[] = [], dropAt: CollectingStep = "masked-input"): Promise<Played> {
  const sent = new Map(CLIENTS.map((id) => [id, [] as ClientMessage[]]));
  const refused = new Map<string, string>();
  const order: CollectingStep[] = ["advertise-keys", "share-keys", "masked-input", "consistency-check", "unmask"];
  let requests: ReadonlyMap<string, object> = server.start();
  for (;;) {
    for (const [id, message] of requests) {
      if (drop.includes(id) && order.indexOf(server.step as CollectingStep) >= order.indexOf(dropAt)) continue;
      try {
        const answer = await rounds.get(id)!.respond(server.params.round, encodeMessage(message as never), () => vectors.get(id)!);
        sent.get(id)!.push(answer);
        server.receive(id, encodeMessage(answer));
      } catch (error) {
        refused.set(id, (error as Error).message);
      }
    }
    const outcome = await server.advance();
    if (outcome.kind !== "messages") return { outcome, sent, refused };
    requests = outcome.messages;
  }
}

function expectSum(outcome: StepOutcome, vectors: Map<string, Float32Array>, included: readonly string[]): void {
  if (outcome.kind !== "done") throw new Error(`not done: ${JSON.stringify(outcome)}`);
  expect(outcome.result.included).toEqual(included);
  const step = 2 / 2 ** 16;
  for (let i = 0; i < LENGTH; i++) {
    const plain = included.reduce((sum, id) => sum + vectors.get(id)![i]!, 0);
    expect(Math.abs(outcome.result.sum[i]! - plain)).toBeLessThanOrEqual(included.length * step);
  }
}

const steps = (played: Played, id: string) => played.sent.get(id)!.map((m) => m.step);
const bytes = (played: Played, id: string) => played.sent.get(id)!.reduce((sum, m) => sum + encodeMessage(m).length, 0);
const freshClients = () => new Map(CLIENTS.map((id) => [id, new SecAggRounds()]));

describe("SecAgg+ key reuse across rounds", () => {
  it("reuses round 1's key setup in rounds 2 and 3 (three messages a client instead of five), then sets up afresh when the window is over", async () => {
    const rounds = freshClients();
    let reuse: ReusedKeys | undefined;
    const played: Played[] = [];
    for (const round of [1, 2, 3, 4]) {
      const vectors = randomVectors(CLIENTS, LENGTH, 0.5);
      const server = new SecAggServer(params(round), CLIENTS, reuse === undefined ? {} : { reuse });
      const p = await play(server, rounds, vectors);
      expectSum(p.outcome, vectors, CLIENTS);
      played.push(p);
      reuse = server.reusable();
    }
    const full = ["advertise-keys", "share-keys", "masked-input", "consistency-check", "unmask"];
    const reused = ["masked-input", "consistency-check", "unmask"];
    for (const id of CLIENTS) expect(played.map((p) => steps(p, id))).toEqual([full, reused, reused, full]);
    // What a client sends besides its masked vector (4 bytes a word) shrinks with the two steps it skips.
    const overhead = (p: Played) => bytes(p, "client-000") - 4 * LENGTH;
    expect(overhead(played[1]!)).toBeLessThan(overhead(played[0]!) / 2);
  });

  it("recovers a dropout of a reused round from its neighbours' pair seeds of that round, never a key share, and sets up afresh after it", async () => {
    const rounds = freshClients();
    const first = new SecAggServer(params(1), CLIENTS);
    await play(first, rounds, randomVectors(CLIENTS, LENGTH, 0.5));
    const vectors = randomVectors(CLIENTS, LENGTH, 0.5);
    const second = new SecAggServer(params(2), CLIENTS, { reuse: first.reusable()! });
    const p = await play(second, rounds, vectors, ["client-004"]);
    expectSum(p.outcome, vectors, CLIENTS.slice(0, 4));
    const unmasks = CLIENTS.slice(0, 4).map((id) => p.sent.get(id)!.at(-1) as Unmask);
    for (const u of unmasks) {
      expect(u.key_shares).toEqual([]);
      expect(u.pair_seeds!.map((s) => s.of)).toEqual(["client-004"]);
    }
    expect(second.reusable()).toBeUndefined();
    const third = new SecAggServer(params(3), CLIENTS, { reuse: first.reusable()! });
    expect(third.events.length).toBe(0);
    const p3 = await play(third, rounds, randomVectors(CLIENTS, LENGTH, 0.5));
    // A server that offers round 1's stale key setup again (its cohort and window fit): every client that saw round 2's dropout refuses it.
    expect(p3.outcome.kind).toBe("aborted");
    for (const id of CLIENTS.slice(0, 4)) expect(p3.refused.get(id)).toMatch(/FT373.*1 of the 5 clients of the key list were not in round 2's survivor set/);
    // The dropout itself never saw round 2: for it round 1 was the last, which the whole list signed. Its masked input is alone, and no one unmasks it.
    expect(p3.refused.has("client-004")).toBe(false);
    expect(p3.sent.get("client-004")!.map((m) => m.step)).toEqual(["masked-input"]);
  });

  it("a server that asks for reuse after a masking key was rebuilt, or replays a round's setup, is refused (FT373, FT374)", async () => {
    const rounds = freshClients();
    const first = new SecAggServer(params(1), CLIENTS);
    const signatures: { id: string; signature: string }[] = [];
    const p1 = await play(first, rounds, randomVectors(CLIENTS, LENGTH, 0.5), ["client-002"]);
    expect(p1.outcome.kind).toBe("done");
    expect(first.reusable()).toBeUndefined(); // client-002's key was rebuilt from its neighbours' shares
    for (const id of CLIENTS) for (const m of p1.sent.get(id)!) if (m.step === "consistency-check") signatures.push({ id, signature: m.signature });
    // The lying server: round 2's setup claims round 1's key setup, with the signatures it has.
    const lie = (to: string, round: number) => ({ protocol: PROTOCOL, round, step: "setup", to, session: "ab".repeat(16), params: { ...first.params, round }, reuse: { keys_session: first.session, keys_round: 1, signatures } }) as const;
    await expect(rounds.get("client-000")!.respond(2, encodeMessage(lie("client-000", 2)), () => new Float32Array(LENGTH))).rejects.toThrow(/FT373.*1 of the 5 clients of the key list were not in round 1's survivor set: their masking keys may have been rebuilt/);
    // A replay: round 2 reused honestly, then its setup sent again.
    const honest = freshClients();
    const a = new SecAggServer(params(1), CLIENTS);
    await play(a, honest, randomVectors(CLIENTS, LENGTH, 0.5));
    const b = new SecAggServer(params(2), CLIENTS, { reuse: a.reusable()! });
    const setups = b.start();
    const replayed = encodeMessage(setups.get("client-001")!);
    const rest = new Map([...setups].map(([id, m]) => [id, encodeMessage(m)]));
    const vectors = randomVectors(CLIENTS, LENGTH, 0.5);
    for (const [id, raw] of rest) b.receive(id, encodeMessage(await honest.get(id)!.respond(2, raw, () => vectors.get(id)!)));
    let outcome = await b.advance();
    while (outcome.kind === "messages") {
      for (const [id, m] of outcome.messages) b.receive(id, encodeMessage(await honest.get(id)!.respond(2, encodeMessage(m), () => vectors.get(id)!)));
      outcome = await b.advance();
    }
    expectSum(outcome, vectors, CLIENTS);
    await expect(honest.get("client-001")!.respond(2, replayed, () => vectors.get("client-001")!)).rejects.toThrow(/FT374.*already finished round 2/);
    // Round 1's full setup again: that round was unmasked (FT356).
    const again = encodeMessage({ protocol: PROTOCOL, round: 1, step: "setup", to: "client-002", session: a.session, params: a.params });
    await expect(honest.get("client-002")!.respond(1, again, () => vectors.get("client-002")!)).rejects.toThrow(/FT356/);
  });

  it("leaves the server, with everything it recorded of a reused round with a dropout, no vector it can strip of its masks", async () => {
    const rounds = freshClients();
    const first = new SecAggServer(params(1), CLIENTS);
    const p1 = await play(first, rounds, randomVectors(CLIENTS, LENGTH, 0.5));
    const second = new SecAggServer(params(2), CLIENTS, { reuse: first.reusable()! });
    const v2 = randomVectors(CLIENTS, LENGTH, 0.5);
    const p2 = await play(second, rounds, v2, ["client-004"]);
    expectSum(p2.outcome, v2, CLIENTS.slice(0, 4));
    const commitments = new Map(CLIENTS.map((id) => [id, p1.sent.get(id)!.find((m) => m.step === "share-keys")!] as const));
    const unmasks = (p: Played) => CLIENTS.flatMap((id) => p.sent.get(id)!.filter((m): m is Unmask => m.step === "unmask"));
    const pairSeeds = unmasks(p2).flatMap((m) => (m.pair_seeds ?? []).map((s) => ({ from: m.from, of: s.of, seed: fromBase64(s.seed)! })));
    expect(pairSeeds.map((s) => `${s.from}-${s.of}`)).toEqual(CLIENTS.slice(0, 4).map((id) => `${id}-client-004`));
    expect(unmasks(p1).concat(unmasks(p2)).every((m) => m.key_shares.length === 0)).toBe(true);
    // The server's best on each round's masked vector: the self mask off (its seed rebuilt from the revealed shares, checked by its commitment), then every pair seed it was given.
    for (const [round, played] of [[1, p1], [2, p2]] as const) {
      for (const u of CLIENTS.slice(0, 4)) {
        const masked = played.sent.get(u)!.find((m) => m.step === "masked-input");
        if (masked?.step !== "masked-input") throw new Error("no masked input");
        const shares = unmasks(played).flatMap((m) => m.seed_shares.filter((s) => s.of === u).map((s) => ({ from: m.from, share: fromBase64(s.share)! })));
        const commitment = fromBase64((commitments.get(u) as ShareKeys).seed_commitments[round - 1]!)!;
        const seed = await rebuildSecret(shares, 3, (b) => equalBytes(seedCommitment(b, round, u), commitment));
        expect(seed.secret).not.toBeNull();
        const stripped = masked.vector.slice();
        applyMask(stripped, seed.secret!, -1, 2 ** 32);
        for (const s of pairSeeds) if (s.from === u) applyMask(stripped, s.seed, pairSign(u, s.of) === 1 ? -1 : 1, 2 ** 32);
        // Its quantized input lies in [0, 2^16]: every top nibble 0. Uniform words: the other pair masks, which the server cannot compute, still hide it.
        expect(chiSquare(stripped)).toBeLessThan(CHI2_15_CRITICAL);
      }
    }
  });
});

/** Chi-square of the top 4 bits against uniform (15 degrees of freedom); a uniform vector exceeds 57.4 once in a million. */
function chiSquare(words: Uint32Array): number {
  const bins = new Array<number>(16).fill(0);
  for (const w of words) bins[w >>> 28]!++;
  const expected = words.length / 16;
  return bins.reduce((sum, count) => sum + (count - expected) ** 2 / expected, 0);
}
const CHI2_15_CRITICAL = 57.4;
