/**
 * The plugin's guards and its reading of FT messages, on stand-in language services: a failing
 * feature must return TypeScript's own result and log, never throw into tsserver.
 */
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { explainedText, explanationOf, ftMessagesIn, messageParams } from "../explain.js";
import { readOptions } from "../options.js";
import { createPlugin } from "../plugin.js";

const ft101 = "FT101: broadcast() takes a SERVER value, got {f32[10]}@CLIENTS";
const ft105 = "FT105: broadcast() inside a per-client function: its values are local members there";

const diagnostic: ts.Diagnostic = {
  category: ts.DiagnosticCategory.Error,
  code: 2345,
  file: undefined,
  start: 10,
  length: 1,
  messageText: `Argument of type 'Tensor<[10], "float32", "clients">' is not assignable to parameter of type '"${ft101}"'.`,
};
const quickInfo: ts.QuickInfo = { kind: ts.ScriptElementKind.constElement, kindModifiers: "", textSpan: { start: 0, length: 1 } };
const fix: ts.CodeFixAction = { fixName: "typescript-fix", description: "a fix of TypeScript's", changes: [] };

/** The plugin over a stand-in service whose getProgram does `program`; returns the proxy and the log. */
function pluginOver(program: () => ts.Program): { service: ts.LanguageService; log: string[] } {
  const log: string[] = [];
  const base = {
    getSemanticDiagnostics: () => [diagnostic],
    getQuickInfoAtPosition: () => quickInfo,
    getCodeFixesAtPosition: () => [fix],
    provideInlayHints: () => [],
    getCombinedCodeFix: () => ({ changes: [] }),
    getProgram: program,
    getCompletionsAtPosition: () => undefined,
  } as unknown as ts.LanguageService;
  const info = { languageService: base, project: { projectService: { logger: { info: (m: string) => log.push(m) } } } };
  return { service: createPlugin({ typescript: ts }).create(info as unknown as ts.server.PluginCreateInfo), log };
}

describe("the plugin's guards", () => {
  it("return TypeScript's result and log when a feature fails", () => {
    const { service, log } = pluginOver(() => {
      throw new Error("checker unavailable");
    });
    expect(service.getQuickInfoAtPosition("a.ts", 0)).toBe(quickInfo);
    expect(service.getCodeFixesAtPosition("a.ts", 10, 11, [2345], {}, {})).toEqual([fix]);
    expect(service.getSemanticDiagnostics("a.ts")).toEqual([diagnostic]);
    expect(service.provideInlayHints("a.ts", { start: 0, length: 1 }, {})).toEqual([]);
    expect(log).toHaveLength(4);
    expect(log[0]).toMatch(/^\[fedtensor\/checker-plugin\] getQuickInfoAtPosition failed, TypeScript's result returned instead: Error: checker unavailable/);
    expect(log.slice(1).map((l) => /\] (\w+) failed/.exec(l)?.[1])).toEqual(["getCodeFixesAtPosition", "getSemanticDiagnostics", "provideInlayHints"]);
    expect(service.getCompletionsAtPosition("a.ts", 0, {})).toBeUndefined();
  });

  it("let tsserver's cancellation through", () => {
    const { service, log } = pluginOver(() => {
      throw new ts.OperationCanceledException();
    });
    expect(() => service.getQuickInfoAtPosition("a.ts", 0)).toThrow(ts.OperationCanceledException);
    expect(log).toEqual([]);
  });

  it("leave the language service as it was when the plugin cannot start", () => {
    const log: string[] = [];
    const info = { languageService: null, project: { projectService: { logger: { info: (m: string) => log.push(m) } } } };
    expect(createPlugin({ typescript: ts }).create(info as unknown as ts.server.PluginCreateInfo)).toBeNull();
    expect(log).toEqual([expect.stringMatching(/^\[fedtensor\/checker-plugin\] not enabled: TypeError/)]);
  });
});

describe("FT messages in diagnostics", () => {
  it("are read from string literal types anywhere in a message chain, each once", () => {
    const chain: ts.DiagnosticMessageChain = {
      messageText: "No overload matches this call.",
      category: ts.DiagnosticCategory.Error,
      code: 2769,
      next: [
        { messageText: `... of type '"${ft101}" | "${ft105}"'.`, category: ts.DiagnosticCategory.Error, code: 2345 },
        { messageText: `... of type '"${ft101}"'.`, category: ts.DiagnosticCategory.Error, code: 2345 },
      ],
    };
    expect(ftMessagesIn(chain)).toEqual([
      { code: "FT101", text: ft101 },
      { code: "FT105", text: ft105 },
    ]);
  });

  it("unescape quotes and ignore codes the catalogue does not have", () => {
    expect(ftMessagesIn(`type '"FT302: data \\"x.csv\\": missing"' and '"FT999: not a code"'`)).toEqual([
      { code: "FT302", text: 'FT302: data "x.csv": missing' },
    ]);
    expect(ftMessagesIn("Type 'string' is not assignable to type 'number'.")).toEqual([]);
  });

  it("give back the values filled into their catalogue template", () => {
    expect(messageParams({ code: "FT205", text: "FT205: add() expects f32, got i32" })).toEqual({ op: "add", want: "f32", got: "i32" });
    expect(messageParams({ code: "FT101", text: ft101 })).toEqual({ got: "{f32[10]}@CLIENTS" });
    expect(messageParams({ code: "FT205", text: "FT205: not the template's text" })).toBeUndefined();
  });
});

describe("explained text", () => {
  const leaf = (path: string) => ({ code: "FT104" as const, text: `FT104: add() mixes {f32[10]}@CLIENTS with f32[10]@SERVER at ${path}: broadcast the SERVER value or reduce the CLIENTS one` });

  it("names every failing leaf, then explains each code once", () => {
    const text = explainedText([leaf("w.a"), leaf("w.b"), { code: "FT101", text: ft101 }]);
    expect(text.split("\n")).toEqual([leaf("w.a").text, leaf("w.b").text, ...explanationOf("FT104"), "", ft101, ...explanationOf("FT101")]);
  });

  it("is the FT messages alone in short mode", () => {
    expect(explainedText([leaf("w.a"), leaf("w.b")], "short")).toBe(`${leaf("w.a").text}\n${leaf("w.b").text}`);
  });
});

describe("plugin options", () => {
  it("are read from the tsconfig entry, with a problem for each value out of range", () => {
    expect(readOptions({ name: "fedtensor/checker-plugin", explanation: "short", severity: { FT104: "warning" }, inlayHints: false })).toEqual({
      options: { explanation: "short", severity: { FT104: "warning" }, inlayHints: false },
      problems: [],
    });
    const { options, problems } = readOptions({ explanation: "long", severity: { FT104: "loud", FT999: "off" }, hints: true });
    expect(options).toEqual({ explanation: "full", severity: {}, inlayHints: true });
    expect(problems).toEqual([
      { option: "explanation", why: 'must be "full" or "short", got "long"' },
      { option: "severity.FT104", why: 'must be one of error, warning, suggestion, message, off, got "loud"' },
      { option: "severity.FT999", why: "not an FT code of the catalogue" },
      { option: "hints", why: "unknown option; the options are explanation, severity and inlayHints" },
    ]);
  });
});
