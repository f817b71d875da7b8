/**
 * numpy shape rules, written out again for the generator: it uses them to pick operands that
 * fit an operation, independently of the library's own rules (which are under test).
 */

/** Broadcast shape of a and b (aligned from the right), or undefined when they do not broadcast. */
export function broadcastShape(a: readonly number[], b: readonly number[]): number[] | undefined {
  const rank = Math.max(a.length, b.length);
  const out: number[] = [];
  for (let i = 1; i <= rank; i++) {
    const da = a[a.length - i] ?? 1;
    const db = b[b.length - i] ?? 1;
    if (da !== db && da !== 1 && db !== 1) return undefined;
    out.unshift(Math.max(da, db));
  }
  return out;
}

/** Shape of matmul(a, b) with numpy semantics (vectors, broadcast batch dims), or undefined. */
export function matmulShape(a: readonly number[], b: readonly number[]): number[] | undefined {
  if (a.length === 0 || b.length === 0) return undefined;
  const inner = (ka: number, kb: number, out: number[]) => (ka === kb ? out : undefined);
  if (a.length === 1 && b.length === 1) return inner(a[0]!, b[0]!, []);
  if (a.length === 1) return inner(a[0]!, b[b.length - 2]!, [...b.slice(0, -2), b[b.length - 1]!]);
  if (b.length === 1) return inner(a[a.length - 1]!, b[0]!, a.slice(0, -1));
  const batch = broadcastShape(a.slice(0, -2), b.slice(0, -2));
  if (batch === undefined) return undefined;
  return inner(a[a.length - 1]!, b[b.length - 2]!, [...batch, a[a.length - 2]!, b[b.length - 1]!]);
}

export const sameShape = (a: readonly number[], b: readonly number[]): boolean => a.length === b.length && a.every((d, i) => d === b[i]);

/** The n-th permutation of 0..rank-1 (n taken modulo rank!). */
export function permutation(rank: number, n: number): number[] {
  const rest = [...Array(rank).keys()];
  const perm: number[] = [];
  let left = n;
  for (let size = rank; size > 0; size--) {
    perm.push(rest.splice(left % size, 1)[0]!);
    left = Math.floor(left / size);
  }
  return perm;
}

/** Shapes with the same number of elements as `shape`, for reshape; -1 stands for the rest. */
export function reshapeTargets(shape: readonly number[]): number[][] {
  const size = shape.reduce((n, d) => n * d, 1);
  const targets: number[][] = [[-1], [size], [...shape, 1], [1, ...shape]];
  if (shape.length >= 1) targets.push([-1, ...shape.slice(1)]);
  if (shape.length >= 2) {
    targets.push([shape[0]! * shape[1]!, ...shape.slice(2)]);
    targets.push([...shape.slice(0, -2), shape[shape.length - 2]! * shape[shape.length - 1]!]);
  }
  shape.forEach((d, i) => {
    if (d === 4) targets.push([...shape.slice(0, i), 2, 2, ...shape.slice(i + 1)]);
  });
  return targets.filter((t) => t.length <= 4);
}

/** A small integer in [0, n) read from `k`: digit `i` in base 5, so that k = 0 gives the first variant of every choice. */
export const variant = (k: number, i: number, n: number): number => Math.floor(k / 5 ** i) % n;
