/**
 * Privacy loss distributions (PLDs) on a grid, as Google's dp_accounting keeps them: a PLD is
 * the law of the privacy loss L = log(P(o) / Q(o)) for o ~ P, where (P, Q) is a dominating pair
 * of the mechanism, and its hockey-stick divergence is
 *   delta(eps) = H_{e^eps}(P || Q) = E[(1 - e^(eps - L))_+] + P(L = infinity).
 * Compositions of mechanisms are sums of independent losses, so PLDs compose by convolution,
 * which is done here by FFT (fft.ts).
 *
 * Discretisation is pessimistic, by "connect the dots" (Doroshenko, Ghazi, Kamath, Kumar and
 * Manurangsi 2022): from the mechanism's delta at the grid points eps_i = i h, the PLD whose
 * hockey-stick curve interpolates them linearly in alpha = e^eps. A hockey-stick curve is
 * convex in alpha, so the interpolation lies above the true curve: every delta (and so every
 * epsilon) the grid PLD gives is at least the true one, for this mechanism and for every
 * composition (dominating pairs compose). Below the lowest point the curve is the chord from
 * (0, 1); above the highest the remaining delta is the mass at infinity. Unlike rounding each
 * loss up to the grid (Koskela, Jälkö and Honkela 2020, whose pessimism costs about h/2 a
 * composition), the error does not grow with the number of compositions.
 *
 * Numerical honesty: every mass the arithmetic would make negative is set to zero and its size
 * added to `error`, as is every mass an FFT window leaves out (bounded by a Chernoff bound);
 * `error` is added to every delta reported (hockey-stick divergence is 1-Lipschitz in the PLD's
 * masses), so what is reported stays an upper bound.
 */
import { ftError } from "../../../errors/error.js";
import { fft, nextPowerOfTwo } from "./fft.js";

/** A PLD on the grid h Z: masses[j] is P(L = (offset + j) h). */
export interface Pld {
  /** The grid step h (the value discretisation interval). */
  readonly interval: number;
  /** The grid index of masses[0]. */
  readonly offset: number;
  readonly masses: Float64Array;
  /** P(L = infinity): the delta no epsilon removes. */
  readonly infinityMass: number;
  /** A bound on the arithmetic's error in any delta: added to every delta reported. */
  readonly error: number;
}

/** What the grid PLD of one mechanism is built from. */
export interface HockeyStickCurve {
  /** delta(eps) = H_{e^eps}(P || Q) of the mechanism's dominating pair, for eps >= 0. */
  delta(epsilon: number): number;
  /** H_{e^eps}(Q || P), the pair's roles swapped, for eps >= 0. */
  reversed(epsilon: number): number;
  /** The grid's lowest and highest loss: below it the chord from (0, 1) holds, above it delta(hi) goes to infinity. */
  readonly lossRange: readonly [number, number];
}

/**
 * The connect-the-dots PLD of `curve` on the grid of step `interval`.
 *
 * Below eps = 0, delta(eps) = 1 - e^eps + e^eps H_{e^-eps}(Q || P): the first part is linear in
 * alpha and makes no mass, so the masses there come from the second part alone, which is small
 * and computed to relative precision; taking second differences of delta itself would leave
 * rounding noise of 1e-16 / h in every mass.
 *
 * `samplerTv` is the total variation between the mechanism as computed and as specified (a
 * sampler's share): any mechanism within total variation t of one with curve delta has
 * H_alpha <= delta(alpha) + (1 + alpha) t, and since H_alpha never grows with alpha, <= the
 * running minimum of that bound, a convex curve, which is what is interpolated.
 */
