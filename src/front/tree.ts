/**
 * Trees of values (records and arrays, as model parameters and batches are): flattening to
 * leaves with a JSON tree definition, and rebuilding.
 */
import { ftError } from "../errors/error.js";
import type { TreeDef } from "../ir/types.js";

/** A value as error messages name it: "a number", "a record", "a Tensor". */
export function describeValue(x: unknown): string {
  if (x === null || x === undefined) return String(x);
  if (Array.isArray(x)) return "an array";
  if (typeof x === "object") {
    const name = (x as object).constructor?.name;
    return name === undefined || name === "Object" ? "a record" : `a ${name}`;
  }
  return `a ${typeof x}`;
}

export type AnyTree<Leaf> = Leaf | readonly AnyTree<Leaf>[] | { readonly [key: string]: AnyTree<Leaf> };

/** Leaves in a fixed order (arrays by index, records by key order) and where each sits. */
export function flatten<Leaf>(
  tree: unknown,
  isLeaf: (x: unknown) => x is Leaf,
  describe = "value",
  leafKind = "traced tensors",
): { leaves: Leaf[]; def: TreeDef } {
  const leaves: Leaf[] = [];
  const walk = (node: unknown, path: string): TreeDef => {
    if (isLeaf(node)) {
      leaves.push(node);
      return leaves.length - 1;
    }
    if (Array.isArray(node)) return node.map((child, i) => walk(child, `${path}[${i}]`));
    if (node !== null && typeof node === "object" && Object.getPrototypeOf(node) === Object.prototype) {
      const out: Record<string, TreeDef> = {};
      for (const [key, child] of Object.entries(node)) out[key] = walk(child, path === "" ? key : `${path}.${key}`);
      return out;
    }
    throw ftError("FT302", {
      what: `${describe}${path === "" ? "" : ` at ${path}`}`,
      why: `expected a tree (records and arrays) of ${leafKind}, got ${describeValue(node)}`,
    });
  };
  const def = walk(tree, "");
  return { leaves, def };
}

export function unflatten<Leaf>(def: TreeDef, leaves: readonly Leaf[]): AnyTree<Leaf> {
  if (typeof def === "number") return leaves[def]!;
  if (Array.isArray(def)) return def.map((d) => unflatten(d, leaves));
  const out: Record<string, AnyTree<Leaf>> = {};
  for (const [key, d] of Object.entries(def as Record<string, TreeDef>)) out[key] = unflatten(d, leaves);
  return out;
}

export { leafPaths } from "../ir/tree-paths.js";

/**
 * The leaves of `tree` in the order a tree definition numbers them: `tree` must have def's
 * structure (records by key, whatever their order; arrays by position), else FT302.
 */
export function flattenAs<Leaf>(def: TreeDef, tree: unknown, isLeaf: (x: unknown) => x is Leaf, what: string): Leaf[] {
  const leaves: Leaf[] = [];
  const walk = (d: TreeDef, node: unknown, path: string): void => {
    const where = path === "" ? what : `${what} ${path}`;
    if (typeof d === "number") {
      if (!isLeaf(node)) throw ftError("FT302", { what: where, why: `expected a tensor, got ${describeValue(node)}` });
      leaves[d] = node;
    } else if (Array.isArray(d)) {
      if (!Array.isArray(node) || node.length !== d.length) {
        throw ftError("FT302", { what: where, why: `expected an array of ${d.length}, got ${describeValue(node)}` });
      }
      d.forEach((child, i) => walk(child, node[i], `${path}[${i}]`));
    } else {
      if (node === null || typeof node !== "object" || Array.isArray(node) || isLeaf(node)) {
        throw ftError("FT302", { what: where, why: `expected a record with keys ${Object.keys(d).join(", ")}, got ${describeValue(node)}` });
      }
      const record = node as Record<string, unknown>;
      const extra = Object.keys(record).filter((k) => !(k in d));
      if (extra.length > 0) throw ftError("FT302", { what: where, why: `unknown key ${extra.join(", ")}` });
      for (const [key, child] of Object.entries(d as Record<string, TreeDef>)) {
        if (!(key in record)) throw ftError("FT302", { what: where, why: `missing key ${key}` });
        walk(child, record[key], path === "" ? key : `${path}.${key}`);
      }
    }
  };
  walk(def, tree, "");
  return leaves;
}
