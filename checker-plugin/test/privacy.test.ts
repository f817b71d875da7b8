/**
 * Privacy through the plugin's language service (docs/language.md "Privacy"): FT109 and FT110
 * explained, private values and programs hovered with `(private)` and their aggregators, and
 * the quick fix that aggregates private data with dpSum instead of reduceSum, whose fixed file
 * must type-check.
 */
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { applyEveryFix, createServices, errorsOf, fixtureProject, hoverAt, hoverAtMarker, linkFedTensor, type AppliedFix, type Services } from "./language-service.js";

const header = `import { atClients, atServer, dpSum, f32, i32, map, mean, program, reduceMean, reduceSum } from "fedtensor";
const inputs = { readings: atClients(f32(["N", 3]), { private: true }), counts: atClients(f32([])), key: atServer(i32([2])) };
`;

/** One program per case; the value after `/*hover*\/` is hovered. */
const cases: { readonly [name: string]: string } = {
  "FT109-reduceSum": `export const p = program(inputs, ({ readings, key }) => reduceSum(map((r) => mean(r, 0), /*hover*/readings)));`,
  "FT109-reduceMean": `export const p = program(inputs, ({ readings }) => reduceMean(/*hover*/readings));`,
  "FT109-output": `export const p = program(inputs, ({ readings, counts }) => ({ total: reduceSum(counts), /*hover*/readings }));`,
  "FT110-clip": `export const p = program(inputs, ({ readings, counts, key }) => dpSum(readings, { clip: /*hover*/counts, noiseMultiplier: 1, key }));`,
};

const fileOf = (name: string): string => join(fixtureProject, `privacy-${name}.ts`);
let services: Services;
let fixesByCase = new Map<string, AppliedFix[]>();

beforeAll(() => {
  linkFedTensor();
  services = createServices(Object.fromEntries(Object.entries(cases).map(([name, body]) => [fileOf(name), header + body])));
  fixesByCase = applyEveryFix(services, Object.keys(cases), fileOf);
});

describe.each(Object.keys(cases))("%s", (name) => {
  it("is explained as a privacy error, hovered, and fixed where a DP form exists", () => {
    const fileName = fileOf(name);
    const diagnostics = services.plugin.getSemanticDiagnostics(fileName);
    expect(diagnostics).toHaveLength(1);
    expect(diagnostics[0]!.messageText).toMatch(new RegExp(`^${name.slice(0, 5)}: `));
    expect(diagnostics[0]!.messageText).toContain("Why this is a privacy error:");
    const fixes = fixesByCase.get(name)!.map((fix) => ({ description: fix.description, fixed: services.text(fix.fileName) }));
    for (const fix of fixesByCase.get(name)!) expect(errorsOf(services, fix.fileName)).toEqual([]);
    expect({ diagnostic: diagnostics[0]!.messageText, hover: hoverAtMarker(services, fileName), fixes }).toMatchSnapshot();
  });
});

it("offers dpSum for reduceSum of private data, and nothing for reduceMean or a private output", () => {
  expect(fixesByCase.get("FT109-reduceSum")!.map((f) => f.description)).toEqual([
    "Aggregate map((r) => mean(r, 0… with differential privacy: dpSum(map((r) => mean(r, 0…, { clip: 1, noiseMultiplier: 1, key }) (set the clip norm and noise multiplier)",
  ]);
  expect(fixesByCase.get("FT109-reduceMean")).toEqual([]);
  expect(fixesByCase.get("FT109-output")).toEqual([]);
});

it("hovers a program with private inputs as its signature and the aggregators it calls, each release with its cost", async () => {
  const fileName = fileOf("clean");
  const text = `${header}export const dp = program(inputs, ({ readings, counts, key }) => ({
  mean: dpSum(map((r) => mean(r, 0), readings), { clip: 1, noiseMultiplier: 1.1, key }),
  clients: reduceSum(counts),
}));
`;
  services.setFile(fileName, text);
  expect(errorsOf(services, fileName)).toEqual([]);
  const signature =
    "(<readings={f32[N,3]}@CLIENTS(private),counts={f32[]}@CLIENTS,key=i32[2]@SERVER> -> <mean=f32[3],clients=f32[]>@SERVER)";
  expect(hoverAt(services, fileName, text.indexOf("const dp") + "const ".length)).toBe(`FedTensor program: \`${signature}\`, aggregated by dpSum (Gaussian, clip 1, noise multiplier 1.1, zCDP rho 0.4132), reduceSum`);
  expect(hoverAt(services, fileName, text.indexOf("r) => mean"))).toBe("FedTensor: `f32[N,3]`");
  expect(hoverAt(services, fileName, text.indexOf("readings),"))).toBe("FedTensor: `{f32[N,3]}@CLIENTS(private)`");
  // The signature read from the types is the one the traced program reports.
  const { atClients, atServer, dpSum, f32, i32, map, mean, program, reduceSum } = await import("../../src/index.js");
  const traced = program(
    { readings: atClients(f32(["N", 3]), { private: true }), counts: atClients(f32([])), key: atServer(i32([2])) },
    ({ readings, counts, key }) => ({ mean: dpSum(map((r) => mean(r, 0), readings), { clip: 1, noiseMultiplier: 1.1, key }), clients: reduceSum(counts) }),
  );
  expect(traced.signature).toBe(signature);
  expect(traced.aggregators).toEqual(["dpSum", "reduceSum"]);
});