export function pldFromCurve(curve: HockeyStickCurve, interval: number, samplerTv = 0): Pld {
  if (!(interval > 0 && interval < 1)) throw ftError("FT305", { option: "interval", why: `${interval} given; the grid step is in (0, 1)` });
  if (!(samplerTv >= 0 && samplerTv < 1)) throw ftError("FT305", { option: "samplerTv", why: `${samplerTv} given; a total variation in [0, 1)` });
  // Losses beyond +-LOSS_CAP: the chord below and the mass at infinity above cover them (pessimistic);
  // only a round whose own epsilon passes 60 reaches them, and its delta there becomes the mass at infinity.
  const [lo, hi] = [Math.max(-LOSS_CAP, curve.lossRange[0]), Math.min(LOSS_CAP, curve.lossRange[1])];
  const first = Math.floor(lo / interval);
  const last = Math.max(first + 1, Math.ceil(hi / interval));
  const n = last - first + 1;
  const alpha = (i: number) => Math.exp((first + i) * interval);
  // rest[i] = delta_i - (1 - alpha_i) below eps = 0 (the part that makes mass), delta_i itself from 0 up.
  const negative = (i: number) => first + i < 0;
  const rest = new Float64Array(n);
  let running = Infinity;
  for (let i = 0; i < n; i++) {
    const eps = (first + i) * interval;
    const a = alpha(i);
    if (negative(i)) {
      rest[i] = a * Math.max(0, curve.reversed(-eps)) + (1 + a) * samplerTv;
    } else {
      const value = Math.min(1, Math.max(0, curve.delta(eps)) + (1 + a) * samplerTv);
      running = Math.min(running, value);
      rest[i] = running;
    }
  }
  const step = (i: number) => alpha(i) * Math.expm1(interval);
  // Slopes in alpha, less -1 where both ends are below 0 (that -1 is the linear part's).
  const slopeRest = (i: number): number => {
    if (negative(i + 1)) return (rest[i + 1]! - rest[i]!) / step(i);
    if (negative(i)) return (rest[i + 1]! - (1 - alpha(i) + rest[i]!)) / step(i) + 1;
    return (rest[i + 1]! - rest[i]!) / step(i) + 1;
  };
  const masses = new Float64Array(n);
  let error = 0;
  // Below the first point, the chord from (0, 1): slope (delta_0 - 1) / alpha_0, plus 1.
  let below = negative(0) ? rest[0]! / alpha(0) : rest[0]! / alpha(0) - 1 / alpha(0) + 1;
  for (let i = 0; i < n; i++) {
    const above = i + 1 < n ? slopeRest(i) : 1; // above the last point, slope 0
    const mass = alpha(i) * (above - below);
    if (mass >= 0) masses[i] = mass;
    else error -= mass;
    below = above;
  }
  const top = negative(n - 1) ? 1 - alpha(n - 1) + rest[n - 1]! : rest[n - 1]!;
  // Rounding in the second differences can leave the grid PLD's delta a hair (1e-14) under the
  // values it interpolates: one sweep finds the largest shortfall, which joins the error.
  let [above, weighted, shortfall] = [0, 0, 0];
  for (let i = n - 1; i >= 0; i--) {
    const target = negative(i) ? 1 - alpha(i) + rest[i]! : rest[i]!;
    shortfall = Math.max(shortfall, target - (top + above - weighted));
    weighted = (weighted + masses[i]!) * Math.exp(-interval);
    above += masses[i]!;
  }
  return trim({ interval, offset: first, masses, infinityMass: top, error: error + shortfall });
}

const LOSS_CAP = 60;
/** The most grid points an FFT window may have; wider compositions are coarsened first. */
const MAX_WINDOW = 2 ** 22;

/**
 * The PLD on the grid `factor` times coarser, each loss rounded up to it (Koskela et al. 2020's
 * pessimistic rounding: a higher loss only raises every delta, and keeps E[e^-L] <= 1).
 */
export function coarsen(pld: Pld, factor: number): Pld {
  if (factor === 1) return pld;
  const first = Math.ceil(pld.offset / factor);
  const last = Math.ceil((pld.offset + pld.masses.length - 1) / factor);
  const masses = new Float64Array(last - first + 1);
  pld.masses.forEach((m, j) => {
    const i = Math.ceil((pld.offset + j) / factor) - first;
    masses[i] = masses[i]! + m;
  });
  return { ...pld, interval: pld.interval * factor, offset: first, masses };
}

