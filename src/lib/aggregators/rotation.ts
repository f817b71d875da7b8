/**
 * The random Hadamard rotation of a whole update tree before quantization (Suresh et al. 2017;
 * TFF's HadamardTransform): each leaf rotated by src/front/rotation.ts's randomHadamard with its
 * own key split from the shared one (at the SERVER), so that a coordinate far from the others is spread over
 * all of them and few bits lose less. Each rotated leaf is zero-padded to a power of two.
 */
import * as random from "../../front/random.js";
import { inverseRandomHadamard, randomHadamard } from "../../front/rotation.js";
import { isTracer } from "../../front/trace.js";
import { flatten, unflatten } from "../../front/tree.js";
import type { Value } from "../algorithms/loose.js";

type Loose = (...args: Value[]) => Value;
const split = random.split as unknown as Loose;
const forward = randomHadamard as unknown as Loose;
const inverse = inverseRandomHadamard as unknown as Loose;

/**
 * One key per leaf of `tree`, split from `key` where the key is (at the SERVER, before map():
 * a key shared by every client may not be split inside it, FT317).
 */
export function rotationKeys(key: Value, tree: Value): Value[] {
  const n = flatten(tree, isTracer, "update tree").leaves.length;
  return n === 1 ? [key] : split(key, n);
}

/** Every leaf of `tree` rotated (flattened, padded to a power of two) with its key of `keys`. */
export function rotate(tree: Value, keys: readonly Value[]): Value {
  const { leaves, def } = flatten(tree, isTracer, "update tree");
  return unflatten(def, leaves.map((leaf, i) => forward(leaf, keys[i])));
}

/** rotate's inverse: each rotated leaf back to the shape of `like`'s leaf. */
export function unrotate(rotated: Value, keys: readonly Value[], like: Value): Value {
  const { leaves, def } = flatten(rotated, isTracer, "rotated tree");
  const shapes = flatten(like, isTracer, "update tree").leaves.map((leaf) => leaf.shape);
  return unflatten(def, leaves.map((leaf, i) => inverse(leaf, keys[i], shapes[i])));
}
