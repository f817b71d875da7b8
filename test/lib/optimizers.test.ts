/**
 * The optimisers and schedules against float64 computations from their update rules (written
 * here from the papers' and torch.optim's pseudo-code, one parameter vector at a time), and
 * against PyTorch's own figures: a few steps on a quadratic whose gradient depends on the
 * parameters, so each step's state feeds the next.
 */
import { describe, expect, test } from "vitest";
import { add, constant, f32, grad, mul, program, sub, sum } from "../../src/index.js";
import {
  adagrad,
  adam,
  adamw,
  applyUpdates,
  chain,
  clipByGlobalNorm,
  constantSchedule,
  cosineDecay,
  exponentialDecay,
  rmsprop,
  sgd,
  stepDecay,
  warmupCosineDecay,
  yogi,
  type GradientTransformation,
  type PlacedSchedule,
} from "../../src/lib/optimizers/index.js";
import { FedTensorError } from "../../src/errors/error.js";
import { read } from "./helpers.js";

// f(w, b) = 1/2 sum(C (w - T)^2) + (b - 1)^2: gradient C (w - T) and 2 (b - 1).
const C = [1, 2, 0.5];
const T = [0.3, -0.2, 1];
const start = { w: [1, -1, 0.5], b: 0.25 };
const STEPS = 4;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyTransformation = GradientTransformation<any>;

const paramSpecs = { w: f32([3]), b: f32([]) };
type Params = { w: number[]; b: number };

/** The parameters after each of STEPS steps of `optimizer` on f, traced into one program. */
function trajectoryProgram(optimizer: AnyTransformation) {
  return program(paramSpecs, (params) => {
    const loss = (p: typeof params) => {
      const dw = sub(p.w, constant(T));
      return add(mul(sum(mul(mul(dw, dw), constant(C))), 0.5), mul(sub(p.b, 1), sub(p.b, 1)));
    };
    let p = params;
    let state = optimizer.init(p);
    const trajectory = [];
    for (let step = 0; step < STEPS; step++) {
      const [updates, next] = optimizer.update(grad(loss)(p), state, p);
      p = applyUpdates(p, updates);
      state = next;
      trajectory.push(p);
    }
    return { trajectory, state };
  });
}

async function trajectory(optimizer: AnyTransformation): Promise<number[][]> {
  // read() gives arrays of trees as records keyed by position.
  const out = (await read(await trajectoryProgram(optimizer).run(start))) as unknown as { trajectory: Record<number, Params> };
  return Object.values(out.trajectory).map(({ w, b }) => [...w, b]);
}

/** A float64 optimiser on the flat parameter vector [w, b]: the new vector from step t (1-based). */
type HandStep = (p: number[], g: number[], t: number) => number[];

function handTrajectory(step: HandStep): number[][] {
  let p = [...start.w, start.b];
  const out: number[][] = [];
  for (let t = 1; t <= STEPS; t++) {
    const g = [...p.slice(0, 3).map((w, i) => C[i]! * (w - T[i]!)), 2 * (p[3]! - 1)];
    p = step(p, g, t);
    out.push(p);
  }
  return out;
}

const zeros = () => [0, 0, 0, 0];

const hand = {
  sgd: (lr: (t: number) => number): HandStep => (p, g, t) => p.map((x, i) => x - lr(t) * g[i]!),
  momentum: (lr: number, m: number, nesterov: boolean): HandStep => {
    const buf = zeros();
    return (p, g) =>
      p.map((x, i) => {
        buf[i] = m * buf[i]! + g[i]!;
        return x - lr * (nesterov ? g[i]! + m * buf[i]! : buf[i]!);
      });
  },
  // torch.optim.Adam / AdamW (decoupled decay first), bias-corrected; Yogi's v per Zaheer et al.
  adam: (lr: number, b1: number, b2: number, eps: number, { decay = 0, yogiV0 }: { decay?: number; yogiV0?: number } = {}): HandStep => {
    const m = zeros();
    const v = yogiV0 === undefined ? zeros() : [yogiV0, yogiV0, yogiV0, yogiV0];
    return (p, g, t) =>
      p.map((x, i) => {
        const gi = g[i]!;
        m[i] = b1 * m[i]! + (1 - b1) * gi;
        v[i] = yogiV0 === undefined ? b2 * v[i]! + (1 - b2) * gi * gi : v[i]! - (1 - b2) * gi * gi * Math.sign(v[i]! - gi * gi);
        const mHat = m[i]! / (1 - b1 ** t);
        const vHat = v[i]! / (1 - b2 ** t);
        return x * (1 - lr * decay) - (lr * mHat) / (Math.sqrt(vHat) + eps);
      });
  },
  adagrad: (lr: number, eps: number): HandStep => {
    const s = zeros();
    return (p, g) =>
      p.map((x, i) => {
        s[i] = s[i]! + g[i]! ** 2;
        return x - (lr * g[i]!) / (Math.sqrt(s[i]!) + eps);
      });
  },
  rmsprop: (lr: number, alpha: number, eps: number): HandStep => {
    const v = zeros();
    return (p, g) =>
      p.map((x, i) => {
        v[i] = alpha * v[i]! + (1 - alpha) * g[i]! ** 2;
        return x - (lr * g[i]!) / (Math.sqrt(v[i]!) + eps);
      });
  },
};