/** Drops the ends whose masses add up to less than 1e-30 (added to error), and clips negatives. */
function trim(pld: Pld): Pld {
  const { masses } = pld;
  let error = pld.error;
  for (let i = 0; i < masses.length; i++) {
    if (masses[i]! < 0) {
      error -= masses[i]!;
      masses[i] = 0;
    }
  }
  const negligible = 1e-30;
  let start = 0;
  for (let sum = 0; start < masses.length - 1 && sum + masses[start]! < negligible; start++) sum += masses[start]!;
  let end = masses.length;
  for (let sum = 0; end - 1 > start && sum + masses[end - 1]! < negligible; end--) sum += masses[end - 1]!;
  let dropped = 0;
  for (let i = 0; i < start; i++) dropped += masses[i]!;
  for (let i = end; i < masses.length; i++) dropped += masses[i]!;
  return { ...pld, offset: pld.offset + start, masses: masses.slice(start, end), error: error + dropped };
}

/**
 * The grid indices [lo, hi] outside which the k-fold sum has mass at most `tail` on each side
 * (Chernoff: P(S >= t) <= exp(k log M(lambda) - lambda t), minimised over a grid of lambda).
 */
function chernoffWindow(pld: Pld, k: number, tail: number): [number, number] {
  const n = pld.masses.length;
  const logMass = Array.from(pld.masses, (m) => Math.log(m));
  // log E[e^(lambda J)] over the finite masses, J the grid index (log-sum-exp).
  const logMoment = (lambda: number): number => {
    let top = -Infinity;
    for (let j = 0; j < n; j++) top = Math.max(top, logMass[j]! + lambda * j);
    let sum = 0;
    for (let j = 0; j < n; j++) sum += Math.exp(logMass[j]! + lambda * j - top);
    return top + Math.log(sum) + lambda * pld.offset;
  };
  let [lo, hi] = [k * pld.offset, k * (pld.offset + n - 1)];
  for (let e = -5; e <= 2; e += 0.5) {
    const lambda = 10 ** e * pld.interval;
    hi = Math.min(hi, Math.ceil((k * logMoment(lambda) - Math.log(tail)) / lambda));
    lo = Math.max(lo, Math.floor((Math.log(tail) - k * logMoment(-lambda)) / lambda));
  }
  return [lo, Math.max(lo, hi)];
}

/** The PLD of k independent compositions of `pld` (FFT, one power of its transform). */
export function selfCompose(pld: Pld, k: number, tail = 1e-15): Pld {
  if (!(Number.isInteger(k) && k >= 1)) throw ftError("FT305", { option: "compositions", why: `${k} given; an integer >= 1` });
  if (k === 1) return pld;
  let [lo, hi] = chernoffWindow(pld, k, tail);
  // A window too wide for memory (a round whose epsilon is huge): coarsen, pessimistically, until it fits.
  if (hi - lo + 1 > MAX_WINDOW) {
    pld = coarsen(pld, nextPowerOfTwo(Math.ceil((hi - lo + 1) / MAX_WINDOW)));
    [lo, hi] = chernoffWindow(pld, k, tail);
  }
  const size = nextPowerOfTwo(hi - lo + 1);
  const re = new Float64Array(size);
  const im = new Float64Array(size);
  // The sum of k indices is known modulo size; index lo + r stands for the class of lo + r.
  const shift = (((pld.offset * k - lo) % size) + size) % size;
  // Mass j (loss index offset + j) sits at j mod size: the sum of k relative indices, modulo size.
  for (let j = 0; j < pld.masses.length; j++) re[j % size] = re[j % size]! + pld.masses[j]!;
  fft(re, im);
  for (let i = 0; i < size; i++) {
    const logR = 0.5 * Math.log(re[i]! * re[i]! + im[i]! * im[i]!);
    const theta = Math.atan2(im[i]!, re[i]!);
    const rk = Math.exp(k * logR);
    re[i] = rk * Math.cos(k * theta);
    im[i] = rk * Math.sin(k * theta);
  }
  fft(re, im, true);
  // Result index r holds the sums k offset + r (mod size); rotate so that masses[0] is index lo.
  const masses = new Float64Array(size);
  for (let r = 0; r < size; r++) masses[(r + shift) % size] = re[r]! / size;
  const infinityMass = -Math.expm1(k * Math.log1p(-pld.infinityMass));
  return trim({ interval: pld.interval, offset: lo, masses, infinityMass, error: k * pld.error + 4 * tail });
}

