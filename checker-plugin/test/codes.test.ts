/**
 * Every FT code of SPEC sections 3-4 through the plugin's language service: the explained
 * diagnostic, the hover at the marked value, and each quick fix with the source it produces.
 * Each fix must leave its file free of errors.
 */
import { join } from "node:path";
import ts from "typescript";
import { beforeAll, describe, expect, it } from "vitest";
import { applyEveryFix, createServices, errorsOf, fixtureProject, hoverAtMarker, linkFedTensor, type AppliedFix, type Services } from "./language-service.js";

const header = `import { add, atClients, atServer, broadcast, concat, f32, i32, map, matmul, program, reduceMean, reshape, sum } from "fedtensor";\n`;

/** One program per code; the value after `/*hover*\/` is hovered. */
const cases: { readonly [code: string]: string } = {
  FT101: `export const p = program({ x: atClients(f32([10])) }, ({ x }) => broadcast(/*hover*/x));`,
  FT102: `export const p = program({ w: atServer(f32([10])), x: atClients(f32([10])) }, ({ w, x }) =>
  map((wm, xm) => add(wm, xm), x, /*hover*/w),
);`,
  FT103: `export const p = program({ w: atServer(f32([10])) }, ({ w }) => reduceMean(/*hover*/w));`,
  FT104: `export const p = program({ w: atServer(f32([10])), x: atClients(f32([10])) }, ({ w, x }) => add(/*hover*/x, w));`,
  FT105: `export const p = program({ x: atClients(f32([10])) }, ({ x }) => map((m) => reduceMean(/*hover*/m), x));`,
  FT106: `export const p = program({ x: atServer(atClients(f32([10]))) }, ({ x }) => /*hover*/x);`,
  FT201: `export const p = program({ a: f32([3, 4]), b: f32([3]) }, ({ a, b }) => add(a, /*hover*/b));`,
  FT202: `export const p = program({ a: f32(["B", 784]), w: f32([10, 784]) }, ({ a, w }) => matmul(a, /*hover*/w));`,
  FT203: `export const p = program({ a: f32([3, 4]) }, ({ a }) => reshape(/*hover*/a, [5, 3]));`,
  FT204: `export const p = program({ a: f32([3, 4]) }, ({ a }) => sum(/*hover*/a, 2));`,
  FT205: `export const p = program({ a: f32([3]), b: i32([3]) }, ({ a, b }) => add(a, /*hover*/b));`,
  FT206: `export const p = program({ a: f32([3, 4]), b: f32([3, 5]) }, ({ a, b }) => concat([a, /*hover*/b], 0));`,
};

const fileOf = (name: string): string => join(fixtureProject, `${name}.ts`);

let services: Services;
let fixesByCode = new Map<string, AppliedFix[]>();

/**
 * The fixes of every case are applied to files of their own, all added at once, so that the
 * checker runs over one program for the cases and one for the fixed files.
 */
beforeAll(() => {
  linkFedTensor();
  services = createServices(Object.fromEntries(Object.entries(cases).map(([code, body]) => [fileOf(code), header + body])));
  fixesByCode = applyEveryFix(services, Object.keys(cases), fileOf);
});

describe.each(Object.keys(cases))("%s", (code) => {
  it("is explained, hovered and fixed where the fix is mechanical", () => {
    const fileName = fileOf(code);
    const diagnostics = services.plugin.getSemanticDiagnostics(fileName);
    expect(diagnostics).toHaveLength(1);
    expect(diagnostics[0]!.messageText).toMatch(new RegExp(`^${code}: `));
    expect(diagnostics[0]!.code).toBe(services.plain.getSemanticDiagnostics(fileName)[0]!.code);
    const fixes = fixesByCode.get(code)!.map((fix) => ({ description: fix.description, fixed: services.text(fix.fileName) }));
    for (const fix of fixesByCode.get(code)!) expect(errorsOf(services, fix.fileName)).toEqual([]);
    expect({ diagnostic: diagnostics[0]!.messageText, hover: hoverAtMarker(services, fileName), fixes }).toMatchSnapshot();
  });
});

describe("hover", () => {
  it("shows trees as records under one placement and programs as their signature", async () => {
    const fileName = join(fixtureProject, "federated-averaging.ts");
    const text = ts.sys.readFile(fileName)!;
    services.setFile(fileName, text);
    /** The hover documentation at `word`, found right after `context`. */
    const hoverOn = (context: string, word: string): string | undefined => {
      const position = text.indexOf(context + word) + context.length;
      return services.plugin.getQuickInfoAtPosition(fileName, position)?.documentation?.[0]?.text;
    };
    // The signature read from the types is the one the traced program reports at run time.
    const { round } = (await import(fileName)) as { round: { signature: string } };
    expect(round.signature).toBe("(<params=<w=f32[784,10],b=f32[10]>@SERVER,x={f32[B,784]}@CLIENTS,y={f32[B,10]}@CLIENTS> -> <w=f32[784,10],b=f32[10]>@SERVER)");
    expect(hoverOn("const ", "round")).toBe(`FedTensor program: \`${round.signature}\`, aggregated by reduceMean`);
    expect(hoverOn("({ ", "params")).toBe("FedTensor: `<w=f32[784,10],b=f32[10]>@SERVER`");
    expect(hoverOn("const ", "local")).toBe("FedTensor: `<w=f32[784,10],b=f32[10]>@CLIENTS`");
    expect(hoverOn("const ", "logits")).toBe("FedTensor: `f32[B,10]`");
    expect(hoverOn("const ", "updates")).toBe("FedTensor: `{<w=f32[784,10],b=f32[10]>}@CLIENTS`");
    expect(hoverOn("=> ", "sub")).toBeUndefined();
  });
});
