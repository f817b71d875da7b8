/**
 * FedTensor rules that plain tsc used to report as bare TypeScript errors (issue 29), through
 * the plugin's language service: each diagnostic is explained from the catalogue (title,
 * explanation, fix of its code), and the quick fix is offered where one is mechanical, its
 * fixed file free of errors.
 */
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { catalogue, type ErrorCode } from "../../src/errors/catalogue.js";
import { applyEveryFix, createServices, errorsOf, fixtureProject, linkFedTensor, type AppliedFix, type Services } from "./language-service.js";

const header = `import { add, atClients, atServer, f32, i32, map, mul, program, randomKey, reduceSum, scan, secureSum, sum, type AtClients, type Member } from "fedtensor";
import { sgd } from "fedtensor/lib";
const inputs = { w: atServer(f32([3])), readings: atClients(f32([3]), { private: true }), keys: atClients(i32([2]), { private: true }), xs: f32([4, 3]), key: atServer(i32([2])) };
function doubled(x: AtClients<[3]>): AtClients<[3]> {
  return mul(x, 2);
}
function scaled(x: Member<[3]>): Member<[3]> {
  return mul(x, 2);
}
`;

/** One program per rule, with its code, and the descriptions of the fixes it must offer. */
const cases: { readonly [name: string]: { readonly code: ErrorCode; readonly body: string; readonly fixes: readonly string[] } } = {
  "private-at-clients": {
    code: "FT109",
    body: `export const p = program(inputs, ({ readings, key }) => secureSum(doubled(readings), { bits: 20, key, range: [-1, 1], scale: 100 }));`,
    fixes: ["Type doubled's values with PrivateAtClients: it takes private data"],
  },
  "private-member": {
    code: "FT109",
    body: `export const p = program(inputs, ({ readings, key }) => secureSum(map((r) => scaled(r), readings), { bits: 20, key, range: [-1, 1], scale: 100 }));`,
    fixes: ["Type scaled's values with PrivateMember: it takes private data"],
  },
  "private-rate": {
    code: "FT109",
    body: `export const p = program(inputs, ({ readings, key }) => secureSum(map((r) => sgd(sum(r)).update(r, sgd(1).init(r))[0], readings), { bits: 20, key, range: [-1, 1], scale: 100 }));`,
    fixes: [],
  },
  "constant-key": {
    code: "FT110",
    body: `export const p = program(inputs, ({ readings }) => secureSum(readings, { bits: 20, key: randomKey(0), range: [-1, 1], scale: 100 }));`,
    fixes: [],
  },
  "clients-key": {
    code: "FT312",
    body: `export const p = program(inputs, ({ readings, keys }) => secureSum(readings, { bits: 20, key: keys, range: [-1, 1], scale: 100 }));`,
    fixes: [],
  },
  "number-carry": {
    code: "FT302",
    body: `export const p = program(inputs, ({ w, xs }) => add(w, scan(0, xs, (c, r) => [add(c, sum(r)), r] as const)[0]));`,
    fixes: ["Start the carry from a scalar tensor: zeros([])"],
  },
};

const fileOf = (name: string): string => join(fixtureProject, `rules-${name}.ts`);
let services: Services;
let fixesByCase = new Map<string, AppliedFix[]>();

beforeAll(() => {
  linkFedTensor();
  services = createServices(Object.fromEntries(Object.entries(cases).map(([name, { body }]) => [fileOf(name), header + body])));
  fixesByCase = applyEveryFix(services, Object.keys(cases), fileOf);
});

describe.each(Object.keys(cases))("%s", (name) => {
  const { code, fixes } = cases[name]!;

  it("is one diagnostic that plain tsc already words with its FT code", () => {
    const plain = services.plain.getSemanticDiagnostics(fileOf(name));
    expect(plain).toHaveLength(1);
    expect(JSON.stringify(plain[0]!.messageText)).toContain(`"${code}: `);
  });

  it("is explained from the catalogue: title, explanation and fix", () => {
    const diagnostics = services.plugin.getSemanticDiagnostics(fileOf(name));
    expect(diagnostics).toHaveLength(1);
    const text = diagnostics[0]!.messageText as string;
    expect(text).toMatch(new RegExp(`^${code}: `));
    expect(text).toContain(`What went wrong: ${catalogue[code].title}.`);
    expect(text).toContain(catalogue[code].explanation);
    expect(text).toContain(`How to fix it: ${catalogue[code].fix}`);
  });

  it("offers the mechanical fix where there is one, and the fixed file type-checks", () => {
    const applied = fixesByCase.get(name)!;
    expect(applied.map((f) => f.description)).toEqual(fixes);
    for (const fix of applied) expect(errorsOf(services, fix.fileName)).toEqual([]);
  });
});

it("rewrites the helper's signature and imports the private alias", () => {
  const [fix] = fixesByCase.get("private-at-clients")!;
  const fixed = services.text(fix!.fileName);
  expect(fixed).toContain("function doubled(x: PrivateAtClients<[3]>): PrivateAtClients<[3]>");
  expect(fixed).toContain("type AtClients, type PrivateAtClients, type Member");
});