function expectTrajectory(got: number[][], expected: number[][], digits = 5): void {
  expect(got.length).toBe(expected.length);
  got.forEach((row, t) => row.forEach((x, i) => expect(x, `step ${t + 1}, parameter ${i}`).toBeCloseTo(expected[t]![i]!, digits)));
}

describe("optimisers follow their update rules", () => {
  const cases: [string, AnyTransformation, HandStep][] = [
    ["sgd", sgd(0.1), hand.sgd(() => 0.1)],
    ["sgd momentum", sgd(0.1, { momentum: 0.9 }), hand.momentum(0.1, 0.9, false)],
    ["sgd nesterov", sgd(0.1, { momentum: 0.9, nesterov: true }), hand.momentum(0.1, 0.9, true)],
    ["adam", adam(0.1), hand.adam(0.1, 0.9, 0.999, 1e-8)],
    ["adam, other betas", adam(0.05, { b1: 0.5, b2: 0.9, eps: 1e-3 }), hand.adam(0.05, 0.5, 0.9, 1e-3)],
    ["adamw", adamw(0.1, { weightDecay: 0.2 }), hand.adam(0.1, 0.9, 0.999, 1e-8, { decay: 0.2 })],
    ["yogi", yogi(0.1), hand.adam(0.1, 0.9, 0.999, 1e-3, { yogiV0: 1e-6 })],
    ["adagrad", adagrad(0.1), hand.adagrad(0.1, 1e-10)],
    ["rmsprop", rmsprop(0.01), hand.rmsprop(0.01, 0.99, 1e-8)],
  ];
  test.each(cases)("%s", async (_name, optimizer, step) => {
    expectTrajectory(await trajectory(optimizer), handTrajectory(step));
  });

  test("yogi's second moment takes both signs of sign(v - g^2)", async () => {
    // v starts above the last steps' g^2 (so it shrinks) and below the first's (so it grows).
    const step = hand.adam(0.3, 0.9, 0.9, 1e-3, { yogiV0: 0.5 });
    expectTrajectory(await trajectory(yogi(0.3, { b2: 0.9, initialAccumulator: 0.5 })), handTrajectory(step));
  });

  test("global-norm clipping scales the whole gradient tree before the optimiser", async () => {
    const maxNorm = 0.5;
    const clipped: HandStep = (p, g) => {
      const norm = Math.hypot(...g);
      const scale = norm > maxNorm ? maxNorm / norm : 1;
      return p.map((x, i) => x - 0.1 * g[i]! * scale);
    };
    // The first gradients' norm (about 2.4) exceeds 0.5; the optimiser's state is the tuple of the parts'.
    expectTrajectory(await trajectory(chain(clipByGlobalNorm(maxNorm), sgd(0.1))), handTrajectory(clipped));
    expectTrajectory(await trajectory(chain(clipByGlobalNorm(100), sgd(0.1))), handTrajectory(hand.sgd(() => 0.1)));
  });

  test("the step count lives in the state", async () => {
    const out = (await read(await trajectoryProgram(chain(clipByGlobalNorm(1), adam(0.1))).run(start))) as unknown as {
      state: Record<number, { count?: number }>;
    };
    expect(out.state[0]).toEqual({});
    expect(out.state[1]!.count).toBe(STEPS);
  });
});

/**
 * PyTorch 1.13.1's figures (Debian's python3-torch) for the same problem in float64, after the
 * four steps, made once with this script:
 *   import torch
 *   C = torch.tensor([1., 2., .5], dtype=torch.float64); T = torch.tensor([.3, -.2, 1.], dtype=torch.float64)
 *   cases = [
 *     ("sgd momentum", lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9)),
 *     ("sgd nesterov", lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True)),
 *     ("adam", lambda ps: torch.optim.Adam(ps, lr=0.1)),
 *     ("adamw", lambda ps: torch.optim.AdamW(ps, lr=0.1, weight_decay=0.2)),
 *     ("adagrad", lambda ps: torch.optim.Adagrad(ps, lr=0.1)),
 *     ("rmsprop", lambda ps: torch.optim.RMSprop(ps, lr=0.01)),
 *   ]
 *   for name, make in cases:
 *       w = torch.tensor([1., -1., .5], dtype=torch.float64, requires_grad=True)
 *       b = torch.tensor(.25, dtype=torch.float64, requires_grad=True)
 *       opt = make([w, b])
 *       for _ in range(4):
 *           opt.zero_grad(); (0.5 * (C * (w - T) ** 2).sum() + (b - 1) ** 2).backward(); opt.step()
 *       print(name, [round(x, 10) for x in w.tolist() + [b.item()]])
 * Yogi is not in torch.optim; its case above follows Zaheer et al. and optax.
 */
