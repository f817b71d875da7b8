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

/**
 * A value type in the printed notation: `f32[784,10]@SERVER`, `{f32[B,784]}@CLIENTS`.
 *
 * @example
 * printType({ shape: [784, 10], dtype: "float32", placement: "server" }); // "f32[784,10]@SERVER"
 */
export function printType(type: ValueType): string {
  return printPlaced(printMember(type), type.placement, type.private === true);
}

/**
 * A member's text with its placement: `T@SERVER`, `{T}@CLIENTS`, `T@CLIENTS`, or `T`; a
 * CLIENTS value computed from private data is `{T}@CLIENTS(private)`.
 */
export function printPlaced(member: string, placement: ValueType["placement"], isPrivate = false): string {
  switch (placement) {
    case "server":
      return `${member}@SERVER`;
    case "clients":
      return isPrivate ? `{${member}}@CLIENTS(private)` : `{${member}}@CLIENTS`;
    case "clients-equal":
      return `${member}@CLIENTS`;
    default:
      return member;
  }
}

/**
 * A tree of types, TFF style: a subtree whose leaves share a placement prints once with it
 * (`<w=f32[784,10],b=f32[10]>@SERVER`, `{<f32[4],f32[2]>}@CLIENTS`), others part by part.
 */
export function printTree(tree: TreeDef, typeOf: (leaf: number) => ValueType): string {
  if (typeof tree === "number") return printType(typeOf(tree));
  const placements = new Set<string>();
  collectPlacements(tree, typeOf, placements);
  const [shared] = placements;
  if (placements.size === 1 && shared !== "local" && shared !== "member") {
    const [placement, privacy] = shared!.split(" ") as [ValueType["placement"], string?];
    return printPlaced(printMembers(tree, typeOf), placement, privacy === "private");
  }
  return printParts(tree, (child) => printTree(child, typeOf));
}

/** A record or array tree as `<a=...,b=...>` or `<...,...>`, each part printed by `part`. */
export function printParts(tree: TreeDef, part: (child: TreeDef) => string): string {
  if (Array.isArray(tree)) return `<${tree.map(part).join(",")}>`;
  const record = tree as { readonly [key: string]: TreeDef };
  return `<${Object.keys(record)
    .map((k) => `${k}=${part(record[k]!)}`)
    .join(",")}>`;
}

function printMembers(tree: TreeDef, typeOf: (leaf: number) => ValueType): string {
  return typeof tree === "number" ? printMember(typeOf(tree)) : printParts(tree, (child) => printMembers(child, typeOf));
}

/** The placements of a tree's leaves, private ones apart (`clients private`). */
function collectPlacements(tree: TreeDef, typeOf: (leaf: number) => ValueType, into: Set<string>): void {
  if (typeof tree === "number") {
    const t = typeOf(tree);
    into.add(t.private === true ? `${t.placement} private` : t.placement);
  }
  else for (const t of Array.isArray(tree) ? tree : Object.values(tree as object)) collectPlacements(t as TreeDef, typeOf, into);
}

/**
 * A program's type, TFF style: the parameters print input by input (never as one placed
 * tuple), the result as a tree: `(<params=f32[10]@SERVER,x={f32[B,10]}@CLIENTS> -> f32[]@SERVER)`.
 */
export function printSignature(
  inputs: TreeDef,
  inputType: (leaf: number) => ValueType,
  outputs: TreeDef,
  outputType: (leaf: number) => ValueType,
): string {
  const parameters = typeof inputs === "number" ? printType(inputType(inputs)) : printParts(inputs, (input) => printTree(input, inputType));
  return `(${parameters} -> ${printTree(outputs, outputType)})`;
}
