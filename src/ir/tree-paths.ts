/** Paths of a tree's leaves, for messages and names: shared by the IR's printers and the front end. */
import type { TreeDef } from "./types.js";

/** The path of each leaf ("" for a lone leaf, "x", "params.w", "layers[0]"), in leaf order. */
export function leafPaths(def: TreeDef): string[] {
  const paths: string[] = [];
  const walk = (d: TreeDef, path: string): void => {
    if (typeof d === "number") paths[d] = path;
    else if (Array.isArray(d)) d.forEach((child, i) => walk(child, `${path}[${i}]`));
    else for (const [key, child] of Object.entries(d as Record<string, TreeDef>)) walk(child, path === "" ? key : `${path}.${key}`);
  };
  walk(def, "");
  return paths;
}
