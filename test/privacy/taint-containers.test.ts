/**
 * The container matrix (test/privacy/taint-containers.ts): every container a user writes, at
 * every position that releases or returns, private and public, in tsc and when traced. A
 * program that tracing rejects with FT109 and tsc accepts fails here, unless the generator's
 * `unclosable` list says why no type can see it.
 */
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { FedTensorError } from "../../src/errors/error.js";
import * as ft from "../../src/index.js";
import * as lib from "../../src/lib/index.js";
import { codeOf, compileGenerated, projectRoot, traceable, type Diagnostic } from "./generated-module.js";
import { containers, generateContainers, unclosable, type Case } from "./taint-containers.js";

const generatedPath = join(projectRoot, "test/privacy/taint-containers.generated.ts");
const index = "../../src/index.js";
const libIndex = "../../src/lib/index.js";
const { source, cases } = generateContainers(index, libIndex);

let diagnostics: Diagnostic[];
let builders: Record<string, () => unknown>;

beforeAll(() => {
  diagnostics = compileGenerated(generatedPath, source).diagnostics;
  builders = traceable(source, { [index]: ft, [libIndex]: lib });
});

/** The FT codes tsc reports on a case's line. */
const tscCodes = (c: Case): string[] => diagnostics.filter((d) => d.line === c.line).map(codeOf);

/** The FT code a case's program throws while tracing, or null when it traces. */
function traceCode(c: Case): string | null {
  try {
    builders[c.exportName]!();
    return null;
  } catch (error) {
    if (error instanceof FedTensorError) return error.code;
    throw error;
  }
}

describe("the container matrix", () => {
  it("reports nothing outside the cases' lines", () => {
    const lines = new Set(cases.map((c) => c.line));
    expect(diagnostics.filter((d) => !lines.has(d.line))).toEqual([]);
  });

  it.each(cases.map((c) => [c.name, c] as const))("%s", (_name, c) => {
    const got = { tsc: tscCodes(c), trace: traceCode(c) };
    // The soundness rule first, so that its failure is the one reported.
    if (got.trace === "FT109" && !(c.container in unclosable)) {
      expect(got.tsc, "tracing says FT109: tsc must reject it").toHaveLength(1);
      expect(["FT109", "FT115", "FT116"]).toContain(got.tsc[0]);
    }
    expect(got).toEqual(c.verdict);
  });

  it("lists as unclosable only containers of the matrix", () => {
    expect(Object.keys(unclosable).filter((name) => !(name in containers))).toEqual([]);
  });
});
