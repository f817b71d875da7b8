/**
 * tsc and tracing agree (issue 29): over programs generated from the exported API (every
 * operation of src/index.ts, every tensor-valued operand of it at each placement, private
 * included, and with another dtype: test/privacy/agreement.ts), plain tsc and tracing give the
 * same verdict: both accept, or tracing's FT code is among the FT codes tsc reports on that
 * line. A bare TypeScript error (TS2345 and the like, with no FT code) where tracing says an FT
 * code is a disagreement too: the rule must say its code in tsc.
 *
 * tsc may be stricter than tracing only where docs/language.md says why; such cases are listed
 * in `stricterInTsc` with the paragraph, and each listed case must still differ (no stale entry).
 */
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { FedTensorError } from "../../src/errors/error.js";
import { generateAgreement, type AgreementCase } from "./agreement.js";
import * as ft from "../../src/index.js";
import { codesOf, compileGenerated, projectRoot, traceable, type Diagnostic } from "./generated-module.js";
import { taintCases } from "./taint-cases.js";

const generatedPath = join(projectRoot, "test/privacy/agreement.generated.ts");
const { source, cases } = generateAgreement(taintCases, "../../src/index.js");

const named = (c: AgreementCase): string => (c.slot === null ? `${c.op}()` : `${c.op}(${c.slot} ${c.variant})`);

/**
 * Cases where tsc rejects what tracing accepts, by name, with the docs/language.md paragraph
 * that says why. None among the generated programs today: the places tsc is stricter (a
 * private value given to a public helper alias or as a learning rate) are calls of user
 * helpers and of fedtensor/lib, outside src/index.ts (test/fixtures/type-errors/ft109-public-aliases.ts).
 */
const stricterInTsc: Readonly<Record<string, string>> = {};

let diagnostics: Diagnostic[];
let builders: Record<string, () => unknown>;

beforeAll(() => {
  diagnostics = compileGenerated(generatedPath, source).diagnostics;
  builders = traceable(source, { "../../src/index.js": ft });
});

/** tsc's verdict on a case's line: "accept", or the codes its diagnostics report. */
function tscVerdict(c: AgreementCase): string[] {
  return [...new Set(diagnostics.filter((d) => d.line === c.line).flatMap(codesOf))];
}

/** Tracing's verdict: "accept", or the FT code it throws (anything else is reported as it is). */
function traceVerdict(c: AgreementCase): string {
  try {
    builders[c.exportName]!();
    return "accept";
  } catch (error) {
    return error instanceof FedTensorError ? error.code : `not an FT error: ${String(error)}`;
  }
}

const agree = (tsc: readonly string[], trace: string): boolean => (tsc.length === 0 ? trace === "accept" : tsc.includes(trace));

describe("generated programs", () => {
  it("cover every operation at every placement and another dtype", () => {
    expect(cases.length).toBeGreaterThan(700);
    expect(new Set(cases.map((c) => c.variant))).toEqual(new Set([null, "server", "clients", "private", "local", "dtype"]));
  });

  it("have no diagnostics outside the cases' lines", () => {
    const lines = new Set(cases.map((c) => c.line));
    expect(diagnostics.filter((d) => !lines.has(d.line))).toEqual([]);
  });

  it("list only differences that still exist", () => {
    for (const [name, paragraph] of Object.entries(stricterInTsc)) {
      const c = cases.find((k) => named(k) === name);
      expect(c, `${name} (${paragraph}) is no generated case`).toBeDefined();
      expect(agree(tscVerdict(c!), traceVerdict(c!)), `${name} agrees now: drop it from stricterInTsc`).toBe(false);
    }
  });
});

describe("tsc and tracing give the same verdict", () => {
  it.each(cases.map((c) => [named(c), c] as const))("%s", (name, c) => {
    const tsc = tscVerdict(c);
    const trace = traceVerdict(c);
    if (name in stricterInTsc) {
      expect(trace, `${name}: tsc may only be stricter here (${stricterInTsc[name]})`).toBe("accept");
      return;
    }
    if (tsc.length === 0) expect(trace, "tsc accepts it").toBe("accept");
    else expect(tsc, `tracing says ${trace}`).toContain(trace);
  });
});
