/**
 * SecAgg+ at its boundary: each class of bad input is refused with a logged reason (FT336) and
 * the server goes on to a correct sum; a client catches NaN before masking (FT309) and refuses
 * a server request that would make it reveal more than the protocol allows.
 */
import { describe, expect, it } from "vitest";
import { type ClientMessage, type SecAggParams, type Unmask, encodeMessage } from "../../src/deploy/secagg/index.js";
import { SecAggClient } from "../../src/deploy/secagg/client.js";
import { fromBase64, toBase64 } from "../../src/deploy/secagg/codec.js";
import { PROTOCOL } from "../../src/deploy/secagg/keys.js";
import { SteppedRound, ids, jsonOf, randomVectors, rawMessage } from "./secagg-helpers.js";

const params: SecAggParams = {
  round: 3,
  vector_length: 32,
  num_shares: 6, // raised to 7, capped at the 6 clients: the complete graph
  reconstruction_threshold: 4,
  clipping_range: 1,
  quantization_range: 2 ** 16,
  modulus_range: 2 ** 24,
};

const flipByte = (b64: string, at = 0): string => {
  const bytes = fromBase64(b64)!;
  bytes[at]! ^= 0x5a;
  return toBase64(bytes);
};

/** The plain sum check: within one quantization step per client. */
function expectSum(round: SteppedRound, sum: Float64Array, included: readonly string[]) {
  const step = (2 * params.clipping_range) / params.quantization_range;
  for (let i = 0; i < sum.length; i++) {
    let want = 0;
    for (const id of included) want += round.vectors.get(id)![i]!;
    expect(Math.abs(sum[i]! - want)).toBeLessThanOrEqual(included.length * step);
  }
}

async function finish(round: SteppedRound, except: readonly string[] = []) {
  for (;;) {
    const pending = round.server.pending();
    await round.answerAll([...round.requests.keys()].filter((id) => except.includes(id) || !pending.includes(id)));
    const outcome = await round.advance();
    if (outcome.kind === "done") return outcome.result;
    if (outcome.kind === "aborted") throw new Error(outcome.reason);
  }
}

const refusals = (round: SteppedRound) => round.server.events.filter((e) => e.code === "FT336").map((e) => e.message);

