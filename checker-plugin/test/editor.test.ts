/**
 * The editor features of issue 10 over the real tsserver, as an editor meets them: every
 * failing leaf of a tree, a visible region's diagnostics, verified and deduplicated quick fixes
 * with "fix all", inlay hints, hover on a program with errors, plugin options from tsconfig and
 * suppression comments.
 */
import { join } from "node:path";
import ts from "typescript";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { explanationOf } from "../explain.js";
import { linkFedTensor, repoRoot } from "./language-service.js";
import { TsServer } from "./tsserver-client.js";

type Diagnostic = ts.server.protocol.Diagnostic;
type CodeFixAction = ts.server.protocol.CodeFixAction;

const editorProject = join(repoRoot, "checker-plugin/test/fixtures/editor");
const optionsProject = join(repoRoot, "checker-plugin/test/fixtures/options");
const file = (project: string, name: string): string => join(project, name);
let tsserver: TsServer;

beforeAll(async () => {
  linkFedTensor(editorProject);
  linkFedTensor(optionsProject);
  tsserver = new TsServer(["--allowLocalPluginLoads", "--disableAutomaticTypingAcquisition"]);
  for (const name of ["trees.ts", "fixes.ts", "hints.ts", "long.ts"]) await tsserver.request("open", { file: file(editorProject, name), projectRootPath: editorProject });
  await tsserver.request("open", { file: file(optionsProject, "options.ts"), projectRootPath: optionsProject });
});
afterAll(() => tsserver?.close());

const diagnosticsOf = (path: string): Promise<Diagnostic[]> => tsserver.request<Diagnostic[]>("semanticDiagnosticsSync", { file: path });

/** 1-based line and offset of the start of `text` (after `context`) in a file. */
function positionOf(path: string, text: string, context = ""): { line: number; offset: number } {
  const source = ts.sys.readFile(path)!;
  const index = source.indexOf(context + text) + context.length;
  expect(index, `${context}${text} in ${path}`).toBeGreaterThanOrEqual(context.length);
  const before = source.slice(0, index).split("\n");
  return { line: before.length, offset: before.at(-1)!.length + 1 };
}

async function fixesFor(path: string, diagnostic: Diagnostic): Promise<CodeFixAction[]> {
  const fixes = await tsserver.request<CodeFixAction[]>("getCodeFixes", {
    file: path,
    startLine: diagnostic.start.line,
    startOffset: diagnostic.start.offset,
    endLine: diagnostic.end.line,
    endOffset: diagnostic.end.offset,
    errorCodes: [diagnostic.code],
  });
  return fixes.filter((f) => f.fixName.startsWith("fedtensor-"));
}

describe("diagnostics", () => {
  it("name every failing leaf of a tree, though tsc prints only some, and explain the code once", async () => {
    const [diagnostic, ...others] = await diagnosticsOf(file(editorProject, "trees.ts"));
    expect(others).toEqual([]);
    const lines = diagnostic!.text.split("\n");
    const messages = lines.filter((l) => l.startsWith("FT104: "));
    expect(messages).toHaveLength(8);
    for (const size of [10, 11, 12, 13, 14, 15, 16, 17]) expect(messages.some((m) => m.includes(`{f32[${size}]}@CLIENTS`))).toBe(true);
    expect(lines.slice(messages.length)).toEqual(explanationOf("FT104"));
  });

  it("explain a visible region's diagnostics, which tsserver sends first for a long file", async () => {
    const path = file(editorProject, "long.ts");
    const start = positionOf(path, "export const scaled");
    const region = tsserver.nextEvent<{ file: string; diagnostics: Diagnostic[]; spans?: unknown[] }>("regionSemanticDiag", (b) => b.file === path);
    const whole = tsserver.nextEvent<{ file: string; diagnostics: Diagnostic[] }>("semanticDiag", (b) => b.file === path);
    tsserver.notify("geterr", { delay: 0, files: [{ file: path, ranges: [{ startLine: start.line - 2, startOffset: 1, endLine: start.line + 1, endOffset: 1 }] }] });
    const [regionBody, wholeBody] = await Promise.all([region, whole]);
    expect(regionBody.spans).toBeDefined();
    for (const body of [regionBody, wholeBody]) {
      expect(body.diagnostics.map((d) => d.text.split("\n")[0])).toEqual([
        "FT104: mul() mixes {f32[10]}@CLIENTS with f32[10]@SERVER: broadcast the SERVER value or reduce the CLIENTS one",
      ]);
      expect(body.diagnostics[0]!.text).toContain("\nHow to fix it: ");
    }
  });
});
