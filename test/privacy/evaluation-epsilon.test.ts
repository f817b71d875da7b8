/**
 * Per-client evaluation's DP histograms priced with the rounds by either accountant
 * (src/lib/run/privacy.ts epsilonAfter, src/lib/privacy/dp-fedavg-epsilon.ts): the RDP path
 * gives a valid bound on the exact privacy loss of the composed Gaussian releases (checked
 * against the closed form of k Gaussian releases: a Gaussian of mu = sqrt(k) / sigma, Dong, Roth
 * and Su 2019), and agrees with the PLD accountant within RDP's known slack. Distributed DP's
 * evaluation releases: test/run/private-eval-ddp.test.ts.
 */
import { describe, expect, test } from "vitest";
import { dpFedAvgEpsilon } from "../../src/lib/privacy/dp-fedavg-epsilon.js";
import { logErfc } from "../../src/lib/privacy/rdp.js";
import { loadRunConfig, validateRunConfig } from "../../src/lib/run/config.js";
import { epsilonAfter } from "../../src/lib/run/privacy.js";

/** log Phi(x), the standard normal's log CDF. */
const logPhi = (x: number) => Math.log(0.5) + logErfc(-x / Math.SQRT2);

/** The exact delta at epsilon of k Gaussian releases of sensitivity 1 and noise sigma (mu-GDP, mu = sqrt(k) / sigma). */
function exactDelta(epsilon: number, k: number, sigma: number): number {
  const mu = Math.sqrt(k) / sigma;
  return Math.exp(logPhi(-epsilon / mu + mu / 2)) - Math.exp(epsilon + logPhi(-epsilon / mu - mu / 2));
}

/** The exact epsilon at delta (bisection: delta falls as epsilon grows). */
function exactEpsilon(delta: number, k: number, sigma: number): number {
  let [low, high] = [0, 100];
  for (let i = 0; i < 200; i++) {
    const mid = (low + high) / 2;
    if (exactDelta(mid, k, sigma) > delta) low = mid;
    else high = mid;
  }
  return high;
}

const config = (options: Record<string, unknown>) =>
  validateRunConfig({ out: "unused", aggregator: "clip,dp", dpNoise: 1, dpClip: 1, clients: 100, clientsPerRound: 10, rounds: 5, ...options }, "test");

describe("the evaluation's releases under the RDP accountant", () => {
  test.each([
    [4, 5],
    [20, 5],
    [3, 1],
  ])("%i releases at noise %f: RDP's epsilon is a valid bound on the exact one, within 1.5x of it", (k, sigma) => {
    // No round spends anything (sampling rate 0): the epsilon is the releases' alone.
    const { epsilon } = dpFedAvgEpsilon({ samplingRate: 0, noiseMultiplier: 1, noiseDrawsPerRound: 0, samplerDeltaPerDraw: 0 }, 5, 1e-5, { noiseMultiplier: sigma, releases: k, drawsPerRelease: 0 });
    const exact = exactEpsilon(1e-5, k, sigma);
    expect(exactDelta(epsilon, k, sigma)).toBeLessThanOrEqual(1e-5);
    expect(epsilon).toBeGreaterThanOrEqual(exact);
    expect(epsilon).toBeLessThan(1.5 * exact);
  });

  test("a run's epsilon with --client-holdout and --accountant rdp includes the releases, and is PLD's within RDP's slack", () => {
    const rdp = config({ accountant: "rdp", clientHoldout: 0.2, personalizeEpochs: 1, evalNoise: 2 });
    const pld = config({ clientHoldout: 0.2, personalizeEpochs: 1, evalNoise: 2 });
    const parameters = 7850;
    const [withReleases, roundsAlone] = [epsilonAfter(rdp, 5, parameters, true), epsilonAfter({ ...rdp, clientHoldout: 0 }, 5, parameters, true)];
    // 5 evaluations and personalization's release at noise 2: clearly more than the rounds alone.
    expect(withReleases).toBeGreaterThan(roundsAlone * 1.2);
    const byPld = epsilonAfter(pld, 5, parameters, true);
    expect(withReleases).toBeGreaterThanOrEqual(byPld * 0.99);
    expect(withReleases).toBeLessThan(byPld * 1.5);
    // Each evaluated round adds its release: epsilon grows round by round.
    expect(epsilonAfter(rdp, 3, parameters)).toBeGreaterThan(epsilonAfter({ ...rdp, clientHoldout: 0 }, 3, parameters));
  });

  test("the options: clip,dp and distributed-dp with --accountant rdp take --client-holdout", async () => {
    for (const aggregator of ["clip,dp", "distributed-dp"]) {
      const accepted = await loadRunConfig(["--aggregator", aggregator, "--client-holdout", "0.2", "--personalize-epochs", "1", "--accountant", "rdp"]);
      expect([accepted.accountant, accepted.clientHoldout]).toEqual(["rdp", 0.2]);
    }
  });
});
