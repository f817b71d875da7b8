/**
 * A client's SecAgg+ rounds across server restarts (src/deploy/secagg/rounds.ts): a server that
 * loses its state mid-round sets the round up again under a new session and finishes it with the
 * same clients; a repeated setup is refused; and a client that answered a round's unmask step
 * never takes part in another setup of that round, so a server that fakes a restart cannot
 * subtract two sums of one round.
 */
import { describe, expect, it } from "vitest";
import { IdentityPins, type SecAggParams, SecAggRounds, SecAggServer, encodeMessage } from "../../src/deploy/secagg/index.js";
import { driveRounds as drive, ids, randomVectors } from "./secagg-helpers.js";

const params: SecAggParams = { round: 7, vector_length: 8, num_shares: 5, reconstruction_threshold: 3, clipping_range: 1, quantization_range: 2 ** 16, modulus_range: 2 ** 24 };

const sumOf = (vectors: Map<string, Float32Array>, included: readonly string[], i: number) => included.reduce((s, id) => s + vectors.get(id)![i]!, 0);

describe("SecAgg+ rounds across a server restart", () => {
  for (const step of ["share-keys", "masked-input", "consistency-check", "unmask"] as const) {
    it(`a server that dies having sent the ${step} requests sets the round up again under a new session, and it completes with every client`, async () => {
      const vectors = randomVectors(ids(5), params.vector_length, 0.5);
      const rounds = new Map(ids(5).map((id) => [id, new SecAggRounds()]));
      await drive(new SecAggServer(params, ids(5)), rounds, vectors, step);
      const resumed = new SecAggServer(params, ids(5));
      const outcome = await drive(resumed, rounds, vectors);
      expect(outcome?.kind).toBe("done");
      if (outcome?.kind !== "done") return;
      expect(outcome.result.included).toEqual(ids(5));
      for (let i = 0; i < params.vector_length; i++) expect(Math.abs(outcome.result.sum[i]! - sumOf(vectors, ids(5), i))).toBeLessThan(5 * 2 ** -15 + 1e-9);
    });
  }

  it("refuses a setup that promises a smaller sum than the run promised on joining (FT372), and takes one that promises as much", async () => {
    const setup = encodeMessage(new SecAggServer({ ...params, min_clients: 3 }, ids(5)).start().get("client-000")!);
    await expect(new SecAggRounds().respond(7, setup, () => new Float32Array(8), 4)).rejects.toThrow(
      /FT372: SecAgg\+ client client-000: the setup of round 7 promises a sum of at least 3 clients, the run promised 4; it leaves the round/,
    );
    expect((await new SecAggRounds().respond(7, setup, () => new Float32Array(8), 3)).step).toBe("advertise-keys");
  });

  it("refuses the same session's setup twice (FT336)", async () => {
    const server = new SecAggServer(params, ids(3));
    const setup = encodeMessage(server.start().get("client-000")!);
    const rounds = new SecAggRounds();
    expect((await rounds.respond(7, setup, () => new Float32Array(8))).step).toBe("advertise-keys");
    await expect(rounds.respond(7, setup, () => new Float32Array(8))).rejects.toThrow(/FT336: .*a second setup of round 7 in session [0-9a-f]{32}/);
    await expect(rounds.respond(8, setup, () => new Float32Array(8))).rejects.toThrow(/FT336: .*it is for round 7, its frame for round 8/);
  });

  it("a server faking a restart after the unmask step cannot run the round again: the clients that unmasked refuse (FT356), too few are left", async () => {
    const vectors = randomVectors(ids(5), params.vector_length, 0.5);
    const rounds = new Map(ids(5).map((id) => [id, new SecAggRounds()]));
    const first = await drive(new SecAggServer(params, ids(5)), rounds, vectors);
    expect(first?.kind).toBe("done");
    // The "restarted" server leaves client-004 out, to subtract the two sums: every client that unmasked refuses its setup.
    const second = new SecAggServer(params, ids(4));
    for (const [id, setup] of second.start()) {
      await expect(rounds.get(id)!.respond(7, encodeMessage(setup), () => vectors.get(id)!)).rejects.toThrow(/FT356: SecAgg\+: a setup of round 7, whose unmask step this client answered in session [0-9a-f]{32}; refused/);
    }
    expect((await second.advance()).kind).toBe("aborted");
  });

  it("after a restart in the unmask step, the clients that had answered stay out and the round completes without them, never with both sums", async () => {
    const vectors = randomVectors(ids(5), params.vector_length, 0.5);
    const rounds = new Map(ids(5).map((id) => [id, new SecAggRounds()]));
    const first = new SecAggServer(params, ids(5));
    const unmask = await drive(first, rounds, vectors, "unmask");
    // Two of the five answer the unmask step before the server dies: too few (threshold 3) for it to have unmasked anything.
    if (unmask?.kind !== "messages") throw new Error("no unmask step");
    for (const id of ["client-000", "client-001"]) await rounds.get(id)!.respond(7, encodeMessage(unmask.messages.get(id)!), () => vectors.get(id)!);
    const resumed = new SecAggServer(params, ids(5));
    const refused: string[] = [];
    let requests = new Map([...resumed.start()].map(([id, m]) => [id, encodeMessage(m)]));
    for (;;) {
      for (const [id, raw] of requests) {
        const answer = await rounds.get(id)!.respond(7, raw, () => vectors.get(id)!).catch((error: Error) => (refused.push(`${id}: ${error.message.slice(0, 5)}`), undefined));
        if (answer !== undefined) resumed.receive(id, encodeMessage(answer));
      }
      const outcome = await resumed.advance();
      if (outcome.kind === "done") {
        expect(refused).toEqual(["client-000: FT356", "client-001: FT356"]);
        expect(outcome.result.included).toEqual(["client-002", "client-003", "client-004"]);
        for (let i = 0; i < params.vector_length; i++) expect(Math.abs(outcome.result.sum[i]! - sumOf(vectors, outcome.result.included, i))).toBeLessThan(3 * 2 ** -15 + 1e-9);
        return;
      }
      if (outcome.kind === "aborted") throw new Error(outcome.reason);
      requests = new Map([...outcome.messages].map(([id, m]) => [id, encodeMessage(m)]));
    }
  });

  it("a client restarted with a new identity is refused at advertise-keys by the server's pins, and the round goes on without it", async () => {
    const vectors = randomVectors(ids(5), params.vector_length, 0.5);
    const rounds = new Map(ids(5).map((id) => [id, new SecAggRounds()]));
    const pins = new IdentityPins();
    expect((await drive(new SecAggServer(params, ids(5), { pins }), rounds, vectors))?.kind).toBe("done");
    rounds.set("client-002", new SecAggRounds()); // restarted: a new identity key
    const server = new SecAggServer({ ...params, round: 8 }, ids(5), { pins });
    const verdicts = new Map<string, boolean>();
    for (const [id, setup] of server.start()) {
      const answer = await rounds.get(id)!.respond(8, encodeMessage(setup), () => vectors.get(id)!);
      verdicts.set(id, server.receive(id, encodeMessage(answer)).accepted);
    }
    expect([...verdicts].filter(([, ok]) => !ok).map(([id]) => id)).toEqual(["client-002"]);
    expect(server.events.at(-1)?.message).toMatch(/FT336: .*client-002 refused: its identity key is not the one this server pinned for it/);
  });
});