describe("SecAgg+ server refuses bad input and keeps going", () => {
  it("refuses masked vectors of the wrong length, dtype, byte count or range", async () => {
    const round = new SteppedRound(params, randomVectors(ids(6), params.vector_length, 1));
    await round.answerAll();
    await round.advance();
    await round.answerAll();
    await round.advance(); // collecting masked-input
    const good = (await round.reply("client-000")) as Extract<ClientMessage, { step: "masked-input" }>;
    const tooShort = { ...good, length: 31, vector: good.vector.subarray(0, 31) };
    const claimedLength = { ...good, length: 33 };
    const dtype = { ...good, dtype: "float32" };
    const outOfRange = good.vector.slice();
    outOfRange[0] = 0xff000000; // >= 2^24
    for (const bad of [tooShort, claimedLength, dtype, { ...good, vector: outOfRange }]) {
      expect(round.deliver("client-000", encodeMessage(bad as ClientMessage)).accepted).toBe(false);
    }
    // The words follow the JSON as raw bytes: 127 bytes are no whole number of them.
    const goodBytes = encodeMessage(good);
    expect(round.deliver("client-000", rawMessage(jsonOf(goodBytes), goodBytes.subarray(goodBytes.length - 127))).accepted).toBe(false);
    expect(refusals(round)).toEqual([
      expect.stringMatching(/FT336: SecAgg\+ masked-input message from client-000 refused: masked vector of length 31, the round's is 32/),
      expect.stringMatching(/masked vector of 128 bytes where its length says 33 uint32 words \(132 bytes\)/),
      expect.stringMatching(/malformed: dtype/),
      expect.stringMatching(/words outside \[0, 16777216\)/),
      expect.stringMatching(/masked vector of 127 bytes where its length says 32 uint32 words/),
    ]);
    expect(round.deliver("client-000", good).accepted).toBe(true);
    const result = await finish(round);
    expect(result.clients).toBe(6);
    expectSum(round, result.sum, ids(6));
  });

  it("refuses oversized, malformed, replayed, out-of-round, out-of-step and impersonating messages", async () => {
    const round = new SteppedRound(params, randomVectors(ids(6), params.vector_length, 1));
    const first = await round.reply("client-001");
    const raw = encodeMessage(first);
    const json = jsonOf(raw);
    expect(round.deliver("client-001", rawMessage(json.slice(0, -1) + `,"pad":"${"x".repeat(20000)}"}`)).accepted).toBe(false);
    expect(round.deliver("client-001", rawMessage("{not json")).accepted).toBe(false);
    expect(round.deliver("client-001", rawMessage(json.slice(0, -1) + ',"extra":1}')).accepted).toBe(false);
    expect(round.deliver("client-001", raw.subarray(0, 20)).accepted).toBe(false);
    expect(round.deliver("client-001", rawMessage(json, Uint8Array.of(1, 2, 3, 4))).accepted).toBe(false);
    expect(round.deliver("client-001", encodeMessage({ ...first, round: 2 })).accepted).toBe(false);
    expect(round.deliver("client-002", raw).accepted).toBe(false); // client-002 sends client-001's keys
    expect(round.deliver("client-001", raw).accepted).toBe(true);
    expect(round.deliver("client-001", raw).accepted).toBe(false); // replay
    expect(refusals(round)).toEqual([
      expect.stringMatching(/over the limit/),
      expect.stringMatching(/not JSON/),
      expect.stringMatching(/malformed/),
      expect.stringMatching(/message of 20 bytes is shorter than its JSON length/),
      expect.stringMatching(/4 bytes after a advertise-keys message's JSON/),
      expect.stringMatching(/out of round: it is for round 2, this is round 3/),
      expect.stringMatching(/from client-002 refused: it claims to come from client-001/),
      expect.stringMatching(/replayed/),
    ]);
    await round.answerAll(["client-001"]);
    await round.advance(); // share-keys: the advertise message again is out of step
    expect(round.deliver("client-001", raw).accepted).toBe(false);
    expect(refusals(round).at(-1)).toMatch(/out of step: the server is collecting share-keys/);
    const result = await finish(round);
    expectSum(round, result.sum, ids(6));
  });

  it("names a client that sends an inconsistent share and rebuilds from the consistent ones", async () => {
    const round = new SteppedRound(params, randomVectors(ids(6), params.vector_length, 1));
    for (let i = 0; i < 4; i++) {
      await round.answerAll();
      await round.advance();
    } // collecting unmask
    const honest = (await round.reply("client-004")) as Unmask;
    const lying: Unmask = { ...honest, seed_shares: honest.seed_shares.map((s) => (s.of === "client-001" ? { ...s, share: flipByte(s.share) } : s)) };
    expect(round.deliver("client-004", lying).accepted).toBe(true); // well-formed: only the rebuild can tell
    const result = await finish(round, ["client-004"]);
    expectSum(round, result.sum, ids(6));
    expect(refusals(round)).toEqual([expect.stringMatching(/client-004's share of client-001's self-mask seed is inconsistent/)]);
  });

  it("aborts, revealing nothing, when the inconsistent shares leave no threshold of consistent ones", async () => {
    const round = new SteppedRound(params, randomVectors(ids(6), params.vector_length, 1));
    for (let i = 0; i < 4; i++) {
      await round.answerAll();
      await round.advance();
    }
    const liars = ["client-002", "client-003", "client-004"];
    for (const id of liars) {
      const honest = (await round.reply(id)) as Unmask;
      // Each liar alters another byte: errors in one byte from several liars could cancel in a subset's interpolation (a chance near 1/255 per subset).
      const lying = { ...honest, seed_shares: honest.seed_shares.map((s) => (s.of === "client-000" ? { ...s, share: flipByte(s.share, 5 + liars.indexOf(id)) } : s)) };
      expect(round.deliver(id, lying).accepted).toBe(true);
    }
    await round.answerAll(liars);
    const outcome = await round.advance();
    expect(outcome).toEqual({ kind: "aborted", reason: expect.stringMatching(/cannot rebuild client-000's self-mask seed: no 4 of the 6 shares/), code: "FT337" });
    expect(round.server.events.at(-1)).toMatchObject({ level: "error", code: "FT337" });
  });

  it("refuses unmask shares the server did not ask for (never a seed and a key of one client)", async () => {
    const round = new SteppedRound(params, randomVectors(ids(6), params.vector_length, 1));
    await round.answerAll();
    await round.advance();
    await round.answerAll();
    await round.advance();
    await round.answerAll(["client-005"]); // client-005 drops before its masked input
    const late = await round.reply("client-005");
    await round.advance();
    expect(round.deliver("client-005", late)).toEqual({ accepted: false, reason: "out of step: the server is collecting consistency-check" });
    await round.answerAll();
    await round.advance();
    const honest = (await round.reply("client-000")) as Unmask;
    expect(round.deliver("client-005", { ...honest, from: "client-005" })).toEqual({ accepted: false, reason: "it dropped at masked-input" });
    expect(honest.key_shares.map((s) => s.of)).toEqual(["client-005"]);
    const greedy = { ...honest, key_shares: [...honest.key_shares, { of: "client-001", share: honest.seed_shares[1]!.share }] };
    expect(round.deliver("client-000", greedy).accepted).toBe(false);
    expect(refusals(round)).toEqual([
      expect.stringMatching(/masked-input message from client-005 refused: out of step/),
      expect.stringMatching(/unmask message from client-005 refused: it dropped at masked-input/),
      expect.stringMatching(/a key share of client-001, which the server did not ask for/),
    ]);
    expect(round.deliver("client-000", honest).accepted).toBe(true);
    const result = await finish(round, ["client-005"]);
    expectSum(round, result.sum, ids(5));
  });

  it("a tampered or re-addressed sealed share fails the AEAD at its recipient, which logs it; the round still completes", async () => {
    const round = new SteppedRound(params, randomVectors(ids(6), params.vector_length, 1));
    await round.answerAll();
    await round.advance();
    await round.answerAll();
    await round.advance(); // masked-input requests carry the sealed shares
    const request = round.requests.get("client-002") as Extract<ReturnType<typeof round.requests.get>, { step: "masked-input" }>;
    const other = round.requests.get("client-003") as typeof request;
    const fromOne = other.shares.find((s) => s.from === "client-001")!;
    round.requests.set("client-002", {
      ...request,
      shares: request.shares.map((s) =>
        s.from === "client-000" ? { ...s, ciphertext: flipByte(s.ciphertext, 10) } : s.from === "client-001" ? { ...s, ...fromOne, from: "client-001" } : s,
      ),
    });
    const result = await finish(round);
    const logged = round.clientEvents.map((e) => `${e.client} ${e.code}: ${e.message}`).sort();
    expect(logged).toEqual([
      expect.stringMatching(/^client-002 FT336: the shares from client-000 fail AEAD/),
      expect.stringMatching(/^client-002 FT336: the shares from client-001 fail AEAD/),
    ]);
    expectSum(round, result.sum, ids(6));
  });
});

describe("SecAgg+ client checks", () => {
  it("catches NaN and infinite values before masking (FT309) and a vector of the wrong length (FT338)", async () => {
    const round = new SteppedRound(params, randomVectors(ids(6), params.vector_length, 1));
    await round.answerAll();
    await round.advance();
    await round.answerAll();
    await round.advance();
    const client = round.clients.get("client-000")!;
    const request = round.requests.get("client-000") as Parameters<SecAggClient["maskedInput"]>[0];
    const nan = new Float32Array(params.vector_length);
    nan[3] = Number.NaN;
    nan[7] = Number.POSITIVE_INFINITY;
    expect(() => client.maskedInput(request, nan)).toThrow(/FT309: SecAgg\+ masked input\(\): 2 client values lie outside the declared range \[-1, 1\]/);
    expect(() => client.maskedInput(request, new Float32Array(31))).toThrow(/FT338: SecAgg\+ client client-000: the masked input takes a Float32Array of length 32, got 31/);
    expect(client.maskedInput(request, new Float32Array(32)).step).toBe("masked-input");
    expect(() => client.maskedInput(request, new Float32Array(32))).toThrow(/FT338.*masked input called at stage masked/);
  });

  it("refuses a survivor set without it, with strangers or below the minimum (FT372), and unmasks only on threshold-many signatures over its set (FT370)", async () => {
    const round = new SteppedRound(params, randomVectors(ids(6), params.vector_length, 1));
    for (let i = 0; i < 3; i++) {
      await round.answerAll();
      await round.advance();
    }
    const client = round.clients.get("client-000")!;
    const check = round.requests.get("client-000") as Parameters<SecAggClient["consistencyCheck"]>[0];
    expect(() => client.consistencyCheck({ ...check, round: 4 })).toThrow(/FT336.*it is for round 4, this client is in round 3/);
    expect(() => client.consistencyCheck({ ...check, survivors: [...check.survivors, "client-999"] })).toThrow(/FT336.*client-999 did not advertise keys in this round/);
    expect(() => client.consistencyCheck({ ...check, survivors: check.survivors.slice(1) })).toThrow(/FT336.*this client is not among the survivors/);
    // min_clients is the threshold here (4): a set of 3 is a sum too small to help reveal.
    expect(() => client.consistencyCheck({ ...check, survivors: check.survivors.slice(0, 3) })).toThrow(/FT372: SecAgg\+ client client-000: 3 clients in the survivor set, fewer than the 4 the round's setup promised/);
    await round.answerAll();
    expect(() => client.consistencyCheck(check)).toThrow(/FT338.*consistency check called at stage checked/);
    await round.advance();
    const request = round.requests.get("client-000") as Parameters<SecAggClient["unmask"]>[0];
    expect(request.signatures).toHaveLength(6);
    const [first, second] = request.signatures;
    expect(() => client.unmask({ ...request, signatures: [...request.signatures, first!] })).toThrow(/FT336.*a signature of client-000 is listed twice/);
    expect(() => client.unmask({ ...request, signatures: [...request.signatures, { ...first!, id: "client-999" }] })).toThrow(/FT336.*a signature of client-999, which is not this client or a neighbour/);
    expect(() => client.unmask({ ...request, signatures: [first!, { ...second!, signature: flipByte(second!.signature, 5) }] })).toThrow(new RegExp(`FT370: .*the signature of ${second!.id} does not verify over the survivor set this client signed`));
    expect(() => client.unmask({ ...request, signatures: request.signatures.slice(0, 3) })).toThrow(/FT370: SecAgg\+ client client-000: 3 signatures over the survivor set this client signed, fewer than reconstruction_threshold 4; it reveals nothing/);
    expect(client.unmask(request).seed_shares).toHaveLength(6);
    expect(() => client.unmask(request)).toThrow(/FT338.*unmask called at stage unmasked/);
  });

  it("refuses a setup whose parameters are not what they resolve to (FT335), or a key list below the minimum, without its own keys, with a forged or repeated entry, or under another graph seed", async () => {
    const round = new SteppedRound(params, randomVectors(ids(6), params.vector_length, 1));
    const setup = { protocol: PROTOCOL, round: 3, step: "setup", to: "x", session: "0".repeat(32), params: { ...round.clients.get("client-000")!.params, reconstruction_threshold: 2 } };
    expect(() => SecAggClient.fromSetup(rawMessage(JSON.stringify(setup)))).toThrow(/FT335.*strict majority/);
    expect(() => SecAggClient.fromSetup(rawMessage(JSON.stringify({ ...setup, step: "unmask" })))).toThrow(/FT336/);
    await round.answerAll();
    await round.advance();
    const client = round.clients.get("client-000")!;
    const request = round.requests.get("client-000") as Parameters<SecAggClient["shareKeys"]>[0];
    const own = request.roster.findIndex((e) => e.id === "client-000");
    await expect(client.shareKeys({ ...request, roster: request.roster.slice(0, 3) })).rejects.toThrow(/FT372: .*3 clients advertised keys, fewer than the 4 the round's setup promised/);
    await expect(client.shareKeys({ ...request, roster: request.roster.filter((_, i) => i !== own) })).rejects.toThrow(/FT336.*this client's keys are not in the key list as it advertised them/);
    await expect(client.shareKeys({ ...request, roster: [...request.roster, request.roster[own === 0 ? 1 : 0]!] })).rejects.toThrow(/FT336.*listed twice in the key list/);
    await expect(client.shareKeys({ ...request, roster: request.roster.map((e, i) => (i === (own + 1) % 6 ? { ...e, masking_key: flipByte(e.masking_key) } : e)) })).rejects.toThrow(/FT357.*do not carry its signature/);
    // The server's own choice of graph: a seed other than the one the signed key list gives.
    await expect(client.shareKeys({ ...request, graph_seed: "0".repeat(64) })).rejects.toThrow(/FT371: SecAgg\+ client client-000: the graph seed 0000000000000000\.\.\. is not the [0-9a-f]{16}\.\.\. its signed key list gives/);
    await expect(client.respond(rawMessage("{bad"), () => new Float32Array(32))).rejects.toThrow(/FT336.*not JSON/);
    await expect(client.respond(encodeMessage({ ...request, to: "client-001" }), () => new Float32Array(32))).rejects.toThrow(/FT336.*addressed to client-001/);
    expect((await client.respond(encodeMessage(request), () => new Float32Array(32))).step).toBe("share-keys");
  });
});
