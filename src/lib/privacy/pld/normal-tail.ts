/**
 * The standard normal's tails to (nearly) full double precision, relative as well as absolute:
 * the PLD accountant takes second differences of hockey-stick values built from them
 * (pmf.ts), so the 1e-7 of rdp.ts's logErfc would be far too coarse.
 *
 * erfc(y) = 1 - erf(y) for y < 1.5, with erf from its series of positive terms
 * erf(y) = 2/sqrt(pi) e^(-y^2) sum_n 2^n y^(2n+1) / (1 3 5 ... (2n+1)) (Abramowitz and Stegun
 * 7.1.6; no cancellation); for y >= 1.5 the continued fraction
 * erfc(y) = e^(-y^2)/sqrt(pi) / (y + (1/2)/(y + 1/(y + (3/2)/(y + ...)))) (A&S 7.1.14),
 * evaluated by the modified Lentz method, which keeps relative precision in the far tail.
 * Checked against reference values in test/privacy/pld.test.ts.
 */

const SQRT_PI = Math.sqrt(Math.PI);

/** erf(y) for |y| < 1.5 from the positive series. */
function erfSeries(y: number): number {
  const y2 = y * y;
  let term = y;
  let sum = y;
  for (let n = 1; n < 200 && Math.abs(term) > 1e-17 * Math.abs(sum); n++) {
    term *= (2 * y2) / (2 * n + 1);
    sum += term;
  }
  return ((2 / SQRT_PI) * Math.exp(-y2)) * sum;
}

/** log(erfc(y)) for y >= 1.5 from the continued fraction (modified Lentz). */
function logErfcContinuedFraction(y: number): number {
  const tiny = 1e-300;
  // K = 1 / (y + a1 / (y + a2 / (y + ...))), a_n = n / 2: f = y + a1/(y + ...), K = 1/f.
  let f = y;
  let c = f;
  let d = 0;
  for (let n = 1; n < 5000; n++) {
    const a = n / 2;
    d = y + a * d;
    d = Math.abs(d) < tiny ? tiny : d;
    c = y + a / c;
    c = Math.abs(c) < tiny ? tiny : c;
    d = 1 / d;
    const step = c * d;
    f *= step;
    if (Math.abs(step - 1) < 1e-16) break;
  }
  return -y * y - Math.log(SQRT_PI) - Math.log(f);
}

/** log(erfc(y)) for every real y. */
export function logErfcPrecise(y: number): number {
  if (y >= 1.5) return logErfcContinuedFraction(y);
  if (y > -1.5) return Math.log1p(-erfSeries(y));
  return Math.log(2 - Math.exp(logErfcContinuedFraction(-y)));
}

/** log P(Z > t) for Z ~ N(0, 1). */
export function logNormalSf(t: number): number {
  return logErfcPrecise(t / Math.SQRT2) - Math.LN2;
}

/** P(Z > t) for Z ~ N(0, 1). */
export function normalSf(t: number): number {
  return Math.exp(logNormalSf(t));
}

/** P(Z <= t) for Z ~ N(0, 1). */
export function normalCdf(t: number): number {
  return normalSf(-t);
}
