/**
 * Leafwise helpers for parameter trees, where an operation has no tree form: the elementwise
 * operations already take whole trees, zerosLike, where and the reductions over axes take tensors.
 */
import { isTracer } from "../../front/trace.js";
import { flatten, flattenAs, unflatten } from "../../front/tree.js";
import { ops, type Value } from "./loose.js";

function leavesOf(tree: Value): { leaves: Value[]; rebuild: (leaves: Value[]) => Value; like: (other: Value) => Value[] } {
  const { leaves, def } = flatten(tree, isTracer, "parameter tree");
  return { leaves, rebuild: (next) => unflatten(def, next), like: (other) => flattenAs(def, other, isTracer, "parameter tree") };
}

/** Zeros with the tree's structure, shapes and placement. */
export function zerosLikeTree(tree: Value): Value {
  const { leaves, rebuild } = leavesOf(tree);
  return rebuild(leaves.map((leaf) => ops.zerosLike(leaf)));
}

/** A scalar zero at the placement of the tree's first leaf: a step count that starts there. */
export function zeroScalarLike(tree: Value): Value {
  const [first] = leavesOf(tree).leaves;
  return ops.sum(ops.zerosLike(first));
}

/** The sum of squares of every element of the tree: ||tree||^2. */
export function squaredNorm(tree: Value): Value {
  const { leaves } = leavesOf(tree);
  return leaves.map((leaf) => ops.sum(ops.mul(leaf, leaf))).reduce((total, part) => ops.add(total, part));
}

/** `yes` where the scalar condition holds, else `no`: leaf by leaf over two trees of one structure. */
export function whereTree(condition: Value, yes: Value, no: Value): Value {
  const { leaves, rebuild, like } = leavesOf(yes);
  const others = like(no);
  return rebuild(leaves.map((leaf, i) => ops.where(condition, leaf, others[i])));
}
