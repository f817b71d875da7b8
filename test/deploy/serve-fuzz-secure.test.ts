/**
 * Property-based fuzzing of a real `fedtensor serve --aggregator secure` with fast-check, beside
 * 3 honest `fedtensor client` processes: connection after connection, the fuzzer sends secagg
 * frames whose bodies come from SecAgg+'s five client schemas, valid and invalid
 * (secagg-arbitraries.ts), in protocol order (a hello with its own token, a ready, then, when a
 * round's task reaches it, a trained answer that makes it a member of the secure sum, and
 * SecAgg+ messages for that round) and out of it, and frames over the server's bounds or whose
 * lengths lie. After every connection the server must answer /healthz; the run must finish
 * with no honest client knocked off, and its rounds must equal those of the same run without
 * the fuzzer (run beside it), within the secure sum's stochastic rounding (below).
 *
 * --max-client-examples 4 (what each honest client holds) keeps the fuzzer from shrinking the
 * cohort's public scale by its claim (FT350 refuses more). Needs `npm run build`.
 */
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { encodeFrame } from "../../src/deploy/protocol/frame.js";
import { WIRE_VERSION } from "../../src/deploy/protocol/messages.js";
import { readMetrics } from "../../src/lib/run/metrics.js";
import { deadline } from "../helpers/deadline.js";
import { tempDir } from "../run/temp-dir.js";
import { withOption } from "./browser-helpers.js";
import { rawClient, type RawClient } from "./raw-client.js";
import { fuzzedSecAggMessage } from "./secagg-arbitraries.js";
import { smallServe, startFuzzedRun, type FuzzedRun, type Process } from "./serve-helpers.js";

const started: Process[] = [];
afterAll(() => started.forEach((p) => p.child.exitCode === null && p.child.kill("SIGKILL")));
const track = (p: Process) => (started.push(p), p);

const ROUNDS = 8;
/** Fuzzed connections: bounded, so that the file takes well under a minute. */
const RUNS = 24;
const HONEST = 3;
const ADMIN = "fuzz-admin-token-0123456789abcdef";
const MEMBERS = ["client-001", "client-002", "client-003", "client-004"];
const FUZZER = MEMBERS[HONEST]!;
/** The logistic model's 784 x 10 weights and 10 biases. */
const PARAMETERS = 7850;
/** The server's bounds for this model (coordinator.ts): the largest secagg body, and the WebSocket's maxPayload (http.ts). */
const MAX_SECAGG_BODY = 6 * (4 * PARAMETERS + 1024) + 65536;
const MAX_PAYLOAD = MAX_SECAGG_BODY + 70_000;

/** A served secure run of 3 honest file clients (and a fourth token for the fuzzer); resolves once all are ready. */
// --clients-per-round above the clients there are: every ready client is in every cohort, the fuzzer's connection when it is one.
const startRun = (dir: string) =>
  startFuzzedRun(dir, HONEST, (tokens, out) => withOption(smallServe(tokens, out, "--model", "logistic", "--aggregator", "secure", "--rounds", String(ROUNDS), "--clients-per-round", "10", "--min-clients", "3", "--round-timeout", "20", "--max-client-examples", "4"), "--join-wait", "2"), ADMIN, track);

async function outcome(run: FuzzedRun) {
  expect(await run.server.exited()).toBe(0);
  for (const client of run.honest) expect(await client.exited()).toBe(0);
  return readMetrics(join(run.out, "metrics.jsonl")).map((r) => ({ round: r.round, train_loss: r.train_loss as number, test_accuracy: r.test_accuracy as number, test_loss: r.test_loss as number }));
}

const secaggHeader = (round: number) => ({ v: WIRE_VERSION, type: "secagg", round });

