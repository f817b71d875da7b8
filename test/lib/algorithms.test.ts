/**
 * Every algorithm of the library on the same small separable problem (3 clients of 12, 7 and
 * 4 examples): a few rounds lower the training loss and reach high test accuracy, and extra
 * all-masked batches leave a round's every output unchanged.
 */
import { describe, expect, test } from "vitest";
import { dilocoProgram } from "../../src/lib/algorithms/diloco.js";
import { evaluationProgram } from "../../src/lib/algorithms/evaluation.js";
import { fedAvgProgram } from "../../src/lib/algorithms/fedavg.js";
import { fedAvgMProgram } from "../../src/lib/algorithms/fedavgm.js";
import { fedOptProgram } from "../../src/lib/algorithms/fedopt.js";
import { fedProxProgram } from "../../src/lib/algorithms/fedprox.js";
import { fedSgdProgram } from "../../src/lib/algorithms/fedsgd.js";
import { scaffoldProgram } from "../../src/lib/algorithms/scaffold.js";
import { aflProgram, initialLambda } from "../../src/lib/algorithms/afl.js";
import { initialMimeState, mimeProgram } from "../../src/lib/algorithms/mime.js";
import { qfflProgram } from "../../src/lib/algorithms/qffl.js";
import { filledLike, initialAdaptiveState } from "../../src/lib/algorithms/server-optimizers.js";
import { adam, chain, clipByGlobalNorm, sgd } from "../../src/lib/optimizers/index.js";
import type { Program } from "../../src/index.js";
import { Rng } from "../../src/lib/random.js";
import { batchInputs, read, separableCohort, tiny, withPaddingBatches } from "./helpers.js";

const cohort = separableCohort([12, 7, 4], 4);
const params0 = tiny.init(Rng.fromSeed(0));
const zeros = filledLike(params0, 0);
const perClientZeros = { w: { shape: [3, 2, 2], data: new Float32Array(12) }, b: { shape: [3, 2], data: new Float32Array(6) } };

interface AlgorithmCase {
  readonly name: string;
  readonly program: Program<never, unknown>;
  /** Hyperparameter inputs (learning rates, mu), and AFL's client positions. */
  readonly hypers: Record<string, unknown>;
  /** The state inputs of the first round; each round's outputs of the same names feed the next. */
  readonly state: object;
  readonly rounds: number;
  /**
   * ONNX Runtime sums the reported training loss of these rounds (whose clients also evaluate
   * the server model) in an order that depends on the number of batches: it may differ in its
   * last float32 bit with padding (on onnx only; wasm and cpu give the same bits). Every other
   * output must still be bit for bit the same.
   */
  readonly lossLastBit?: boolean;
}

function algorithm(name: string, program: unknown, hypers: Record<string, unknown>, state: object, rounds = 5, lossLastBit = false): AlgorithmCase {
  return { name, program: program as Program<never, unknown>, hypers, state, rounds, lossLastBit };
}

