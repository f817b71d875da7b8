/**
 * serve's SecAgg+ driver (src/deploy/server/secure.ts) over in-memory members: each step moves on
 * as soon as every member still connected has answered or been refused (never at the deadline,
 * set here to an hour), and the round's log line says what became of each member that left.
 */
import { describe, expect, it } from "vitest";
import { SecAggClient, encodeMessage, type ClientMessage } from "../../src/deploy/secagg/index.js";
import type { Member } from "../../src/deploy/server/clients.js";
import { OperatorView } from "../../src/deploy/server/admin.js";
import { SumDiscarded } from "../../src/deploy/server/round-aborted.js";
import { SecureSum } from "../../src/deploy/server/secure.js";
import { deadline } from "../helpers/deadline.js";
import { ids, randomVectors } from "./secagg-helpers.js";

const HOUR = 3_600_000;

/** A frame's body: what follows its u32 header length and header. */
const bodyOf = (frame: Uint8Array): Uint8Array => frame.subarray(4 + new DataView(frame.buffer, frame.byteOffset).getUint32(0, true));

interface FakeRound {
  readonly sum: SecureSum;
  readonly members: readonly Member[];
  readonly log: string[];
  readonly vectors: Map<string, Float32Array>;
}

/**
 * A secure sum of `count` members with honest in-memory clients; `tamper(id, message)` may
 * change a member's reply (or return null: the member disconnects instead of answering; or
 * "silent": it stays connected and does not answer).
 */
function fakeRound(count: number, tamper: (id: string, message: ClientMessage) => ClientMessage | Uint8Array | null | "silent" = (_, m) => m): FakeRound {
  const log: string[] = [];
  const vectors = randomVectors(ids(count), 16, 0.5);
  let sum: SecureSum | undefined;
  const members = ids(count).map((id) => {
    let client: SecAggClient | undefined;
    const socket = { readyState: 1 };
    const member = {
      id,
      examples: 10,
      agent: "node",
      address: "memory",
      parts: new Set<string>(),
      socket,
      send(frame: Uint8Array) {
        const body = bodyOf(frame);
        setImmediate(async () => {
          if (socket.readyState !== 1) return;
          let reply: ClientMessage;
          if (client === undefined) {
            client = SecAggClient.fromSetup(body);
            reply = client.advertiseKeys();
          } else reply = await client.respond(body, () => vectors.get(id)!);
          const sent = tamper(id, reply);
          if (sent === "silent") return;
          if (sent === null) {
            socket.readyState = 3;
            sum!.left();
            return;
          }
          sum!.receive(member as unknown as Member, sent instanceof Uint8Array ? sent : encodeMessage(sent));
        });
      },
    };
    return member as unknown as Member;
  });
  sum = new SecureSum(1, members, 16, { deadlineMs: HOUR, log: (line) => log.push(line), ranges: { clipping_range: 1, quantization_range: 2 ** 16 } }, { bytesIn: 0, bytesOut: 0 });
  return { sum, members, log, vectors };
}

