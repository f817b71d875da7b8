/** Paths of a tree's leaves, for messages and names: shared by the IR's printers and the front end; a tree less some leaves. */
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

/** `def` without the leaves numbered in `dropped`, each other leaf renumbered to its place among the rest; records left empty go too. */
export function withoutLeaves(def: TreeDef, dropped: ReadonlySet<number>): TreeDef {
  const below = (leaf: number) => [...dropped].filter((d) => d < leaf).length;
  const walk = (d: TreeDef): TreeDef | undefined => {
    if (typeof d === "number") return dropped.has(d) ? undefined : d - below(d);
    if (Array.isArray(d)) return (d as readonly TreeDef[]).map(walk).filter((x): x is TreeDef => x !== undefined);
    const entries = Object.entries(d).flatMap(([key, child]) => {
      const kept = walk(child);
      return kept === undefined ? [] : [[key, kept] as const];
    });
    return entries.length === 0 ? undefined : Object.fromEntries(entries);
  };
  return walk(def) ?? {};
}
