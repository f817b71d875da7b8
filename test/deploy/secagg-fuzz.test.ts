/**
 * Property-based fuzzing of serve's SecAgg+ driver (src/deploy/server/secure.ts, over the real
 * SecAggServer) at its message boundary, with fast-check: one member of a 4-member secure sum is
 * a fuzzer beside 3 honest in-memory clients. It runs an honest SecAgg+ client underneath (so it
 * reaches every step) and, at each step, sends messages built from the protocol's client
 * schemas (src/deploy/secagg/messages.ts), valid and invalid (other versions, rounds, steps and
 * senders, keys and shares of random bytes or wrong lengths, extra fields, truncated or random
 * bytes), before and after its own answer, which it sends, replaces with a fuzzed one, or
 * withholds (it disconnects). Out of protocol order: any step's message at any step.
 *
 * Each run must finish (the sum resolves, nothing throws), include every honest client, and equal
 * the exact sum (mod 2^16, pre-quantized inputs) of the clients it includes: the honest clients'
 * vectors, and the fuzzer's own honest vector when its honest masked input was accepted.
 *
 * Not fuzzed: a fuzzed answer that the server must accept as well-formed because it is, a
 * masked vector of the round's length or a sealed share for each of the fuzzer's neighbours:
 * these are a member's contribution, not an attack on the boundary (a masked vector's range
 * is checked at the sum, FT355; shares that fail their recipients' AEAD make the fuzzer's own
 * secrets unrecoverable, docs/deployment.md, "Threat model").
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { SecAggRounds, encodeMessage, type ClientMessage } from "../../src/deploy/secagg/index.js";
import type { Member } from "../../src/deploy/server/clients.js";
import { SecureSum } from "../../src/deploy/server/secure.js";
import { deadline } from "../helpers/deadline.js";
import { SECAGG_STEPS as STEPS, fuzzedSecAggMessage } from "./secagg-arbitraries.js";
import { ids } from "./secagg-helpers.js";

const LENGTH = 8;
const BITS = 16;
const ROUND = 1;
const MEMBERS = ids(4);
const FUZZER = MEMBERS[3]!;
const HOUR = 3_600_000;

const bodyOf = (frame: Uint8Array): Uint8Array => frame.subarray(4 + new DataView(frame.buffer, frame.byteOffset).getUint32(0, true));

const fuzzedMessage = () => fuzzedSecAggMessage({ round: ROUND, members: MEMBERS, fuzzer: FUZZER, length: LENGTH, neighbourCounts: [MEMBERS.length - 1] });

/**
 * What the fuzzer does at one step: messages before and after its answer, and the answer sent
 * as is, replaced or withheld. Its honest answer alone, with messages after it, weighs most, so
 * that some runs take the fuzzer through its masked input (a refused message before its answer
 * drops it at that step).
 */
const stepPlan = fc.oneof(
  { weight: 4, arbitrary: fc.record({ before: fc.constant([] as Uint8Array[]), answer: fc.constant("honest"), replacement: fc.constant(new Uint8Array(0)), after: fc.array(fuzzedMessage(), { maxLength: 2 }) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      before: fc.array(fuzzedMessage(), { maxLength: 2 }),
      answer: fc.constantFrom("honest", "replaced", "withheld"),
      replacement: fuzzedMessage(),
      after: fc.array(fuzzedMessage(), { maxLength: 2 }),
    }),
  },
);
type StepPlan = typeof stepPlan extends fc.Arbitrary<infer T> ? T : never;

async function fuzzedSum(plan: readonly StepPlan[]) {
  const log: string[] = [];
  const vectors = new Map(MEMBERS.map((id, i) => [id, Uint32Array.from({ length: LENGTH }, (_, j) => (i * 977 + j * 131) % 2 ** BITS)]));
  let sum: SecureSum | undefined;
  let fuzzerMasked = false;
  const members = MEMBERS.map((id) => {
    const rounds = new SecAggRounds();
    const socket = { readyState: 1 };
    let step = 0;
    const member = {
      id, examples: 10, agent: "node", address: "memory", parts: new Set<string>(), socket,
      send(frame: Uint8Array) {
        setImmediate(async () => {
          if (socket.readyState !== 1) return;
          const answer: ClientMessage = await rounds.respond(ROUND, bodyOf(frame), () => vectors.get(id)!);
          const deliver = (raw: Uint8Array) => sum!.receive(member as unknown as Member, raw);
          if (id !== FUZZER) return deliver(encodeMessage(answer));
          const act = plan[step++]!;
          for (const raw of act.before) deliver(raw);
          if (act.answer === "withheld") {
            socket.readyState = 3;
            return sum!.left();
          }
          if (act.answer === "honest") {
            if (answer.step === "masked-input" && sum!.progress().waitingFor.includes(FUZZER)) fuzzerMasked = true;
            deliver(encodeMessage(answer));
          } else deliver(act.replacement);
          for (const raw of act.after) deliver(raw);
        });
      },
    };
    return member as unknown as Member;
  });
  sum = new SecureSum(ROUND, members, LENGTH, { deadlineMs: HOUR, log: (line) => log.push(line) }, { bytesIn: 0, bytesOut: 0 }, BITS);
  const result = await sum.result();
  return { result, log, vectors, fuzzerMasked };
}

describe("fuzzing serve's SecAgg+ boundary", () => {
  it("finishes every round with every honest client in it and the exact sum of those it includes, whatever one member sends", async () => {
    let fuzzerIn = 0;
    let refused = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(stepPlan, { minLength: STEPS.length, maxLength: STEPS.length }), async (plan) => {
        const { result, log, vectors, fuzzerMasked } = await fuzzedSum(plan);
        const honest = MEMBERS.filter((id) => id !== FUZZER);
        for (const id of honest) expect(result.included).toContain(id);
        // The fuzzer is in the sum exactly when its honest masked input was accepted (later it may leave: it is recovered).
        expect(result.included.includes(FUZZER)).toBe(fuzzerMasked);
        const expected = new Uint32Array(LENGTH);
        for (const id of result.included) for (let j = 0; j < LENGTH; j++) expected[j] = (expected[j]! + vectors.get(id)![j]!) % 2 ** BITS;
        expect([...result.quantizedSum]).toEqual([...expected]);
        if (result.included.includes(FUZZER)) fuzzerIn++;
        if (log.some((line) => /FT336/.test(line))) refused++;
      }),
      { numRuns: 20 },
    );
    // The runs met both outcomes, and the boundary refused what it was sent.
    expect(fuzzerIn).toBeGreaterThan(0);
    expect(refused).toBeGreaterThan(10);
  }, deadline(60_000));
});
