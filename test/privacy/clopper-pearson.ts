/**
 * Clopper-Pearson intervals for the privacy audit (audit.test.ts), written here rather than
 * taken from a package: the regularized incomplete beta function I_x(a, b) by its continued
 * fraction (modified Lentz; Numerical Recipes' betacf, DLMF 8.17.22), the Beta quantile by
 * bisection on it, and the exact binomial interval from those quantiles.
 */

/** log Gamma(x) for x > 0: Lanczos (g = 7, 9 terms), about 1e-15 relative. */
export function logGamma(x: number): number {
  const c = [0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7];
  if (x < 0.5) return Math.log(Math.PI / Math.abs(Math.sin(Math.PI * x))) - logGamma(1 - x);
  const z = x - 1;
  let sum = c[0]!;
  for (let i = 1; i < 9; i++) sum += c[i]! / (z + i);
  const t = z + 7.5;
  return 0.5 * Math.log(2 * Math.PI) + (z + 0.5) * Math.log(t) - t + Math.log(sum);
}

/** The continued fraction of I_x(a, b), converging fast for x < (a + 1) / (a + b + 2). */
function betaContinuedFraction(x: number, a: number, b: number): number {
  const tiny = 1e-300;
  const guard = (v: number) => (Math.abs(v) < tiny ? tiny : v);
  let c = 1;
  let d = 1 / guard(1 - ((a + b) * x) / (a + 1));
  let h = d;
  for (let m = 1; m <= 10_000; m++) {
    const even = (m * (b - m) * x) / ((a + 2 * m - 1) * (a + 2 * m));
    d = 1 / guard(1 + even * d);
    c = guard(1 + even / c);
    h *= d * c;
    const odd = (-(a + m) * (a + b + m) * x) / ((a + 2 * m) * (a + 2 * m + 1));
    d = 1 / guard(1 + odd * d);
    c = guard(1 + odd / c);
    h *= d * c;
    if (Math.abs(d * c - 1) < 1e-15) return h;
  }
  throw new Error(`the incomplete beta's continued fraction did not converge at x=${x}, a=${a}, b=${b}`);
}

/** The regularized incomplete beta function I_x(a, b) = P(Beta(a, b) <= x). */
export function regularizedBeta(x: number, a: number, b: number): number {
  if (!(a > 0 && b > 0)) throw new Error(`Beta(${a}, ${b}) needs a, b > 0`);
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const front = Math.exp(logGamma(a + b) - logGamma(a) - logGamma(b) + a * Math.log(x) + b * Math.log1p(-x));
  // The fraction converges fast on the side of the mean; the other side by symmetry.
  return x < (a + 1) / (a + b + 2) ? (front * betaContinuedFraction(x, a, b)) / a : 1 - (front * betaContinuedFraction(1 - x, b, a)) / b;
}

/** The p-quantile of Beta(a, b): bisection on the monotone I_x(a, b), to 1e-15. */
export function betaQuantile(p: number, a: number, b: number): number {
  let [lo, hi] = [0, 1];
  for (let i = 0; i < 60 && hi - lo > 1e-15; i++) {
    const mid = (lo + hi) / 2;
    if (regularizedBeta(mid, a, b) < p) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

/** The exact (Clopper-Pearson) two-sided interval of a binomial proportion, k successes of n, at confidence 1 - alpha. */
export function clopperPearson(k: number, n: number, alpha = 0.05): { lower: number; upper: number } {
  if (!(Number.isInteger(k) && Number.isInteger(n) && k >= 0 && k <= n && n > 0)) throw new Error(`${k} successes of ${n} trials`);
  return {
    lower: k === 0 ? 0 : betaQuantile(alpha / 2, k, n - k + 1),
    upper: k === n ? 1 : betaQuantile(1 - alpha / 2, k + 1, n - k),
  };
}