/** The PLD of the composition of two mechanisms (linear convolution by FFT). */
export function compose(a: Pld, b: Pld): Pld {
  // Grids differ only when one was coarsened (by a power of two): bring the finer to the coarser.
  if (a.interval < b.interval) a = coarsen(a, Math.round(b.interval / a.interval));
  if (b.interval < a.interval) b = coarsen(b, Math.round(a.interval / b.interval));
  const length = a.masses.length + b.masses.length - 1;
  const size = nextPowerOfTwo(length);
  const [ar, ai, br, bi] = [new Float64Array(size), new Float64Array(size), new Float64Array(size), new Float64Array(size)];
  ar.set(a.masses);
  br.set(b.masses);
  fft(ar, ai);
  fft(br, bi);
  for (let i = 0; i < size; i++) {
    const re = ar[i]! * br[i]! - ai[i]! * bi[i]!;
    ai[i] = ar[i]! * bi[i]! + ai[i]! * br[i]!;
    ar[i] = re;
  }
  fft(ar, ai, true);
  const masses = new Float64Array(length);
  for (let i = 0; i < length; i++) masses[i] = ar[i]! / size;
  const infinityMass = 1 - (1 - a.infinityMass) * (1 - b.infinityMass);
  return trim({ interval: a.interval, offset: a.offset + b.offset, masses, infinityMass, error: a.error + b.error });
}

/** delta(eps) of the PLD, its error included: infinityMass + sum over losses above eps of m (1 - e^(eps - loss)). */
export function deltaForEpsilon(pld: Pld, epsilon: number): number {
  let delta = pld.infinityMass + pld.error;
  const { masses, offset, interval } = pld;
  for (let j = masses.length - 1; j >= 0; j--) {
    const loss = (offset + j) * interval;
    if (loss <= epsilon) break;
    delta += masses[j]! * -Math.expm1(epsilon - loss);
  }
  return Math.min(1, delta);
}

/**
 * The smallest epsilon >= 0 with deltaForEpsilon(pld, epsilon) <= delta; Infinity when the
 * mass at infinity (with the error) already exceeds delta. Exact for the piecewise form:
 * between grid points delta(eps) = c + A - e^(eps - eps_i) B, solved for eps.
 */
export function epsilonForDelta(pld: Pld, delta: number): number {
  if (!(delta > 0 && delta < 1)) throw ftError("FT305", { option: "delta", why: `${delta} given; delta is in (0, 1)` });
  const constant = pld.infinityMass + pld.error;
  if (constant > delta) return Infinity;
  const { masses, offset, interval } = pld;
  // A: the masses at or above grid point i; B: their sum of m e^(eps_i - loss).
  let [sumA, sumB] = [0, 0];
  for (let i = masses.length - 1; i >= 0; i--) {
    sumA += masses[i]!;
    sumB += masses[i]!;
    // delta(eps) on [eps_{i-1}, eps_i] is constant + sumA - e^(eps - eps_i) sumB.
    const atLower = i > 0 ? constant + sumA - Math.exp(-interval) * sumB : Infinity;
    if (atLower > delta || i === 0) {
      const ratio = (constant + sumA - delta) / sumB;
      if (!(ratio > 0)) return Math.max(0, (offset + i) * interval);
      return Math.max(0, (offset + i) * interval + Math.log(ratio));
    }
    sumB *= Math.exp(-interval);
  }
  return 0;
}
