/**
 * The plugin's guards and its reading of FT messages, on stand-in language services: a failing
 * feature must return TypeScript's own result and log, never throw into tsserver.
 */
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { explainedText, ftMessagesIn, messageParams } from "../explain.js";
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
    expect(log).toHaveLength(2);
    expect(log[0]).toMatch(/^\[fedtensor\/checker-plugin\] getQuickInfoAtPosition failed, TypeScript's result returned instead: Error: checker unavailable/);
    expect(log[1]).toMatch(/getCodeFixesAtPosition failed/);
    expect(service.getSemanticDiagnostics("a.ts")[0]!.messageText).toBe(explainedText([{ code: "FT101", text: ft101 }]));
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
    expect(messageParams({ code: "FT205", text: "FT205: add() expects f32, got i32: cast() it first" })).toEqual({ op: "add", want: "f32", got: "i32" });
    expect(messageParams({ code: "FT101", text: ft101 })).toEqual({ got: "{f32[10]}@CLIENTS" });
    expect(messageParams({ code: "FT205", text: "FT205: not the template's text" })).toBeUndefined();
  });
});