describe("optimisers agree with PyTorch", () => {
  const torchFigures: [string, AnyTransformation, number[]][] = [
    ["sgd momentum", sgd(0.1, { momentum: 0.9 }), [0.45876, 0.04688, 0.709353125, 1.23145]],
    ["sgd nesterov", sgd(0.1, { momentum: 0.9, nesterov: true }), [0.365721537, 0.059858432, 0.7629244184, 1.24361728]],
    ["adam", adam(0.1), [0.6070016583, -0.6056002251, 0.8870845891, 0.643769402]],
    ["adamw", adamw(0.1, { weightDecay: 0.2 }), [0.5435521874, -0.5415752737, 0.8391702023, 0.6132229036]],
    ["adagrad", adagrad(0.1), [0.7433388785, -0.7403124257, 0.7463910183, 0.5082861733]],
    ["rmsprop", rmsprop(0.01), [0.7425206949, -0.7394866199, 0.747174419, 0.50910861]],
  ];
  test.each(torchFigures)("%s", async (_name, optimizer, expected) => {
    const got = (await trajectory(optimizer))[STEPS - 1]!;
    got.forEach((x, i) => expect(x, `parameter ${i}`).toBeCloseTo(expected[i]!, 5));
  });
});

describe("schedules", () => {
  const counts = [0, 1, 2, 3, 4, 5, 7, 10, 12];
  async function values(schedule: PlacedSchedule): Promise<number[]> {
    const p = program({ count: f32([counts.length]) }, ({ count }) => ({ lr: schedule<"local">(count as never) }));
    return (await read(await p.run({ count: counts }))).lr as number[];
  }
  const cosine = (init: number, steps: number, alpha: number) => (k: number) => init * ((1 - alpha) * 0.5 * (1 + Math.cos((Math.PI * Math.min(k, steps)) / steps)) + alpha);
  const cases: [string, PlacedSchedule, (k: number) => number][] = [
    ["constant", constantSchedule(0.3), () => 0.3],
    ["exponential", exponentialDecay(0.5, { transitionSteps: 4, decayRate: 0.5 }), (k) => 0.5 * 0.5 ** (k / 4)],
    ["exponential staircase", exponentialDecay(0.5, { transitionSteps: 4, decayRate: 0.5, staircase: true }), (k) => 0.5 * 0.5 ** Math.floor(k / 4)],
    ["step", stepDecay(1, { stepSize: 3, gamma: 0.1 }), (k) => 0.1 ** Math.floor(k / 3)],
    ["cosine", cosineDecay(0.2, { decaySteps: 10 }), cosine(0.2, 10, 0)],
    ["cosine to alpha", cosineDecay(0.2, { decaySteps: 10, alpha: 0.1 }), cosine(0.2, 10, 0.1)],
    ["warmup cosine", warmupCosineDecay(1, { warmupSteps: 4, decaySteps: 10, alpha: 0.05 }), (k) => (k < 4 ? k / 4 : cosine(1, 6, 0.05)(k - 4))],
  ];
  test.each(cases)("%s", async (_name, schedule, expected) => {
    (await values(schedule)).forEach((x, i) => expect(x, `count ${counts[i]}`).toBeCloseTo(expected(counts[i]!), 6));
  });

  test("an optimiser reads its schedule at the count in its state: the first step at count 0", async () => {
    const schedule = (k: number) => 0.1 * 0.5 ** k;
    const got = await trajectory(sgd(exponentialDecay(0.1, { transitionSteps: 1, decayRate: 0.5 })));
    expectTrajectory(got, handTrajectory(hand.sgd((t) => schedule(t - 1))));
  });
});

describe("bad hyper-parameters are FT302", () => {
  test.each([
    ["negative learning rate", () => sgd(-1)],
    ["momentum 1", () => sgd(0.1, { momentum: 1 })],
    ["nesterov without momentum", () => sgd(0.1, { momentum: 0, nesterov: true })],
    ["adam b2 1.5", () => adam(0.1, { b2: 1.5 })],
    ["NaN eps", () => adam(0.1, { eps: Number.NaN })],
    ["negative weight decay", () => adamw(0.1, { weightDecay: -0.1 })],
    ["clip norm 0", () => clipByGlobalNorm(0)],
    ["cosine over 0 steps", () => cosineDecay(0.1, { decaySteps: 0 })],
    ["warm-up longer than the schedule", () => warmupCosineDecay(0.1, { warmupSteps: 10, decaySteps: 5 })],
  ])("%s", (_name, make) => {
    expect(make).toThrow(FedTensorError);
    expect(make).toThrow(/FT302/);
  });

  test("weight decay without the parameters", () => {
    expect(() => trajectoryProgramWithoutParams(adamw(0.1))).toThrow(/FT302.*needs the parameters/);
  });
});

function trajectoryProgramWithoutParams(optimizer: AnyTransformation) {
  return program(paramSpecs, (params) => optimizer.update(params, optimizer.init(params))[0]);
}
