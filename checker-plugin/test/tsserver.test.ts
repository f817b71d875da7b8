/**
 * End to end: the real tsserver loads the built plugin (dist/cjs, from `npm run build`) from
 * the fixture project's tsconfig.json, as an editor's would, and the test speaks the
 * protocol: explained diagnostics, hovers, and quick fixes that clean up a file of mistakes.
 */
import { join } from "node:path";
import ts from "typescript";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fixtureProject, linkFedTensor } from "./language-service.js";
import { TsServer } from "./tsserver-client.js";

type Diagnostic = ts.server.protocol.Diagnostic;
type Location = ts.server.protocol.Location;

const mistakes = join(fixtureProject, "mistakes.ts");
const averaging = join(fixtureProject, "federated-averaging.ts");
const plainError = join(fixtureProject, "plain-error.ts");
let tsserver: TsServer;

beforeAll(async () => {
  linkFedTensor();
  // In a user's project tsserver finds plugins in the node_modules it is installed in, next to
  // fedtensor. This tsserver is the repository's, so it is told to look in the fixture
  // project's own node_modules, where the link to this package is.
  tsserver = new TsServer(["--allowLocalPluginLoads", "--disableAutomaticTypingAcquisition"]);
  for (const file of [mistakes, averaging, plainError]) await tsserver.request("open", { file, projectRootPath: fixtureProject });
});
afterAll(() => tsserver?.close());

const diagnosticsOf = (file: string): Promise<Diagnostic[]> => tsserver.request<Diagnostic[]>("semanticDiagnosticsSync", { file });

/** Line/offset (1-based) to an index into text. */
function indexOf(text: string, at: Location): number {
  const lineStarts = [0, ...[...text.matchAll(/\n/g)].map((m) => m.index + 1)];
  return lineStarts[at.line - 1]! + at.offset - 1;
}

describe("tsserver with the checker plugin", () => {
  it("explains FT diagnostics and passes the others through", async () => {
    const diagnostics = await diagnosticsOf(mistakes);
    expect(diagnostics.map((d) => d.text.slice(0, 5))).toEqual(["FT104", "FT102", "FT202", "FT201", "FT203", "FT205"]);
    for (const d of diagnostics) {
      expect(d.text).toContain("\nWhat went wrong: ");
      expect(d.text).toMatch(/\nWhy this is an? (placement|shape|dtype) error: /);
      expect(d.text).toContain("\nHow to fix it: ");
      expect(d.code).toBe(2345);
      expect(d.source).toBe("fedtensor");
    }
    expect(diagnostics[0]!.text.split("\n")[0]).toBe(
      "FT104: mul() mixes {f32[10]}@CLIENTS with f32[10]@SERVER: broadcast the SERVER value or reduce the CLIENTS one",
    );
    expect(await diagnosticsOf(averaging)).toEqual([]);
    const [plain] = await diagnosticsOf(plainError);
    expect(plain).toMatchObject({ code: 2322, text: "Type 'string' is not assignable to type 'number'.", start: { line: 2, offset: 14 } });
    expect(plain!.source).toBeUndefined();
  });

  it("shows placement and shape on hover", async () => {
    const text = ts.sys.readFile(averaging)!;
    const hover = async (context: string, word: string): Promise<string> => {
      const index = text.indexOf(context + word) + context.length;
      const line = text.slice(0, index).split("\n").length;
      const offset = index - text.lastIndexOf("\n", index - 1);
      const body = await tsserver.request<ts.server.protocol.QuickInfoResponseBody>("quickinfo", { file: averaging, line, offset });
      return typeof body.documentation === "string" ? body.documentation : body.documentation.map((p) => p.text).join("");
    };
    expect(await hover("({ ", "params")).toMatch(/^FedTensor: `<w=f32\[784,10\],b=f32\[10\]>@SERVER`/);
    expect(await hover("const ", "logits")).toMatch(/^FedTensor: `f32\[B,10\]`/);
    expect(await hover("const ", "round")).toMatch(
      /^FedTensor program: `\(<params=<w=f32\[784,10\],b=f32\[10\]>@SERVER,x=\{f32\[B,784\]\}@CLIENTS,y=\{f32\[B,10\]\}@CLIENTS> -> <w=f32\[784,10\],b=f32\[10\]>@SERVER\)`/,
    );
  });

  it("offers quick fixes that leave the file free of errors", async () => {
    let text = ts.sys.readFile(mistakes)!;
    const applied: string[] = [];
    for (let diagnostics = await diagnosticsOf(mistakes); diagnostics.length > 0; diagnostics = await diagnosticsOf(mistakes)) {
      expect(applied.length).toBeLessThan(6);
      const [first] = diagnostics;
      const fixes = await tsserver.request<ts.server.protocol.CodeFixAction[]>("getCodeFixes", {
        file: mistakes,
        startLine: first!.start.line,
        startOffset: first!.start.offset,
        endLine: first!.end.line,
        endOffset: first!.end.offset,
        errorCodes: [first!.code],
      });
      const fix = fixes.find((f) => f.fixName.startsWith("fedtensor-"));
      expect(fix, `a fix for ${first!.text.split("\n")[0]}`).toBeDefined();
      const { textChanges } = fix!.changes[0]!;
      await tsserver.request("updateOpen", { changedFiles: [{ fileName: mistakes, textChanges }] });
      text = [...textChanges].reverse().reduce((t, c) => t.slice(0, indexOf(t, c.start)) + c.newText + t.slice(indexOf(t, c.end)), text);
      applied.push(fix!.description);
    }
    expect(applied).toEqual([
      "Broadcast w to the CLIENTS: broadcast(w)",
      "Broadcast w to the CLIENTS: broadcast(w)",
      "Transpose w: transpose(w)",
      "Reshape bias to [3, 1]: reshape(bias, [3, 1])",
      "Let reshape() infer dim 0: [-1, 3]",
      'Cast n to float32: cast(n, "float32")',
    ]);
    expect(await tsserver.request("syntacticDiagnosticsSync", { file: mistakes })).toEqual([]);
    expect(text).toContain(`import { add, atClients, atServer, f32, i32, map, matmul, mul, program, reshape, broadcast, transpose, cast } from "fedtensor";`);
    expect(text).toContain("matmul(x, transpose(w))");
  });
});
