/**
 * The library's public signatures carry placements, privacy included: no `any` in them
 * (docs/algorithms.md "Static types"). An `any` would let private client data through tsc
 * unseen, since an `any` operand opts out of every static check.
 *
 * This reads the declarations `npm run build` emits (dist/src/lib), starting from the exports
 * of dist/src/lib/index.d.ts, and follows every type they name that is declared in the library
 * (so an alias such as `type Value = any` counts where a public signature uses it). Types of
 * the language itself (types/, src/front) are checked by their own tests and not entered here.
 */
import { existsSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { expect, test } from "vitest";

const projectRoot = join(dirname(fileURLToPath(import.meta.url)), "../..");
const libDeclarations = join(projectRoot, "dist/src/lib");
const entry = join(libDeclarations, "index.d.ts");

/** Where each `any` is found: the export that reaches it, the declaration's file and line, and the text. */
function anyInPublicSignatures(): string[] {
  const program = ts.createProgram([entry], { module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, noEmit: true, skipLibCheck: true });
  const checker = program.getTypeChecker();
  const inLibrary = (node: ts.Node) => !relative(libDeclarations, node.getSourceFile().fileName).startsWith("..");
  const resolve = (symbol: ts.Symbol) => (symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol);
  const module = checker.getSymbolAtLocation(program.getSourceFile(entry)!)!;
  const found = new Set<string>();
  let visited = new Set<ts.Node>();

  const walk = (exported: string, declaration: ts.Node): void => {
    if (visited.has(declaration) || !inLibrary(declaration)) return;
    visited.add(declaration);
    const visit = (node: ts.Node): void => {
      // A private class member's type is not emitted, and not public.
      if (ts.isPropertyDeclaration(node) && node.modifiers?.some((m) => m.kind === ts.SyntaxKind.PrivateKeyword)) return;
      if (node.kind === ts.SyntaxKind.AnyKeyword) {
        const file = node.getSourceFile();
        const line = file.getLineAndCharacterOfPosition(node.getStart()).line + 1;
        const text = file.text.split("\n")[line - 1]!.trim();
        found.add(`${exported}: ${relative(projectRoot, file.fileName)}:${line}: ${text}`);
      }
      const named = ts.isTypeReferenceNode(node)
        ? node.typeName
        : ts.isExpressionWithTypeArguments(node) || ts.isTypeQueryNode(node)
          ? ts.isTypeQueryNode(node)
            ? node.exprName
            : node.expression
          : ts.isImportTypeNode(node)
            ? node.qualifier
            : undefined;
      const symbol = named === undefined ? undefined : checker.getSymbolAtLocation(named);
      if (symbol !== undefined) for (const d of resolve(symbol).declarations ?? []) walk(exported, d);
      ts.forEachChild(node, visit);
    };
    visit(declaration);
  };

  for (const symbol of checker.getExportsOfModule(module)) {
    visited = new Set();
    for (const declaration of resolve(symbol).declarations ?? []) walk(symbol.name, declaration);
  }
  return [...found].sort();
}

test("no public signature of the library has `any`", () => {
  expect(existsSync(entry), `${entry} is missing: run npm run build first`).toBe(true);
  expect(anyInPublicSignatures()).toEqual([]);
});
