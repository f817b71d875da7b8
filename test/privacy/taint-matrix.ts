/**
 * The machinery of the taint matrix (test/privacy/taint-matrix.test.ts): the exported values
 * of src/index.ts with their tensor-valued operands, read with the compiler API from their
 * signatures, and the generated program with one case per (operation, operand).
 */
import ts from "typescript";
import { inputKinds, type Entry, type Expect, type Kind, type OpCase } from "./taint-cases.js";

/**
 * Each exported value of the module, with the names of the operands that can hold a tensor
 * (null for a value that is not callable): every parameter that can be a tensor or a tree,
 * each tensor-valued field of an options object (`options.key`), each function parameter
 * (`f`: a value it captures) and the parameters of a returned function (grad's `args`).
 */
export function exportedOperands(program: ts.Program, modulePath: string): Map<string, string[] | null> {
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(modulePath);
  if (source === undefined) throw new Error(`${modulePath} is not in the program`);
  const moduleSymbol = checker.getSymbolAtLocation(source)!;
  const found = new Map<string, string[] | null>();
  for (const exported of checker.getExportsOfModule(moduleSymbol)) {
    const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
    if (!(symbol.flags & ts.SymbolFlags.Value)) continue;
    const type = checker.getTypeOfSymbolAtLocation(symbol, source);
    const signatures = type.getCallSignatures();
    found.set(exported.name, signatures.length === 0 ? null : operandsOf(checker, signatures[0]!));
  }
  return found;
}

function operandsOf(checker: ts.TypeChecker, signature: ts.Signature): string[] {
  const names: string[] = [];
  for (const parameter of signature.getParameters()) names.push(...parameterOperands(checker, parameter, parameter.name));
  const returned = signature.getReturnType().getCallSignatures()[0];
  if (returned !== undefined) for (const parameter of returned.getParameters()) names.push(parameter.name);
  return names;
}

function parameterOperands(checker: ts.TypeChecker, parameter: ts.Symbol, name: string): string[] {
  const declaration = parameter.valueDeclaration as ts.ParameterDeclaration | ts.PropertySignature | undefined;
  if (declaration !== undefined && ts.isParameter(declaration) && declaration.dotDotDotToken !== undefined) return [name];
  const type = declaredOperandType(checker, parameter, declaration);
  if (type.getCallSignatures().length > 0) return [name];
  if (mayHoldTensor(checker, type)) return [name];
  if (declaration !== undefined && ts.isPropertySignature(declaration)) return [];
  if (!(type.flags & (ts.TypeFlags.Object | ts.TypeFlags.Intersection)) || checker.getIndexTypeOfType(type, ts.IndexKind.Number) !== undefined) return [];
  // An options object (or an intersection, as secureSum's options and the scale float32 data requires): its
  // tensor-valued fields, and its functions (aggregate()'s), which may capture values.
  return checker.getPropertiesOfType(checker.getNonNullableType(type)).flatMap((field) => {
    const fieldDeclaration = field.valueDeclaration as ts.PropertySignature | undefined;
    const fieldType = declaredOperandType(checker, field, fieldDeclaration);
    return fieldType.getCallSignatures().length > 0 || mayHoldTensor(checker, fieldType) ? [`${name}.${field.name}`] : [];
  });
}

/**
 * The type a parameter accepts before its checks: `Validate<X, ...>` and `Checked<X, ...>` are
 * X, and a type parameter its constraint (unknown when it has none).
 */
function declaredOperandType(checker: ts.TypeChecker, symbol: ts.Symbol, declaration: ts.ParameterDeclaration | ts.PropertySignature | undefined): ts.Type {
  let node = declaration?.type;
  while (node !== undefined && ts.isTypeReferenceNode(node) && ["Validate", "Checked"].includes(node.typeName.getText()) && node.typeArguments?.[0] !== undefined) {
    node = node.typeArguments[0];
  }
  const type = node === undefined ? checker.getTypeOfSymbol(symbol) : checker.getTypeFromTypeNode(node);
  if (type.flags & ts.TypeFlags.TypeParameter) return checker.getBaseConstraintOfType(type) ?? checker.getUnknownType();
  return type;
}

/** Whether a value of this type can be a tensor or hold one: unknown, object, a tensor type, a list or union with one. */
function mayHoldTensor(checker: ts.TypeChecker, type: ts.Type, depth = 0): boolean {
  if (depth > 4) return false;
  const t = checker.getBaseConstraintOfType(type) ?? type;
  if (t.flags & (ts.TypeFlags.Any | ts.TypeFlags.Unknown | ts.TypeFlags.NonPrimitive)) return true;
  if (t.isUnion()) return t.types.some((member) => mayHoldTensor(checker, member, depth + 1));
  if (checker.getPropertiesOfType(t).some((p) => p.escapedName.toString().startsWith("__@staticType"))) return true;
  const element = checker.getIndexTypeOfType(t, ts.IndexKind.Number);
  return element !== undefined && mayHoldTensor(checker, element, depth + 1);
}

/** The base operand name of a slot: `xs[0]` and `xs[1]` are both xs. */
export const operandOf = (slot: string): string => slot.replace(/\[\d+\]$/, "");

export interface Case {
  readonly op: string;
  /** The private slot, or null for the case with every operand public. */
  readonly slot: string | null;
  /** The export that builds it, and its line in the generated source. */
  readonly exportName: string;
  readonly line: number;
  readonly expect: Expect | null;
}

const isOp = (entry: Entry): entry is OpCase => !("notAnOp" in entry);
const privateInput = (kind: Kind): string => {
  const k = inputKinds[kind];
  return `p${"privateKind" in k ? k.privateKind : kind}`;
};

const publicValue = (kind: Kind): string => {
  const k = inputKinds[kind];
  return "value" in k ? k.value : `i.${kind}`;
};

/** One module: the inputs (each kind public and, at the CLIENTS, private), then one exported program builder per case, one line each. */
export function generate(table: Readonly<Record<string, Entry>>, importPath: string): { source: string; cases: Case[] } {
  const inputs = Object.entries(inputKinds).flatMap(([kind, { spec, at }]) =>
    at === "clients" ? [`${kind}: ft.atClients(${spec})`, `p${kind}: ft.atClients(${spec}, { private: true })`] : at === "server" ? [`${kind}: ft.atServer(${spec})`] : [],
  );
  const lines = [`import * as ft from ${JSON.stringify(importPath)};`, `const inputs = { ${inputs.join(", ")} };`];
  const cases: Case[] = [];
  for (const [op, entry] of Object.entries(table)) {
    if (!isOp(entry)) continue;
    const slots = Object.keys(entry.slots);
    for (const slot of [null, ...slots]) {
      const args = Object.fromEntries(slots.map((s) => [s, s === slot ? `i.${privateInput(entry.slots[s]!)}` : publicValue(entry.slots[s]!)]));
      const exportName = `case${cases.length}`;
      lines.push(`export const ${exportName} = () => ft.program(inputs, (i) => ${entry.call(op, args)});`);
      const expect = slot === null ? null : (entry.expect?.[slot] ?? { tsc: "FT109", trace: "FT109" });
      cases.push({ op, slot, exportName, line: lines.length, expect });
    }
  }
  return { source: `${lines.join("\n")}\n`, cases };
}