/** A frame the fuzzer sends in `round`: a secagg frame of a fuzzed SecAgg+ message, or one over the bounds, or one whose lengths lie. */
function fuzzedFrame(round: number): fc.Arbitrary<Uint8Array> {
  const headerRound = fc.oneof({ weight: 6, arbitrary: fc.constant(round) }, { weight: 1, arbitrary: fc.oneof(fc.integer({ min: 1, max: ROUNDS + 1 }), fc.integer(), fc.double()) });
  const body = fuzzedSecAggMessage({ round, members: MEMBERS, fuzzer: FUZZER, length: 1, neighbourCounts: [1, 2, 3] });
  const secagg = fc.tuple(headerRound, body).map(([r, b]) => encodeFrame(secaggHeader(r), b));
  return fc.oneof(
    { weight: 8, arbitrary: secagg },
    // Over the WebSocket's maxPayload (ws closes with 1009), and a secagg body over its bound within it.
    { weight: 1, arbitrary: fc.constant(round).map((r) => encodeFrame(secaggHeader(r), new Uint8Array(MAX_PAYLOAD + 1))) },
    { weight: 1, arbitrary: fc.constant(round).map((r) => encodeFrame(secaggHeader(r), new Uint8Array(MAX_SECAGG_BODY + 1))) },
    // Lying lengths: the frame's header length, then the SecAgg+ message's JSON length, replaced by any u32.
    { weight: 1, arbitrary: fc.tuple(secagg, fc.integer({ min: 0, max: 2 ** 32 - 1 })).map(([f, n]) => withLength(f, 0, n)) },
    { weight: 1, arbitrary: fc.tuple(secagg, fc.integer({ min: 0, max: 2 ** 32 - 1 })).map(([f, n]) => withLength(f, 4 + new DataView(f.buffer).getUint32(0, true), n)) },
  );
}

/** `frame` with the u32 little-endian length at `at` replaced by `length` (when the frame reaches that far). */
function withLength(frame: Uint8Array, at: number, length: number): Uint8Array {
  const out = frame.slice();
  if (at + 4 <= out.length) new DataView(out.buffer).setUint32(at, length, true);
  return out;
}

/** Resolves with `promise`'s value, or undefined after `ms` or when it rejects (the connection closed). */
const within = <T>(promise: Promise<T>, ms: number): Promise<T | undefined> =>
  Promise.race([promise.catch(() => undefined), new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), ms))]);

