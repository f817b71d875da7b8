/**
 * Reading FedTensor static types out of TypeScript types through the checker: a Tensor's (or
 * TensorSpec's) shape, dtype and placement are the type arguments carried by its phantom
 * `[staticType]` key, a tree is records and tuples of them, and a Program carries its input
 * specs and outputs under `[programTypes]`. The result is printed by src/ir/print.ts, so hover
 * text uses the very notation of `program.signature` and the FT messages.
 */
import type ts from "typescript";
import { printParts, printSignature, printTree } from "../src/ir/print.js";
import type { DimValue, DType, Placement, TreeDef, ValueType } from "../src/ir/types.js";
import type { Placement as StaticPlacement, PrivatePlacement } from "../types/tensor.js";

/** A tree of FedTensor types: the tree's layout, with leaves numbering into `leaves`. */
export interface TypeTree {
  readonly def: TreeDef;
  readonly leaves: readonly ValueType[];
}

const dtypes: readonly string[] = ["float32", "int32", "bool"] satisfies DType[];
/** The types' private placements, which the IR writes as a placement and the `private` flag. */
const privatePlacements: { readonly [P in PrivatePlacement]: Placement } = { "clients-private": "clients", "member-private": "member" };
const placements: readonly string[] = ["server", "clients", "clients-equal", "local", "member", "clients-private", "member-private"] satisfies StaticPlacement[];

// Trees in real programs are model parameters and batches; these bounds only keep a hover
// over some huge unrelated object type from walking it.
const maxDepth = 8;
const maxLeaves = 256;

/**
 * The type of the property keyed by the unique symbol `symbolName`. The checker names such
 * properties `__@<symbol name>@<id>`; the FedTensor types use two such keys, `staticType` and
 * `programTypes`.
 */
function symbolKeyedType(checker: ts.TypeChecker, type: ts.Type, symbolName: string): ts.Type | undefined {
  const prefix = `__@${symbolName}@`;
  const property = type.getProperties().find((p) => (p.escapedName as string).startsWith(prefix));
  return property === undefined ? undefined : checker.getTypeOfSymbol(property);
}

function propertyType(checker: ts.TypeChecker, type: ts.Type, name: string): ts.Type | undefined {
  const property = type.getProperty(name);
  return property === undefined ? undefined : checker.getTypeOfSymbol(property);
}

function literalOf(type: ts.Type | undefined, allowed: readonly string[]): string | undefined {
  return type?.isStringLiteral() && allowed.includes(type.value) ? type.value : undefined;
}

/**
 * A placement's literal; a released SERVER value's placement is "server" & a phantom brand
 * (types/tensor.ts ReleasedServer), shown as the SERVER value it is for every rule but derivatives.
 */
function placementOf(type: ts.Type | undefined): string | undefined {
  const literal = type?.isIntersection() ? type.types.find((t) => t.isStringLiteral()) : type;
  return literalOf(literal, placements);
}

/**
 * The one dim of a shape whose rank is known only at run time: types/print.ts prints such a
 * shape as `[...]`, and so does src/ir/print.ts with this dim.
 */
const unknownRankDim = "...";
export const hasKnownRank = (type: ValueType): boolean => !type.shape.includes(unknownRankDim);

/** A dim: a number literal, a name, or null (printed `?`) when only the run time knows it. */
function dimOf(type: ts.Type): DimValue {
  return type.isNumberLiteral() || type.isStringLiteral() ? type.value : null;
}

/**
 * The type of one tensor or spec, or undefined for other types and for tensors whose dtype or
 * placement is not a single known one (generic code).
 */
export function leafType(checker: ts.TypeChecker, type: ts.Type): ValueType | undefined {
  const info = symbolKeyedType(checker, type, "staticType");
  if (info === undefined) return undefined;
  const dtype = literalOf(propertyType(checker, info, "dtype"), dtypes) as DType | undefined;
  const placed = placementOf(propertyType(checker, info, "placement"));
  const shape = propertyType(checker, info, "shape");
  if (dtype === undefined || placed === undefined || shape === undefined) return undefined;
  const dims = checker.isTupleType(shape) ? checker.getTypeArguments(shape as ts.TypeReference).map(dimOf) : [unknownRankDim];
  const privately = privatePlacements[placed as PrivatePlacement];
  return privately === undefined ? { shape: dims, dtype, placement: placed as Placement } : { shape: dims, dtype, placement: privately, private: true };
}

/** A tree (records and tuples) whose every leaf is a tensor or spec, or undefined. */
export function typeTree(checker: ts.TypeChecker, type: ts.Type): TypeTree | undefined {
  const leaves: ValueType[] = [];
  const walk = (t: ts.Type, depth: number): TreeDef | undefined => {
    const leaf = leafType(checker, t);
    if (leaf !== undefined) {
      if (leaves.length >= maxLeaves) return undefined;
      leaves.push(leaf);
      return leaves.length - 1;
    }
    // Functions and class instances have call signatures (or methods, which fail below);
    // primitives fail below too, as their apparent properties are methods.
    if (depth >= maxDepth || t.getCallSignatures().length > 0) return undefined;
    if (checker.isTupleType(t)) {
      const elements = checker.getTypeArguments(t as ts.TypeReference).map((e) => walk(e, depth + 1));
      return elements.every((e) => e !== undefined) ? elements : undefined;
    }
    const properties = t.getProperties();
    if (properties.length === 0) return undefined;
    const record: { [key: string]: TreeDef } = {};
    for (const p of properties) {
      const child = walk(checker.getTypeOfSymbol(p), depth + 1);
      if (child === undefined) return undefined;
      record[p.name] = child;
    }
    return record;
  };
  const def = walk(type, 0);
  return def === undefined ? undefined : { def, leaves };
}

export function printTypeTree(tree: TypeTree): string {
  return printTree(tree.def, (leaf) => tree.leaves[leaf]!);
}

/** A program's result where the checker has none (its body has type errors). */
export const unknownResult = "?";

/**
 * A program's signature, `(<params=...,x=...> -> f32[]@SERVER)`, or undefined for other types.
 * A program whose body has type errors has no result type (never), and still shows its
 * parameters: `(<params=...> -> ?)`.
 */
export function programSignature(checker: ts.TypeChecker, type: ts.Type): string | undefined {
  const types = symbolKeyedType(checker, type, "programTypes");
  if (types === undefined) return undefined;
  const inputs = propertyType(checker, types, "inputs");
  const output = propertyType(checker, types, "output");
  const inputTree = inputs && typeTree(checker, inputs);
  const outputTree = output && typeTree(checker, output);
  if (inputTree === undefined) return undefined;
  const typeOf = (tree: TypeTree) => (leaf: number) => tree.leaves[leaf]!;
  if (outputTree !== undefined) return printSignature(inputTree.def, typeOf(inputTree), outputTree.def, typeOf(outputTree));
  const { def } = inputTree;
  const parameters = typeof def === "number" ? printTypeTree(inputTree) : printParts(def, (input) => printTree(input, typeOf(inputTree)));
  return `(${parameters} -> ${unknownResult})`;
}
