/**
 * examples/dp-fedsgd-logistic.ts: DP-FedSGD for logistic regression over 50 ragged clients.
 * It learns through the noise at the epsilon it reports, that epsilon is RdpAccountant's for
 * the rounds it ran, its noise is secret (same data, same cohorts, different models), and the
 * gradients may not leave the clients by a plain mean.
 */
import { describe, expect, test } from "vitest";
import {
  binaryTask,
  clientLoss,
  CLIP,
  DELTA,
  dpRound,
  FEATURES,
  NOISE_MULTIPLIER,
  SAMPLING_RATE,
  TARGET_EPSILON,
  train,
  type RoundReport,
} from "../../examples/dp-fedsgd-logistic.js";
import { atClients, atServer, broadcast, f32, grad, map, program, RdpAccountant, reduceMean } from "../../src/index.js";
import { Rng } from "../../src/lib/index.js";

const task = binaryTask(Rng.fromSeed(11));

describe("DP-FedSGD for logistic regression", () => {
  test("the round's signature declares the client data private and its release per call", () => {
    expect(dpRound.signature).toContain("x={f32[N,10]}@CLIENTS(private)");
    expect(dpRound.privacy).toEqual([`dpSum #0: Gaussian mechanism, clip ${CLIP}, noise multiplier ${NOISE_MULTIPLIER}, rho = 0.125 zCDP per call, called once`]);
  });

  test("beats 80% held-out accuracy at the epsilon it reports, which is RdpAccountant's for the rounds run", async () => {
    const reports: RoundReport[] = [];
    const { w, rounds, epsilon } = await train(task, { onRound: (r) => reports.push(r) });
    expect(reports.map((r) => r.round)).toEqual(Array.from({ length: rounds }, (_, i) => i));
    // An accountant stepped once per round, as the loop does (step(q, z, rounds) sums in another order: equal to rounding).
    const replay = new RdpAccountant();
    for (let i = 0; i < rounds; i++) replay.step(SAMPLING_RATE, NOISE_MULTIPLIER);
    expect(epsilon).toBe(replay.epsilon(DELTA));
    expect(epsilon).toBeCloseTo(new RdpAccountant().step(SAMPLING_RATE, NOISE_MULTIPLIER, rounds).epsilon(DELTA), 10);
    expect(rounds).toBeGreaterThan(10);
    expect(reports.at(-1)!.epsilon).toBe(epsilon);
    // It stopped at the last round within the target, not before.
    expect(epsilon).toBeLessThanOrEqual(TARGET_EPSILON);
    expect(new RdpAccountant().step(SAMPLING_RATE, NOISE_MULTIPLIER, rounds + 1).epsilon(DELTA)).toBeGreaterThan(TARGET_EPSILON);
    // Bayes accuracy of the task is about 95% (label noise 0.5 against a signal of norm ~3); no training is 50%.
    expect(reports.at(-1)!.accuracy).toBeGreaterThan(0.8);
    expect(w).toHaveLength(FEATURES);
  });

  test("two runs with the same data and the same cohorts give different models: the noise key is secret", async () => {
    const first = await train(task, { random: Rng.fromSeed(5) });
    const second = await train(task, { random: Rng.fromSeed(5) });
    expect(second.rounds).toBe(first.rounds);
    expect(second.w).not.toEqual(first.w);
  });

  test("the same gradients reduced by reduceMean instead of dpMean: FT109 while tracing", () => {
    const inputs = {
      w: atServer(f32([FEATURES, 1])),
      x: atClients(f32(["N", FEATURES]), { private: true }),
      y: atClients(f32(["N", 1]), { private: true }),
      mask: atClients(f32(["N"]), { private: true }),
      count: atClients(f32([]), { private: true }),
    };
    // The cast hides the mistake from tsc (which says FT109 too), so that tracing must catch it.
    const leak = () =>
      program(inputs, ({ w, x, y, mask, count }) =>
        reduceMean(map((wm, xm, ym, mm, cm) => grad((v: typeof wm) => clientLoss(v, xm, ym, mm, cm))(wm), broadcast(w), x, y, mask, count) as never),
      );
    expect(leak).toThrow(/^FT109: /);
  });

  test("the loss helper with a SERVER value where a client's belongs: tracing says tsc's FT104 (test/fixtures/type-errors/ft104-logistic-helper.ts)", () => {
    const inputs = { w: atServer(f32([FEATURES, 1])), heldX: atServer(f32(["N", FEATURES])), y: atClients(f32(["N", 1])), mask: atClients(f32(["N"])), count: atClients(f32([])) };
    const misplaced = () => program(inputs, ({ w, heldX, y, mask, count }) => clientLoss(broadcast(w), heldX as never, y, mask, count));
    expect(misplaced).toThrow(
      "FT104: clientLoss() mixes f32[10,1]@CLIENTS with f32[N,10]@SERVER: broadcast the SERVER value or reduce the CLIENTS one",
    );
  });
});
