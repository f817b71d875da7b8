/**
 * Printing types in the notation of SPEC section 1, at run time: the same text as
 * types/print.ts produces at type level.
 */
import type { DimValue, TreeDef, ValueType } from "./types.js";

const shortDType = { float32: "f32", int32: "i32", bool: "bool" } as const;

export function printDim(dim: DimValue): string {
  return dim === null ? "?" : String(dim);
}

export function printShape(shape: readonly DimValue[]): string {
  return `[${shape.map(printDim).join(",")}]`;
}

export function printMember(type: Pick<ValueType, "shape" | "dtype">): string {
  return `${shortDType[type.dtype]}${printShape(type.shape)}`;
}

export function printType(type: ValueType): string {
  return printPlaced(printMember(type), type.placement);
}

/** A member's text with its placement: `T@SERVER`, `{T}@CLIENTS`, `T@CLIENTS`, or `T`. */
export function printPlaced(member: string, placement: ValueType["placement"]): string {
  switch (placement) {
    case "server":
      return `${member}@SERVER`;
    case "clients":
      return `{${member}}@CLIENTS`;
    case "clients-equal":
      return `${member}@CLIENTS`;
    default:
      return member;
  }
}

/**
 * A tree of types, TFF style: `<w=f32[784,10],b=f32[10]>@SERVER` when every leaf shares a
 * placement, leaf by leaf otherwise.
 */
export function printTree(tree: TreeDef, typeOf: (leaf: number) => ValueType): string {
  const placements = new Set<string>();
  collectPlacements(tree, typeOf, placements);
  const shared = placements.size === 1 ? [...placements][0]! : undefined;
  if (shared === undefined || typeof tree === "number" || shared === "local" || shared === "member") {
    return printEach(tree, typeOf, false);
  }
  return printPlaced(printEach(tree, typeOf, true), shared as ValueType["placement"]);
}

function printEach(tree: TreeDef, typeOf: (leaf: number) => ValueType, bare: boolean): string {
  if (typeof tree === "number") {
    const type = typeOf(tree);
    return bare ? printMember(type) : printType(type);
  }
  if (Array.isArray(tree)) return `<${tree.map((t) => printEach(t, typeOf, bare)).join(",")}>`;
  const record = tree as { readonly [key: string]: TreeDef };
  return `<${Object.keys(record)
    .map((k) => `${k}=${printEach(record[k]!, typeOf, bare)}`)
    .join(",")}>`;
}

function collectPlacements(tree: TreeDef, typeOf: (leaf: number) => ValueType, into: Set<string>): void {
  if (typeof tree === "number") into.add(typeOf(tree).placement);
  else if (Array.isArray(tree)) for (const t of tree) collectPlacements(t, typeOf, into);
  else for (const t of Object.values(tree as object)) collectPlacements(t as TreeDef, typeOf, into);
}
