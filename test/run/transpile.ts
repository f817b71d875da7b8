/**
 * Node 20 cannot run TypeScript, and a child process does not go through vitest's loader, so
 * tests that spawn one transpile its entry file and every module it imports into a temp folder.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";

const repoRoot = resolve(import.meta.dirname, "../..");

/** Transpiles `entry` (a .ts path) and the relative imports it reaches into `outDir`; returns the entry's .js path. */
export function transpileForNode(entry: string, outDir: string): string {
  const done = new Set<string>();
  const visit = (source: string): void => {
    if (done.has(source)) return;
    done.add(source);
    const { outputText } = ts.transpileModule(readFileSync(source, "utf8"), {
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: true },
    });
    const target = join(outDir, relative(repoRoot, source)).replace(/\.ts$/, ".js");
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, outputText);
    // Type-only imports are gone from the output, so only modules needed at run time are followed.
    for (const [, specifier] of outputText.matchAll(/from\s+"(\.{1,2}\/[^"]+)\.js"/g)) {
      visit(resolve(dirname(source), `${specifier}.ts`));
    }
  };
  visit(resolve(entry));
  return join(outDir, relative(repoRoot, resolve(entry))).replace(/\.ts$/, ".js");
}
