/**
 * Property-based fuzzing of `fedtensor serve` at its boundary, with fast-check: a fuzzer opens
 * connection after connection to a real server while two honest `fedtensor client` processes
 * train beside it, and sends sequences of client messages built from the protocol's schemas
 * (src/deploy/protocol/messages.ts), valid and invalid (wrong types, extra fields, other
 * versions, claims out of bounds, bytes that are no frame, text frames, bodies of random
 * bytes, the honest clients' tokens), in protocol order (hello, ready, then the rest) and out of
 * it. After every sequence the server must still answer /healthz; at the end the run must
 * finish, and its rounds must equal, bit for bit, those of the same run without the fuzzer.
 *
 * The honest clients each hold copies of one example, so that their CSPRNG shuffle cannot
 * change what they compute: without the fuzzer the run is then the same on every try, and any
 * difference is the fuzzer's doing. Needs `npm run build` (bin/ runs dist/).
 */
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { encodeFrame } from "../../src/deploy/protocol/frame.js";
import { WIRE_VERSION } from "../../src/deploy/protocol/messages.js";
import { encodeRecord } from "../../src/deploy/protocol/record.js";
import { loadLatestCheckpoint } from "../../src/lib/run/checkpoint.js";
import { readMetrics } from "../../src/lib/run/metrics.js";
import { deadline } from "../helpers/deadline.js";
import { tempDir } from "../run/temp-dir.js";
import { withOption } from "./browser-helpers.js";
import { rawClient } from "./raw-client.js";
import { smallServe, startFuzzedRun, type FuzzedRun, type Process } from "./serve-helpers.js";

const started: Process[] = [];
afterAll(() => started.forEach((p) => p.child.exitCode === null && p.child.kill("SIGKILL")));
const track = (p: Process) => (started.push(p), p);

const ROUNDS = 5;
/** Fuzzed connections per run: bounded, so that the test takes about a minute. */
const RUNS = 60;
const ADMIN = "fuzz-admin-token-0123456789abcdef";

/** A served run of two honest file clients (and a third token for the fuzzer); resolves once both are ready. */
// --clients-per-round above the clients there are: every ready client is in every cohort, the fuzzer's connection when it is one.
// Each round waits out its join wait: 2 s keeps the fuzzed run going while the fuzzer is; the
// baseline, with nobody else to wait for, takes 0.2 s (the wait changes no cohort: both clients are ready before round 1).
const startRun = (dir: string, joinWait: string) =>
  startFuzzedRun(dir, 2, (tokens, out) => withOption(smallServe(tokens, out, "--rounds", String(ROUNDS), "--clients-per-round", "10", "--min-clients", "2", "--round-timeout", "20"), "--join-wait", joinWait), ADMIN, track);

async function outcome(run: FuzzedRun) {
  expect(await run.server.exited()).toBe(0);
  for (const client of run.honest) expect(await client.exited()).toBe(0);
  const rows = readMetrics(join(run.out, "metrics.jsonl")).map((r) => ({ round: r.round, train_loss: r.train_loss, test_accuracy: r.test_accuracy, test_loss: r.test_loss }));
  const checkpoint = await loadLatestCheckpoint(run.out);
  return { rows, params: JSON.stringify(checkpoint!.checkpoint.serverState) };
}

