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
  for (const name of ["trees.ts", "fixes.ts", "clash.ts", "hints.ts", "long.ts"]) await tsserver.request("open", { file: file(editorProject, name), projectRootPath: editorProject });
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

describe("quick fixes", () => {
  const path = file(editorProject, "fixes.ts");
  /** The FedTensor fixes offered for the diagnostic on the line of `marker`. */
  async function fixesOn(marker: string): Promise<string[]> {
    const { line } = positionOf(path, marker);
    const diagnostic = (await diagnosticsOf(path)).find((d) => d.start.line === line);
    expect(diagnostic, `a diagnostic at ${marker}`).toBeDefined();
    return (await fixesFor(path, diagnostic!)).map((f) => f.description);
  }

  it("offer one fix where two messages of a diagnostic call for it", async () => {
    const diagnostic = (await diagnosticsOf(path)).find((d) => d.text.startsWith("FT102"))!;
    expect(diagnostic.text.split("\n").filter((l) => l.startsWith("FT102: "))).toHaveLength(2);
    expect((await fixesFor(path, diagnostic)).map((f) => f.description)).toEqual(["Broadcast params to the CLIENTS: broadcast(params)"]);
  });

  it("swap matmul's operands when they are swapped", async () => {
    expect(await fixesOn("export const scores")).toEqual(["Swap the operands: matmul(x, w)"]);
  });

  it("offer the sparse loss or one-hot labels for int32 labels, not a cast", async () => {
    expect(await fixesOn("export const loss")).toEqual(["Use the loss over class ids: sparseSoftmaxCrossEntropy(…, y)", "One-hot encode y: oneHot(y, 10)"]);
  });

  it("leave out a fix whose result has a new error", async () => {
    // broadcast(w) would make the product a CLIENTS value, which broadcast() then rejects (FT101).
    expect(await fixesOn("export const total")).toEqual(["Reduce x to the SERVER: reduceMean(x)", "Reduce x to the SERVER: reduceSum(x)"]);
  });

  it("leave out a fix that does not type-check", async () => {
    const clash = file(editorProject, "clash.ts");
    const [diagnostic, ...others] = await diagnosticsOf(clash);
    expect(others).toEqual([]);
    expect(diagnostic!.text).toMatch(/^FT102: /);
    expect(await fixesFor(clash, diagnostic!)).toEqual([]);
  });

  it("fix all FedTensor errors of a file at once", async () => {
    const [first] = await diagnosticsOf(path);
    const [fix] = await fixesFor(path, first!);
    expect(fix).toMatchObject({ fixId: "fedtensor-fix-all", fixAllDescription: "Fix all FedTensor errors in this file" });
    const combined = await tsserver.request<ts.server.protocol.CombinedCodeActions>("getCombinedCodeFix", { scope: { type: "file", args: { file: path } }, fixId: fix!.fixId });
    const [change] = combined.changes;
    expect(change!.textChanges).toHaveLength(1);
    await tsserver.request("updateOpen", { changedFiles: [{ fileName: path, textChanges: change!.textChanges }] });
    try {
      expect(await diagnosticsOf(path)).toEqual([]);
      for (const fixed of ["map((xm, p) => add(xm, p.w), x, broadcast(params))", "matmul(x, w)", "sparseSoftmaxCrossEntropy(logits, y)", "broadcast(mul(reduceMean(x"]) {
        expect(change!.textChanges[0]!.newText).toContain(fixed);
      }
    } finally {
      await tsserver.request("updateOpen", { changedFiles: [{ fileName: path, textChanges: [{ start: { line: 1, offset: 1 }, end: { line: 1000, offset: 1 }, newText: ts.sys.readFile(path)! }] }] });
    }
  });
});

describe("inlay hints and hover", () => {
  it("show the placement type of const bindings and map() parameters", async () => {
    const path = file(editorProject, "hints.ts");
    const hints = await tsserver.request<ts.server.protocol.InlayHintItem[]>("provideInlayHints", { file: path, start: 0, length: ts.sys.readFile(path)!.length });
    const fedTensor = hints.filter((h) => typeof h.text === "string" && /@|\[/.test(h.text)).map((h) => ({ text: h.text, at: h.position }));
    expect(fedTensor).toEqual([
      { text: ": <w=f32[784,10]>@CLIENTS", at: { ...positionOf(path, "local", "const "), offset: positionOf(path, "local", "const ").offset + "local".length } },
      { text: ": {f32[B,10]}@CLIENTS", at: { ...positionOf(path, "logits", "const "), offset: positionOf(path, "logits", "const ").offset + "logits".length } },
      { text: ": <w=f32[784,10]>", at: { ...positionOf(path, "p,", "(("), offset: positionOf(path, "p,", "((").offset + 1 } },
      { text: ": f32[B,784]", at: { ...positionOf(path, "xs)", "p, "), offset: positionOf(path, "xs)", "p, ").offset + 2 } },
    ]);
  });

  it("show a program's parameters when its body has errors", async () => {
    const path = file(editorProject, "fixes.ts");
    const body = await tsserver.request<ts.server.protocol.QuickInfoResponseBody>("quickinfo", { file: path, ...positionOf(path, "scores", "const ") });
    const documentation = typeof body.documentation === "string" ? body.documentation : body.documentation.map((p) => p.text).join("");
    expect(documentation.split("\n")[0]).toBe("FedTensor program: `(<x=f32[B,784],w=f32[784,10]> -> ?)` (its body has type errors, so its result is unknown)");
  });
});

describe("plugin options and suppression comments", () => {
  it("apply the tsconfig entry's explanation and severities, and hide suppressed lines", async () => {
    const path = file(optionsProject, "options.ts");
    const diagnostics = await diagnosticsOf(path);
    const line = (marker: string): number => positionOf(path, marker).line;
    expect(diagnostics.map((d) => ({ line: d.start.line, category: d.category, text: d.text }))).toEqual([
      { line: line("export const shifted"), category: "warning", text: "FT201: add() cannot broadcast f32[3,4] with f32[3]: dim 4 vs 3" },
      {
        line: line("export const otherCode"),
        category: "error",
        text: "FT104: mul() mixes {f32[10]}@CLIENTS with f32[10]@SERVER: broadcast the SERVER value or reduce the CLIENTS one",
      },
      { line: line("export const counts"), category: "error", text: "FT205: mul() expects f32, got i32" },
    ]);
  });
});