const cases: AlgorithmCase[] = [
  algorithm("FedAvg", fedAvgProgram(tiny), { lr: 0.5 }, {}),
  algorithm("FedSGD", fedSgdProgram(tiny), { lr: 1 }, {}, 10),
  algorithm("FedProx", fedProxProgram(tiny), { lr: 0.5, mu: 0.1 }, {}),
  algorithm("FedAdam", fedOptProgram(tiny, { optimizer: "adam" }), { lr: 0.5, serverLr: 0.3 }, { state: initialAdaptiveState(params0) }),
  algorithm("FedYogi", fedOptProgram(tiny, { optimizer: "yogi" }), { lr: 0.5, serverLr: 0.3 }, { state: initialAdaptiveState(params0) }),
  // Adagrad's steps shrink as its second moment only grows: it needs a larger rate and more rounds.
  algorithm("FedAdagrad", fedOptProgram(tiny, { optimizer: "adagrad" }), { lr: 0.5, serverLr: 1 }, { state: initialAdaptiveState(params0) }, 8),
  algorithm("SCAFFOLD", scaffoldProgram(tiny), { lr: 0.5, serverLr: 1 }, { control: zeros, clientControls: perClientZeros }),
  algorithm("DiLoCo", dilocoProgram(tiny), { lr: 0.5, serverLr: 0.7 }, { buffer: zeros }),
  algorithm("FedAvgM", fedAvgMProgram(tiny), { lr: 0.5, serverLr: 0.5 }, { buffer: zeros }),
  // Client optimisers with state: padding must leave their moments and step counts alone too.
  algorithm("FedAvg with clipped Adam clients", fedAvgProgram(tiny, { clientOptimizer: (lr) => chain(clipByGlobalNorm(1), adam(lr)) }), { lr: 0.1 }, {}),
  algorithm("FedProx with Nesterov clients", fedProxProgram(tiny, { clientOptimizer: (lr) => sgd(lr, { momentum: 0.9, nesterov: true }) }), { lr: 0.2, mu: 0.1 }, {}),
  algorithm("Mime", mimeProgram(tiny, "mime"), { lr: 0.2, serverLr: 1 }, { state: initialMimeState(tiny, params0) }, 5, true),
  algorithm("MimeLite", mimeProgram(tiny, "mimelite"), { lr: 0.2, serverLr: 1 }, { state: initialMimeState(tiny, params0) }),
  algorithm("MimeLite with an Adam base", mimeProgram(tiny, "mimelite", { baseOptimizer: (lr) => adam(lr) }), { lr: 0.2, serverLr: 1 }, { state: initialMimeState(tiny, params0, { baseOptimizer: (lr) => adam(lr) }) }, 8),
  algorithm("q-FFL", qfflProgram(tiny), { lr: 0.5, q: 1 }, {}, 5, true),
  // The 3 clients are clients 4, 0 and 2 of 5: the two absent ones keep their lambda's share of the step.
  algorithm("AFL", aflProgram(tiny, { clients: 5 }), { lr: 0.5, aflLr: 0.01, client: [4, 0, 2] }, { lambda: initialLambda(5) }, 8),
];

type RoundOutputs = { params: unknown; loss: number } & Record<string, unknown>;

async function runRound(c: AlgorithmCase, params: unknown, state: object, batches = cohort): Promise<RoundOutputs> {
  return (await read(await c.program.run({ params, ...batchInputs(batches), ...c.hypers, ...state } as never))) as RoundOutputs;
}

const testSet = separableCohort([40], 8, 99);
const evaluation = evaluationProgram(tiny);
const oneSet = (t: { shape: number[]; data: Float32Array | Int32Array }) => ({ shape: t.shape.slice(1), data: t.data });

describe.each(cases)("$name", (c) => {
  test(`${c.rounds} rounds lower the loss and separate the classes`, async () => {
    let params: unknown = params0;
    let state = c.state;
    const losses: number[] = [];
    for (let r = 0; r < c.rounds; r++) {
      const out = await runRound(c, params, state);
      losses.push(out.loss);
      params = out.params;
      state = Object.fromEntries(Object.keys(state).map((key) => [key, out[key]]));
    }
    expect(losses.at(-1)!).toBeLessThan(0.5 * losses[0]!);
    const tested = await read(await evaluation.run({ params: params as never, x: oneSet(testSet.x), y: oneSet(testSet.y), mask: oneSet(testSet.mask) }));
    expect(tested.accuracy).toBeGreaterThanOrEqual(37 / 40 - 1e-6);
  });

  test("extra all-masked batches change nothing", async () => {
    // From the state after one round, so that momenta and control variates are not zero.
    const first = await runRound(c, params0, c.state);
    const state = Object.fromEntries(Object.keys(c.state).map((key) => [key, first[key]]));
    const plain = await runRound(c, first.params, state);
    const padded = await runRound(c, first.params, state, withPaddingBatches(cohort, 2));
    if (c.lossLastBit) {
      expect(padded.loss).toBeCloseTo(plain.loss, 6);
      expect({ ...padded, loss: 0 }).toEqual({ ...plain, loss: 0 });
    } else {
      expect(padded).toEqual(plain);
    }
  });
});
