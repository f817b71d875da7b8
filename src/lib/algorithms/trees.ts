/**
 * Leafwise helpers for parameter trees, where an operation has no tree form: the elementwise
 * operations already take whole trees, zerosLike and the reductions over axes take tensors.
 */
import { isTracer } from "../../front/trace.js";
import { flatten, unflatten } from "../../front/tree.js";
import { ops, type Value } from "./loose.js";

function leavesOf(tree: Value): { leaves: Value[]; rebuild: (leaves: Value[]) => Value } {
  const { leaves, def } = flatten(tree, isTracer, "parameter tree");
  return { leaves, rebuild: (next) => unflatten(def, next) };
}

/** Zeros with the tree's structure, shapes and placement. */
export function zerosLikeTree(tree: Value): Value {
  const { leaves, rebuild } = leavesOf(tree);
  return rebuild(leaves.map((leaf) => ops.zerosLike(leaf)));
}

/** The sum of squares of every element of the tree: ||tree||^2. */
export function squaredNorm(tree: Value): Value {
  const { leaves } = leavesOf(tree);
  return leaves.map((leaf) => ops.sum(ops.mul(leaf, leaf))).reduce((total, part) => ops.add(total, part));
}
