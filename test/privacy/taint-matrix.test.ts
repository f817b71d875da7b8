/**
 * The taint matrix (issue 19, "types and tracing sound by construction"): for every operation
 * that src/index.ts exports and every one of its tensor-valued operands (options' tensor
 * fields, values a function argument captures and a returned function's arguments included),
 * a program that makes that operand private and returns the operation's result must fail with
 * FT109 (or the code its entry in test/privacy/taint-cases.ts names), both in tsc and when
 * traced; the same program with every operand public must pass both.
 *
 * The list of operations and their operands is not written here: it is read from src/index.ts
 * with the compiler API, so an export without an entry in the table, or an operand the entry
 * does not cover, fails the test. All cases are one generated module, checked by one
 * ts.Program against the project's sources, and traced by the runtime.
 */
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import * as ft from "../../src/index.js";
import { taintCases } from "./taint-cases.js";
import { exportedOperands, generate, operandOf, type Case } from "./taint-matrix.js";
import { ftFailure } from "./failure.js";
import { codeOf, compileGenerated, projectRoot, traceable, type Diagnostic } from "./generated-module.js";

const indexPath = join(projectRoot, "src/index.ts");
const generatedPath = join(projectRoot, "test/privacy/taint-matrix.generated.ts");
const { source, cases } = generate(taintCases, "../../src/index.js");

let operands: Map<string, string[] | null>;
let diagnostics: Diagnostic[];
let builders: Record<string, () => unknown>;

beforeAll(() => {
  const compiled = compileGenerated(generatedPath, source, [indexPath]);
  operands = exportedOperands(compiled.program, indexPath);
  diagnostics = compiled.diagnostics;
  builders = traceable(source, { "../../src/index.js": ft });
});

describe("the table covers every export of src/index.ts", () => {
  it("has an entry for every exported value, and none for a value not exported", () => {
    const exported = [...operands.keys()];
    expect(exported.length).toBeGreaterThan(100);
    expect(exported.filter((name) => !(name in taintCases)), "exports without an entry in test/privacy/taint-cases.ts").toEqual([]);
    expect(Object.keys(taintCases).filter((name) => !operands.has(name)), "entries for no export").toEqual([]);
  });

  it("gives every operation one slot per tensor-valued operand, no more", () => {
    for (const [name, entry] of Object.entries(taintCases)) {
      if ("notAnOp" in entry) continue;
      const wanted = (operands.get(name) ?? []).filter((o) => !(o in (entry.notOperands ?? {})));
      const covered = [...new Set(Object.keys(entry.slots).map(operandOf))];
      expect(covered.sort(), name).toEqual([...new Set(wanted)].sort());
    }
  });

  it("reads operands from the signatures, options' tensor fields included", () => {
    expect(operands.get("layerNorm")).toEqual(["x", "gamma", "beta"]);
    expect(operands.get("dpSum")).toEqual(["x", "options.clip", "options.noiseMultiplier", "options.key"]);
    expect(operands.get("grad")).toEqual(["f", "args"]);
    expect(operands.get("f32")).toEqual([]);
  });
});

const named = (c: Case) => `${c.op}(${c.slot === null ? "all public" : `${c.slot} private`})`;

describe("in tsc", () => {
  it("reports nothing outside the cases' lines", () => {
    const lines = new Set(cases.map((c) => c.line));
    expect(diagnostics.filter((d) => !lines.has(d.line))).toEqual([]);
  });

  it.each(cases.map((c) => [named(c), c] as const))("%s", (_name, c) => {
    const here = diagnostics.filter((d) => d.line === c.line);
    if (c.expect === null || c.expect.tsc === "released") expect(here).toEqual([]);
    else expect(here.map(codeOf)).toEqual([c.expect.tsc]);
  });
});

describe("when traced", () => {
  it.each(cases.map((c) => [named(c), c] as const))("%s", (_name, c) => {
    const build = builders[c.exportName]!;
    if (c.expect === null || c.expect.trace === "released") {
      expect(() => build()).not.toThrow();
      return;
    }
    expect(ftFailure(build).code).toBe(c.expect.trace);
  });
});
