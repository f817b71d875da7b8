/**
 * Mime and MimeLite (Karimireddy et al. 2020, Algorithm 1) against float64 hand computations
 * on the one-parameter model, over two rounds so that the momentum a round returns is the one
 * the next round's clients apply; and with Adam as the base optimiser, whose frozen moments
 * and step count the hand computation follows too. The first client has one real batch and
 * one padding batch.
 */
import { describe, expect, test } from "vitest";
import { initialMimeState, mimeProgram, type MimeVariant } from "../../src/lib/algorithms/mime.js";
import { adam, sgd } from "../../src/lib/optimizers/optimizers.js";
import { batchInputs, oneParam, oneParamGradient, pointCohort, read, twoClients, type Point } from "./helpers.js";

const data = batchInputs(pointCohort(twoClients));
const counts = twoClients.map((batches) => batches.flat().length);
const weightedMean = (xs: readonly number[]) => xs.reduce((sum, x, i) => sum + x * counts[i]!, 0) / (counts[0]! + counts[1]!);
/** The cohort's full-batch gradient at w: the example-weighted mean of each client's over all its points. */
const fullGradient = (w: number) => weightedMean(twoClients.map((batches) => oneParamGradient(w, batches.flat())));

/** One round of Mime or MimeLite in float64, with B's step direction and state update given. */
function handRound<S>(
  variant: MimeVariant,
  x: number,
  state: S,
  lr: number,
  serverLr: number,
  direction: (g: number, state: S) => number,
  nextState: (c: number, state: S) => S,
): { x: number; state: S } {
  const c = fullGradient(x);
  const trained = twoClients.map((batches) => {
    let y = x;
    for (const batch of batches as readonly (readonly Point[])[]) {
      const g = variant === "mime" ? oneParamGradient(y, batch) - oneParamGradient(x, batch) + c : oneParamGradient(y, batch);
      y -= lr * direction(g, state);
    }
    return y;
  });
  return { x: x + serverLr * weightedMean(trained.map((y) => y - x)), state: nextState(c, state) };
}

const [w0, lr, serverLr] = [0.4, 0.5, 0.8];
const first = (tree: unknown) => (tree as { w: number[] }).w[0]!;

describe.each(["mime", "mimelite"] as const)("%s", (variant) => {
  test("two rounds with momentum match the hand computation", async () => {
    const beta = 0.9;
    const round = mimeProgram(oneParam, variant, { baseOptimizer: (rate) => sgd(rate, { momentum: beta }) });
    let hand = { x: w0, state: { count: 3, trace: 0.2 } };
    let inputs = { params: { w: [w0] }, state: { count: 3, trace: { w: [0.2] } } };
    for (let r = 0; r < 2; r++) {
      const out = await read(await round.run({ ...inputs, ...data, lr, serverLr }));
      hand = handRound(
        variant,
        hand.x,
        hand.state,
        lr,
        serverLr,
        (g, s) => beta * s.trace + g,
        (c, s) => ({ count: s.count + 1, trace: beta * s.trace + c }),
      );
      expect(first(out.params)).toBeCloseTo(hand.x, 5);
      expect(first(out.state.trace)).toBeCloseTo(hand.state.trace, 5);
      expect(out.state.count).toBe(hand.state.count);
      inputs = { params: out.params as never, state: out.state as never };
    }
  });

  test("with Adam as the base optimiser, clients apply its moments frozen", async () => {
    const [b1, b2, eps] = [0.9, 0.999, 1e-8];
    const round = mimeProgram(oneParam, variant, { baseOptimizer: (rate) => adam(rate, { b1, b2, eps }) });
    const state = { count: 2, mu: 0.05, nu: 0.01 };
    // Adam's step from the frozen state: the moments the gradient would give, bias-corrected at the server's count + 1.
    const direction = (g: number, s: typeof state) => {
      const t = s.count + 1;
      const mu = (b1 * s.mu + (1 - b1) * g) / (1 - b1 ** t);
      const nu = (b2 * s.nu + (1 - b2) * g * g) / (1 - b2 ** t);
      return mu / (Math.sqrt(nu) + eps);
    };
    const next = (c: number, s: typeof state) => ({ count: s.count + 1, mu: b1 * s.mu + (1 - b1) * c, nu: b2 * s.nu + (1 - b2) * c * c });
    const hand = handRound(variant, w0, state, 0.05, 1, direction, next);
    const out = await read(
      await round.run({ params: { w: [w0] }, state: { count: 2, mu: { w: [0.05] }, nu: { w: [0.01] } }, ...data, lr: 0.05, serverLr: 1 }),
    );
    expect(first(out.params)).toBeCloseTo(hand.x, 5);
    expect(first(out.state.mu)).toBeCloseTo(hand.state.mu, 6);
    expect(first(out.state.nu)).toBeCloseTo(hand.state.nu, 6);
    expect(out.state.count).toBe(3);
  });
});

test("the initial state is the base optimiser's init: count 0, zero momentum", () => {
  const state = initialMimeState(oneParam, { w: { shape: [1], data: Float32Array.of(0.7) } });
  expect(state).toEqual({ count: { shape: [], data: Float32Array.of(0) }, trace: { w: { shape: [1], data: Float32Array.of(0) } } });
});

test("Mime's round talks to the clients twice, MimeLite's once", () => {
  const maps = (variant: MimeVariant) => mimeProgram(oneParam, variant).ir.graph.nodes.filter((node) => node.op === "map").length;
  expect(maps("mime")).toBe(2);
  expect(maps("mimelite")).toBe(1);
});
