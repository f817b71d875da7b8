/**
 * Hover: over a FedTensor value (a tensor, a spec, or a tree of them) the placement and shape
 * in the notation of SPEC section 1, over a program its signature. TypeScript's own text
 * stays; the FedTensor line comes first in the documentation.
 */
import type ts from "typescript";
import { innermostNodeAt } from "./nodes.js";
import { printTypeTree, programSignature, typeTree, unknownResult } from "./value-types.js";

/**
 * The FedTensor hover line for a type, or undefined when it is no FedTensor value; for a
 * program, with the aggregators its body calls where they are known (`aggregators`).
 */
export function fedTensorHover(checker: ts.TypeChecker, type: ts.Type, aggregators: readonly string[] = []): string | undefined {
  const signature = programSignature(checker, type);
  if (signature?.endsWith(` -> ${unknownResult})`)) return `FedTensor program: \`${signature}\` (its body has type errors, so its result is unknown)`;
  if (signature !== undefined) return `FedTensor program: \`${signature}\`${aggregators.length === 0 ? "" : `, aggregated by ${aggregators.join(", ")}`}`;
  const tree = typeTree(checker, type);
  // Code spans, because editors render hover documentation as markdown and `<w=...>` could read as HTML.
  return tree === undefined ? undefined : `FedTensor: \`${printTypeTree(tree)}\``;
}

export function addFedTensorHover(
  typescript: typeof ts,
  program: ts.Program | undefined,
  quickInfo: ts.QuickInfo | undefined,
  fileName: string,
): ts.QuickInfo | undefined {
  const file = program?.getSourceFile(fileName);
  if (quickInfo === undefined || program === undefined || file === undefined) return quickInfo;
  const checker = program.getTypeChecker();
  const node = innermostNodeAt(typescript, file, quickInfo.textSpan.start);
  const hover = fedTensorHover(checker, checker.getTypeAtLocation(node), aggregatorsCalled(typescript, checker, node));
  if (hover === undefined) return quickInfo;
  const documentation = quickInfo.documentation ?? [];
  const separator: ts.SymbolDisplayPart[] = documentation.length > 0 ? [{ kind: "lineBreak", text: "\n\n" }] : [];
  return { ...quickInfo, documentation: [{ kind: "text", text: hover }, ...separator, ...documentation] };
}

/** FedTensor's aggregators by name: the reductions, aggregate() and the private ones (src/ir/privacy.ts). */
const aggregatorNames = new Set(["reduceSum", "reduceMean", "reduceMax", "reduceMin", "reduceWeightedMean", "aggregate", "dpSum", "secureSum", "dpMean", "secureMean"]);

/**
 * The FedTensor aggregators that the program declared at `node` (`const p = program(...)`)
 * calls in its body, each once in order, read from the source: calls through the library's
 * own functions (such as fedAvgProgram's dpSum under the chain clip,dp) are not seen;
 * `fedtensor ir --signature` lists those from the traced IR.
 */
function aggregatorsCalled(typescript: typeof ts, checker: ts.TypeChecker, node: ts.Node): string[] {
  const declaration = checker.getSymbolAtLocation(node)?.valueDeclaration;
  const initializer = declaration !== undefined && typescript.isVariableDeclaration(declaration) ? declaration.initializer : undefined;
  if (initializer === undefined) return [];
  const found = new Set<string>();
  const visit = (n: ts.Node): void => {
    if (typescript.isCallExpression(n)) {
      const callee = typescript.isPropertyAccessExpression(n.expression) ? n.expression.name : n.expression;
      if (typescript.isIdentifier(callee) && isFedTensorAggregator(typescript, checker, callee)) found.add(callee.text + releaseCost(typescript, callee.text, n));
    }
    typescript.forEachChild(n, visit);
  };
  visit(initializer);
  return [...found];
}

/**
 * A Gaussian release's cost, when its options are number literals: dpSum and dpMean add
 * N(0, (z clip)^2) to a sum of contributions clipped to clip, the Gaussian mechanism of
 * sensitivity clip, which is rho = 1 / (2 z^2) zCDP (Bun and Steinke 2016, Proposition 1.6).
 * Nothing for other aggregators or options that are not literals.
 */
function releaseCost(typescript: typeof ts, name: string, call: ts.CallExpression): string {
  const options = call.arguments[1];
  if ((name !== "dpSum" && name !== "dpMean") || options === undefined || !typescript.isObjectLiteralExpression(options)) return "";
  const literal = (key: string): number | undefined => {
    const property = options.properties.find((p) => typescript.isPropertyAssignment(p) && typescript.isIdentifier(p.name) && p.name.text === key);
    const value = property !== undefined && typescript.isPropertyAssignment(property) ? property.initializer : undefined;
    return value !== undefined && typescript.isNumericLiteral(value) ? Number(value.text) : undefined;
  };
  const [clip, z] = [literal("clip"), literal("noiseMultiplier")];
  if (clip === undefined || z === undefined || !(z > 0)) return "";
  return ` (Gaussian, clip ${clip}, noise multiplier ${z}, zCDP rho ${Number((1 / (2 * z * z)).toPrecision(4))})`;
}

function isFedTensorAggregator(typescript: typeof ts, checker: ts.TypeChecker, callee: ts.Identifier): boolean {
  let symbol = checker.getSymbolAtLocation(callee);
  if (symbol !== undefined && symbol.flags & typescript.SymbolFlags.Alias) symbol = checker.getAliasedSymbol(symbol);
  const file = symbol?.declarations?.[0]?.getSourceFile().fileName;
  return symbol !== undefined && aggregatorNames.has(symbol.name) && file !== undefined && /[\\/]src[\\/]front[\\/]/.test(file);
}