/** One fuzzed message: a frame (or text) the fuzzer sends. */
function messages(tokens: readonly string[]): fc.Arbitrary<Uint8Array | string> {
  const v = fc.oneof({ weight: 9, arbitrary: fc.constant(WIRE_VERSION) }, { weight: 1, arbitrary: fc.oneof(fc.integer(), fc.string(), fc.constant(null)) });
  const round = fc.oneof(fc.integer({ min: 1, max: ROUNDS + 1 }), fc.integer(), fc.double());
  const id = fc.oneof(fc.uuid(), fc.string({ maxLength: 200 }));
  const count = fc.oneof(fc.integer({ min: 1, max: 3000 }), fc.integer({ min: 3001, max: 2 ** 31 - 1 }), fc.integer(), fc.double(), fc.constant(2 ** 53));
  const body = fc.oneof(fc.constant(new Uint8Array(0)), fc.uint8Array({ maxLength: 4096 }), fc.constant(encodeRecord(new Map([["acc0", { dtype: "float32", shape: [2], data: Float32Array.of(1, Number.NaN) }]]))));
  const headers = fc.oneof(
    fc.record({ v, type: fc.constant("hello"), token: fc.oneof(fc.constantFrom(...tokens), fc.string({ maxLength: 2000 })), agent: fc.oneof(fc.constantFrom("node", "browser"), fc.string()) }),
    fc.record({ v, type: fc.constant("ready"), examples: count }),
    fc.record({ v, type: fc.constantFrom("update", "trained", "secagg"), round, task: id }),
    fc.record({ v, type: fc.constant("failed"), round, task: id, reason: fc.string({ maxLength: 3000, unit: "binary" }) }),
    // Extra fields and unknown types.
    fc.record({ v, type: fc.string({ maxLength: 20 }) }, { requiredKeys: [] }).chain((h) => fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }).map((extra) => ({ ...extra, ...h }))),
  );
  const frame = fc.tuple(headers, body).map(([header, b]) => encodeFrame(header, b));
  return fc.oneof(
    { weight: 8, arbitrary: frame },
    // Bytes that are no frame: random, truncated, a header length past the frame, text.
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }) },
    { weight: 1, arbitrary: frame.chain((f) => fc.integer({ min: 0, max: Math.max(0, f.length - 1) }).map((n) => f.subarray(0, n))) },
    { weight: 1, arbitrary: fc.integer({ min: 5, max: 2 ** 32 - 1 }).map((n) => Uint8Array.of(n & 255, (n >>> 8) & 255, (n >>> 16) & 255, n >>> 24, 123)) },
    { weight: 1, arbitrary: fc.string({ maxLength: 100 }) },
  );
}

/** A connection's messages: in protocol order (a hello with the fuzzer's own token, a ready, then the rest) or in any order. */
function sequences(tokens: readonly string[]): fc.Arbitrary<(Uint8Array | string)[]> {
  const rest = fc.array(messages(tokens), { minLength: 0, maxLength: 6 });
  const ordered = fc
    .tuple(fc.constantFrom("node", "browser"), fc.integer({ min: 1, max: 3000 }), rest)
    .map(([agent, examples, more]) => [encodeFrame({ v: WIRE_VERSION, type: "hello", token: tokens[2], agent }), encodeFrame({ v: WIRE_VERSION, type: "ready", examples }), ...more]);
  return fc.oneof(ordered, fc.array(messages(tokens), { minLength: 1, maxLength: 8 }));
}

async function healthy(url: string): Promise<boolean> {
  const response = await fetch(`${url.replace(/^ws/, "http").replace(/\/fedtensor$/, "")}/healthz`, { headers: { authorization: `Bearer ${ADMIN}` } });
  return response.status === 200;
}

describe("fuzzing fedtensor serve's boundary", () => {
  it(`stays up through ${RUNS} fuzzed connections beside honest clients, whose rounds equal the run without the fuzzer`, async () => {
    const baseline = await outcome(await startRun(tempDir("fedtensor-fuzz-base-"), "0.2"));
    expect(baseline.rows).toHaveLength(ROUNDS);

    const run = await startRun(tempDir("fedtensor-fuzz-"), "2");
    let during = 0;
    await fc.assert(
      fc.asyncProperty(sequences(run.tokens), async (sequence) => {
        if (run.server.child.exitCode !== null) return;
        const fuzzer = rawClient(run.url);
        await Promise.race([fuzzer.opened, fuzzer.closed]);
        for (const message of sequence) {
          fuzzer.send(message);
          await new Promise((resolve) => setImmediate(resolve));
        }
        // Long enough for the server to act on the messages (and refuse them); then the fuzzer leaves.
        await Promise.race([fuzzer.closed, new Promise((resolve) => setTimeout(resolve, 150))]);
        fuzzer.socket.terminate();
        if (run.server.child.exitCode !== null) {
          // The run may have finished (exit 0) while the fuzzer was still going; a crash is never fine.
          expect(run.server.child.exitCode).toBe(0);
          return;
        }
        during++;
        expect(await healthy(run.url)).toBe(true);
      }),
      { numRuns: RUNS, interruptAfterTimeLimit: deadline(90_000), markInterruptAsFailure: false },
    );
    const fuzzed = await outcome(run);
    // The fuzzer met the rounds, not only an idle server: most of its connections came while the run went on.
    expect(during).toBeGreaterThan(RUNS / 2);
    expect(fuzzed.rows).toEqual(baseline.rows);
    expect(fuzzed.params).toBe(baseline.params);
    const log = run.server.output();
    // The server refused what it was sent, with reasons, and the honest clients were never knocked off.
    expect(log).toMatch(/refused a client at .*: (malformed header|a text frame|wire version)/);
    expect(log).not.toMatch(/client-00[12] reconnected/);
    expect(run.honest.map((c) => c.output()).join("")).not.toMatch(/reconnecting|refused/);
  }, deadline(240_000));
});
