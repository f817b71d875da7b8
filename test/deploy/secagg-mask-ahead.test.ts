/**
 * A client expands its masks while it trains (src/deploy/secagg/client.ts, masks.ts sumOfMasks):
 * its masks depend on keys only, so when the masked-input request (or a setup that reuses keys)
 * arrives before its vector exists, the client expands the self mask and one pair mask per
 * neighbour that shared keys at once, and only quantizes and adds when the vector comes. Counted
 * here through the PRG's calls: every mask before any vector resolves, none after; the sums stay
 * exact, and a failed training sends nothing.
 */
import { afterAll, describe, expect, it, vi } from "vitest";

const expansions = vi.hoisted(() => ({ count: 0 }));
vi.mock("../../src/deploy/secagg/random.js", async (importOriginal) => {
  const random = await importOriginal<typeof import("../../src/deploy/secagg/random.js")>();
  return {
    ...random,
    prgWords: (seed: Uint8Array, words: number) => {
      expansions.count++;
      return random.prgWords(seed, words);
    },
  };
});

// The suite runs without isolation (vitest.config.ts): another file in this worker may have loaded the modules unmocked.
vi.resetModules();
afterAll(() => vi.doUnmock("../../src/deploy/secagg/random.js"));
const { SecAggRounds, SecAggServer, encodeMessage } = await import("../../src/deploy/secagg/index.js");
const { ids, randomVectors } = await import("./secagg-helpers.js");
type SecAggParams = import("../../src/deploy/secagg/index.js").SecAggParams;
type StepOutcome = import("../../src/deploy/secagg/index.js").StepOutcome;
type ReusedKeys = import("../../src/deploy/secagg/reuse.js").ReusedKeys;

const LENGTH = 512;
const CLIENTS = ids(5);
/** num_shares 5 of 5 clients: each client has the 4 others as neighbours. */
const params = (round: number): SecAggParams => ({ round, vector_length: LENGTH, num_shares: 5, reconstruction_threshold: 3, clipping_range: 1, quantization_range: 2 ** 16, modulus_range: 2 ** 24, key_rounds: 2 });

function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<T>((yes, no) => ((resolve = yes), (reject = no)));
  return { promise, resolve, reject };
}

/**
 * Plays a round; each client's vector is a promise the test settles. At the step that reads
 * the vectors every client is asked first, then `whileTraining` runs, then the vectors settle
 * (`fail` rejects one), the answers come and `trained` runs before they are delivered.
 */
async function play(
  server: InstanceType<typeof SecAggServer>,
  rounds: Map<string, InstanceType<typeof SecAggRounds>>,
  vectors: Map<string, Float32Array>,
  hooks: { whileTraining?: () => void; trained?: () => void; fail?: string } = {},
) {
  let requests: ReadonlyMap<string, object> = server.start();
  const answered = new Map<string, Error>();
  for (;;) {
    const trainings = new Map(CLIENTS.map((id) => [id, deferred<Float32Array>()]));
    const readBy = new Set<string>();
    const pending = [...requests].map(([id, message]) => {
      const answer = rounds.get(id)!.respond(server.params.round, encodeMessage(message as never), () => (readBy.add(id), trainings.get(id)!.promise));
      return answer.then((a) => [id, a] as const, (error: Error) => (answered.set(id, error), undefined));
    });
    await new Promise((resolve) => setImmediate(resolve));
    const read = readBy.size > 0;
    if (read) hooks.whileTraining?.();
    for (const id of readBy) (id === hooks.fail ? trainings.get(id)!.reject(new Error("training failed")) : trainings.get(id)!.resolve(vectors.get(id)!));
    const replies = await Promise.all(pending);
    if (read) hooks.trained?.();
    for (const reply of replies) if (reply !== undefined) server.receive(reply[0], encodeMessage(reply[1]));
    const outcome: StepOutcome = await server.advance();
    if (outcome.kind !== "messages") return { outcome, failed: answered };
    requests = outcome.messages;
  }
}

function expectSum(outcome: StepOutcome, vectors: Map<string, Float32Array>, included: readonly string[]) {
  if (outcome.kind !== "done") throw new Error(`not done: ${JSON.stringify(outcome)}`);
  expect(outcome.result.included).toEqual(included);
  for (let i = 0; i < LENGTH; i++) {
    const plain = included.reduce((sum, id) => sum + vectors.get(id)![i]!, 0);
    expect(Math.abs(outcome.result.sum[i]! - plain)).toBeLessThanOrEqual(included.length * (2 / 2 ** 16));
  }
}

describe("SecAgg+ masks expanded while the client trains", () => {
  it("expands each client's self mask and its 4 pair masks before its vector exists, in a setup round and in a round that reuses its keys; none after it", async () => {
    const rounds = new Map(CLIENTS.map((id) => [id, new SecAggRounds()]));
    let reuse: ReusedKeys | undefined;
    for (const round of [1, 2]) {
      const vectors = randomVectors(CLIENTS, LENGTH, 0.5);
      const server = new SecAggServer(params(round), CLIENTS, reuse === undefined ? {} : { reuse });
      const counted = { whileTraining: Number.NaN, trained: Number.NaN };
      expansions.count = 0;
      const { outcome } = await play(server, rounds, vectors, { whileTraining: () => (counted.whileTraining = expansions.count), trained: () => (counted.trained = expansions.count) });
      expect(counted.whileTraining).toBe(CLIENTS.length * (1 + 4));
      // After the vectors no mask is expanded (the stochastic rounding's coins come from random.ts's own stream, not counted here).
      expect(counted.trained - counted.whileTraining).toBe(0);
      expectSum(outcome, vectors, CLIENTS);
      reuse = server.reusable();
      if (round === 1) expect(reuse).toBeDefined();
    }
  });

  it("a client whose training fails sends no masked input, and the round sums the others", async () => {
    const rounds = new Map(CLIENTS.map((id) => [id, new SecAggRounds()]));
    const vectors = randomVectors(CLIENTS, LENGTH, 0.5);
    const { outcome, failed } = await play(new SecAggServer(params(1), CLIENTS), rounds, vectors, { fail: "client-002" });
    expect([...failed.keys()]).toEqual(["client-002"]);
    expect(failed.get("client-002")!.message).toBe("training failed");
    expectSum(outcome, vectors, CLIENTS.filter((id) => id !== "client-002"));
  });
});