async function sendAll(fuzzer: RawClient, frames: readonly Uint8Array[]) {
  for (const frame of frames) {
    fuzzer.send(frame);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** One fuzzed connection, drawn with `g` as it goes (the round its SecAgg+ messages name is the one its task says). */
/** The fuzzer's hello with its own token and a ready within the example bound. */
const joining = (run: FuzzedRun, examples: number) => [encodeFrame({ v: WIRE_VERSION, type: "hello", token: run.tokens[HONEST], agent: "node" }), encodeFrame({ v: WIRE_VERSION, type: "ready", examples })];

async function fuzzConnection(g: fc.GeneratorValue, run: FuzzedRun): Promise<void> {
  const fuzzer = rawClient(run.url);
  await Promise.race([fuzzer.opened, fuzzer.closed]);
  let round = g(() => fc.integer({ min: 1, max: ROUNDS }));
  if (g(() => fc.boolean())) {
    await sendAll(fuzzer, joining(run, g(() => fc.integer({ min: 1, max: 4 }))));
    // A round's cohort takes every ready client: the fuzzer's task comes with the next round (the join wait is 2 s).
    const task = await within(fuzzer.next("task"), 2500);
    if (task !== undefined) {
      round = task.round;
      if (g(() => fc.boolean())) {
        // Trained: the fuzzer is a member of the round's secure sum, and its setup comes.
        fuzzer.send(encodeFrame({ v: WIRE_VERSION, type: "trained", round, task: task.task }));
        await within(fuzzer.next("secagg"), 2500);
      }
    }
  }
  await sendAll(fuzzer, g(() => fc.array(fuzzedFrame(round), { minLength: 1, maxLength: 5 })));
  // Long enough for the server to act on the frames (and refuse them); then the fuzzer leaves.
  await Promise.race([fuzzer.closed, new Promise((resolve) => setTimeout(resolve, 150))]);
  fuzzer.socket.terminate();
}

/** Whether the server answers /healthz; undefined when it no longer listens because its run finished (it exits 0). */
async function healthy(run: FuzzedRun): Promise<boolean | undefined> {
  try {
    const response = await fetch(`${run.url.replace(/^ws/, "http").replace(/\/fedtensor$/, "")}/healthz`, { headers: { authorization: `Bearer ${ADMIN}` } });
    return response.status === 200;
  } catch (error) {
    if (!/run finished|finished after/.test(run.server.output())) throw error;
    return undefined;
  }
}

describe("fuzzing a secure fedtensor serve's SecAgg+ boundary", () => {
  it(`stays up through up to ${RUNS} fuzzed connections beside 3 honest clients, whose rounds equal the run without the fuzzer`, async () => {
    // The run without the fuzzer goes on beside the fuzzed one: the same clients and data, so the same rounds.
    const [baselineRun, run] = await Promise.all([startRun(tempDir("fedtensor-fuzz-secure-base-")), startRun(tempDir("fedtensor-fuzz-secure-"))]);
    // The bounds' edges once each, whatever fast-check draws: a secagg body a byte over its bound, a message a byte over maxPayload.
    for (const size of [MAX_SECAGG_BODY + 1, MAX_PAYLOAD + 1]) {
      const fuzzer = rawClient(run.url);
      await fuzzer.opened;
      await sendAll(fuzzer, [...joining(run, 4), encodeFrame(secaggHeader(1), new Uint8Array(size))]);
      await fuzzer.closed;
      expect(await healthy(run)).toBe(true);
    }
    let during = 0;
    await fc.assert(
      fc.asyncProperty(fc.gen(), async (g) => {
        if (run.server.child.exitCode !== null) return;
        await fuzzConnection(g, run);
        if (run.server.child.exitCode !== null) {
          // The run may have finished (exit 0) while the fuzzer was still going; a crash is never fine.
          expect(run.server.child.exitCode).toBe(0);
          return;
        }
        const health = await healthy(run);
        if (health === undefined) return;
        during++;
        expect(health).toBe(true);
      }),
      { numRuns: RUNS, interruptAfterTimeLimit: deadline(90_000), markInterruptAsFailure: false },
    );
    const [baseline, fuzzed] = await Promise.all([outcome(baselineRun), outcome(run)]);
    expect(baseline).toHaveLength(ROUNDS);
    // Connections drawn after the run finished are skipped: how many came while it ran depends on
    // the machine's load (13 or more of 24 on an idle one, 11 in a loaded CI run). A quarter is
    // the floor; that the fuzzer reached the secure sums as a member is checked on the log below.
    expect(during).toBeGreaterThan(RUNS / 4);
    // The secure sums' stochastic rounding (quantize.ts: a CSPRNG coin per value, never --seed) makes two runs of the same
    // clients differ: by at most one quantization step 2c/Q = 16/2^22 (about 4e-6) per value and client, times 4 after the
    // scale, a round; the runs measured here differed by under 1e-4 in a loss and by one test example in 10,000.
    // What the fuzzer could do instead is far larger: an input of its own merged (a round's sum off by a whole
    // client's update), a smaller scale from its claim (refused above 4 examples), a round aborted (a row missing).
    expect(fuzzed.map((r) => r.round)).toEqual(baseline.map((r) => r.round));
    fuzzed.forEach((row, i) => {
      const base = baseline[i]!;
      expect(Math.abs(row.train_loss - base.train_loss)).toBeLessThan(1e-3 * Math.max(1, base.train_loss));
      expect(Math.abs(row.test_loss - base.test_loss)).toBeLessThan(1e-3 * Math.max(1, base.test_loss));
      expect(Math.abs(row.test_accuracy - base.test_accuracy)).toBeLessThanOrEqual(0.002);
    });
    const log = run.server.output();
    // The fuzzer reached the secure sums as a member and was refused there (FT336), and the bounds held.
    expect(log).toMatch(/round \d+: refused a secagg message from client-004: /);
    expect(log).toMatch(/FT336: SecAgg\+ [a-z-]+ message from client-004 refused/);
    expect(log).toMatch(/refused client-004 at .*: a secagg body of \d+ bytes exceeds the limit of \d+/);
    expect(log).toMatch(/refused client-004 at .*: a message over the size limit/);
    // Every round summed the three honest clients, none of them ever dropped or knocked off.
    for (let round = 1; round <= ROUNDS; round++) expect(log).toContain(`round ${round} secagg done: sum of ${HONEST} clients`);
    expect(log).not.toMatch(/dropped[^\n]*client-00[123]|client-00[123] (dropped|reconnected)/);
    expect(run.honest.map((c) => c.output()).join("")).not.toMatch(/reconnecting|refused/);
  }, deadline(240_000));
});
