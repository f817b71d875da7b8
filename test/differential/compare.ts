/**
 * Comparing outputs of the two paths (or a gradient with finite differences), and the
 * tolerance for it.
 *
 * Tolerance: an entry passes when |got - want| <= 1e-4 * (|want| + scale), scale being the
 * largest |entry| of the reference leaf it belongs to (at least 1). That is a relative error of
 * 1e-4 for entries of the leaf's own size, and an absolute error of 1e-4 * scale for entries
 * near zero: float32 rounds each intermediate to a relative 6e-8 of *its* size, so an entry
 * that came out small after cancelling (x - y, softmax, a sum of mixed signs) carries an error
 * of the size of the leaf's other entries, not its own. The generator keeps intermediates
 * within a few hundred, so chains of a few dozen operations stay well inside 1e-4; wrong axes,
 * client orders, transposes or gradients give errors of the order of the entries themselves.
 */
import * as tf from "@tensorflow/tfjs";
import type { OutputTree } from "../../src/interpret/reference.js";

export const TOLERANCE = 1e-4;

/** A tensor as data, from either path. */
export interface HostLeaf {
  readonly shape: readonly number[];
  readonly data: ArrayLike<number>;
}
export type HostTree = HostLeaf | readonly HostTree[] | { readonly [key: string]: HostTree };

const isLeaf = (tree: unknown): tree is HostLeaf => typeof tree === "object" && tree !== null && "shape" in tree && "data" in tree;

/** The optimised path's output tree as data (the tensors stay the caller's). */
export async function toHost(tree: unknown): Promise<HostTree> {
  if (tree instanceof tf.Tensor) return { shape: tree.shape, data: await tree.data() };
  if (Array.isArray(tree)) return Promise.all(tree.map(toHost));
  const entries = await Promise.all(Object.entries(tree as object).map(async ([k, v]) => [k, await toHost(v)] as const));
  return Object.fromEntries(entries);
}

/** |got - want| within the tolerance, scale being the size of the reference leaf's largest entry. */
export function close(got: number, want: number, scale: number): boolean {
  if (Number.isNaN(got) || Number.isNaN(want)) return false;
  return Math.abs(got - want) <= TOLERANCE * (Math.abs(want) + Math.max(1, scale));
}

export const largest = (data: ArrayLike<number>): number => Array.from(data).reduce((m, v) => Math.max(m, Math.abs(v)), 0);

const show = (data: ArrayLike<number>): string => `[${Array.from(data, (v) => Number(v.toPrecision(7))).join(", ")}]`;

/** Why leaf `got` differs from `want`, or undefined when it agrees. */
function leafDifference(path: string, got: HostLeaf, want: HostLeaf): string | undefined {
  const shapes = `[${got.shape.join(",")}] vs reference [${want.shape.join(",")}]`;
  if (got.shape.length !== want.shape.length || got.shape.some((d, i) => d !== want.shape[i])) return `${path}: shape ${shapes}`;
  const scale = largest(want.data);
  const bad = Array.from(want.data).findIndex((w, i) => !Number.isFinite(w) || !close(got.data[i]!, w, scale));
  if (bad < 0) return undefined;
  return `${path}: entry ${bad} differs (shape [${want.shape.join(",")}])\n  optimised: ${show(got.data)}\n  reference: ${show(want.data)}`;
}

/** Every leaf where `got` differs from the reference `want` (shapes, or entries beyond the tolerance). */
export function differences(got: HostTree, want: HostTree | OutputTree, path = "output"): string[] {
  if (isLeaf(want)) {
    if (!isLeaf(got)) return [`${path}: a tree where the reference has a tensor`];
    const difference = leafDifference(path, got, want);
    return difference === undefined ? [] : [difference];
  }
  if (isLeaf(got)) return [`${path}: a tensor where the reference has a tree`];
  if (Array.isArray(want) !== Array.isArray(got)) return [`${path}: ${Array.isArray(got) ? "an array" : "a record"} where the reference has ${Array.isArray(want) ? "an array" : "a record"}`];
  // Outputs the reference does not have are differences too: a program that returns more than it should is wrong.
  const extra = Object.keys(got).filter((key) => !(key in want)).map((key) => `${path}.${key}: not in the reference`);
  return [
    ...extra,
    ...Object.entries(want).flatMap(([key, w]) => {
      const g = (got as Record<string, HostTree>)[key];
      return g === undefined ? [`${path}.${key}: missing`] : differences(g, w as HostTree, Array.isArray(want) ? `${path}[${key}]` : `${path}.${key}`);
    }),
  ];
}