describe("serve's secure sum moves on when every remaining member has answered or been refused", () => {
  it("shows /status its SecAgg+ step and whom it waits for, step by step, and nothing once it ended", async () => {
    const operator = new OperatorView({ name: "status", algorithm: "fedavg", rounds: 1, aggregator: "secure" });
    const seen: { step: string; waitingFor: readonly string[] }[] = [];
    let sum: SecureSum | undefined;
    operator.watchSecureSum(() => (sum === undefined ? null : { round: 1, ...sum.progress() }));
    const round = fakeRound(3, (id, m) => {
      const status = (operator.status() as { secureSum: { step: string; waitingFor: string[] } }).secureSum;
      if (id === "client-000") seen.push({ step: status.step, waitingFor: status.waitingFor });
      return m;
    });
    sum = round.sum;
    await round.sum.result();
    // client-000 answers first at each step: the sum waits for all three then.
    const all = ["client-000", "client-001", "client-002"];
    expect(seen).toEqual(["advertise-keys", "share-keys", "masked-input", "consistency-check", "unmask"].map((step) => ({ step, waitingFor: all })));
    expect((operator.status() as { secureSum: object }).secureSum).toEqual({ round: 1, step: "done", waitingFor: [] });
    sum = undefined;
    expect((operator.status() as { secureSum: object | null }).secureSum).toBeNull();
  }, deadline(30_000));

  it("a masked vector 4 bytes short is refused (FT336), its sender dropped at once, not at the deadline", async () => {
    const round = fakeRound(5, (id, m) => {
      if (id !== "client-002" || m.step !== "masked-input") return m;
      const raw = encodeMessage(m);
      return raw.subarray(0, raw.length - 4);
    });
    const result = await round.sum.result();
    expect(result.included).toEqual(["client-000", "client-001", "client-003", "client-004"]);
    expect([...result.droppedAt]).toEqual([["client-002", "masked-input"]]);
    expect(round.log.join("\n")).toMatch(/FT336: SecAgg\+ masked-input message from client-002 refused: masked vector of 60 bytes/);
    expect(round.log.join("\n")).toMatch(/client-002 at masked-input \(not in the sum: its pair masks removed/);
  }, deadline(30_000));

  it("a member whose task fails after it shared keys (the setup runs while it trains) is dropped at once: out of the sum, its pair masks removed", async () => {
    let failed = false;
    const round = fakeRound(5, (id, m) => {
      if (id !== "client-002" || m.step !== "share-keys") return failed && id === "client-002" ? "silent" : m;
      // Its shares are out; then its training fails, and it will send no masked input.
      failed = true;
      setImmediate(() => round.sum.drop(round.members[2]!, "failed: 3 values failed the check"));
      return m;
    });
    const result = await round.sum.result();
    expect(result.included).toEqual(["client-000", "client-001", "client-003", "client-004"]);
    expect([...result.droppedAt]).toEqual([["client-002", "masked-input"]]);
    expect(round.log.join("\n")).toMatch(/client-002: dropped: failed: 3 values failed the check/);
    expect(round.log.join("\n")).toMatch(/client-002 at masked-input \(not in the sum: its pair masks removed/);
    for (let i = 0; i < 16; i++) {
      const want = result.included.reduce((s, id) => s + round.vectors.get(id)![i]!, 0);
      expect(Math.abs(result.sum[i]! - want)).toBeLessThan(4 * 2 / 2 ** 16 + 1e-9);
    }
  }, deadline(30_000));

  it("says a member lost at advertise-keys was left out, and one lost at unmask is in the sum: neither is 'recovered' wrongly", async () => {
    const round = fakeRound(6, (id, m) => ((id === "client-001" && m.step === "advertise-keys") || (id === "client-004" && m.step === "unmask") ? null : m));
    const result = await round.sum.result();
    expect(result.included).toEqual(["client-000", "client-002", "client-003", "client-004", "client-005"]);
    const line = round.log.find((l) => l.startsWith("round 1: secure sum of 5 clients"))!;
    expect(line).toMatch(/client-001 at advertise-keys \(left out before it shared keys: nothing to recover\)/);
    expect(line).toMatch(/client-004 at unmask \(its masked input is in the sum: its self mask removed/);
    // The sum is the five survivors' (within a quantization step each).
    for (let i = 0; i < 16; i++) {
      const want = result.included.reduce((s, id) => s + round.vectors.get(id)![i]!, 0);
      expect(Math.abs(result.sum[i]! - want)).toBeLessThan(5 * 2 / 2 ** 16 + 1e-9);
    }
  }, deadline(30_000));
});

describe("serve's secure sum discards a sum no honest cohort can produce (FT355)", () => {
  it("a client adding 2^31 to every word of its masked vector: the sum is discarded, logged, and the round aborts (SumDiscarded)", async () => {
    const round = fakeRound(5, (id, m) => {
      if (id !== "client-003" || m.step !== "masked-input") return m;
      return { ...m, vector: m.vector.map((w) => (w + 2 ** 31) >>> 0) };
    });
    await expect(round.sum.result()).rejects.toThrow(SumDiscarded);
    expect(round.log.join("\n")).toMatch(/FT355: SecAgg\+ round 1: the unmasked sum of 5 clients has \d+ of 16 coordinates above 5 x quantization_range = 327680 .*; the sum is discarded/);
    expect(round.log.join("\n")).not.toMatch(/secure sum of 5 clients/);
  }, deadline(30_000));

  it("an honest cohort's sum at the edge of the range (every value clipped to +C) is kept", async () => {
    const round = fakeRound(4);
    for (const v of round.vectors.values()) v.fill(5); // clipped to 1: every word quantizes to Q
    const result = await round.sum.result();
    expect([...result.quantizedSum]).toEqual(new Array(16).fill(4 * 2 ** 16));
    expect([...result.sum]).toEqual(new Array(16).fill(4));
  }, deadline(30_000));
});
