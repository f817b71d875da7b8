/**
 * helper() while tracing (docs/language.md "Writing helpers"): a helper's call traces exactly
 * its body, its arguments' placements are joined first with the texts tsc gives, and the
 * taint of private data flows through it as through the operations it calls.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import ts from "typescript";
import { describe, expect, test } from "vitest";
import {
  atClients,
  atServer,
  broadcast,
  f32,
  FedTensorError,
  helper,
  i32,
  map,
  mean,
  program,
  reduceMean,
  sparseSoftmaxCrossEntropy,
  type Float,
  type Int,
} from "../../src/index.js";
import { deadline } from "../helpers/deadline.js";

const loss = helper("loss", (logits: Float<["B", 3]>, labels: Int<["B"]>) => mean(sparseSoftmaxCrossEntropy(logits, labels)));
const inputs = { logits: atClients(f32(["B", 3])), labels: atClients(i32(["B"])), serverLogits: atServer(f32(["B", 3])) };

/** The FT error a call throws, or undefined. */
function thrownBy(f: () => unknown): FedTensorError | undefined {
  try {
    f();
  } catch (error) {
    if (error instanceof FedTensorError) return error;
    throw error;
  }
  return undefined;
}

describe("helper()", () => {
  test("a call traces the body's operations, nothing more", () => {
    const viaHelper = program(inputs, ({ logits, labels }) => reduceMean(loss(logits, labels)));
    const inline = program(inputs, ({ logits, labels }) => reduceMean(mean(sparseSoftmaxCrossEntropy(logits, labels))));
    expect(viaHelper.ir.graph).toEqual(inline.ir.graph);
    expect(viaHelper.signature).toBe(inline.signature);
  });

  test("the result lives where the arguments do: at the CLIENTS, at the SERVER, on members", () => {
    const atTheServer = program({ logits: atServer(f32(["B", 3])), labels: atServer(i32(["B"])) }, ({ logits, labels }) => loss(logits, labels));
    expect(atTheServer.signature).toMatch(/-> f32\[\]@SERVER\)$/);
    const atTheClients = program(inputs, ({ logits, labels }) => loss(logits, labels));
    expect(atTheClients.signature).toMatch(/-> \{f32\[\]\}@CLIENTS\)$/);
    const perClient = program(inputs, ({ logits, labels }) => map((l, y) => loss(l, y), logits, labels));
    expect(perClient.signature).toMatch(/-> \{f32\[\]\}@CLIENTS\)$/);
  });

  test("SERVER and CLIENTS arguments: FT104 naming the helper, as tsc says", () => {
    const error = thrownBy(() => program(inputs, ({ serverLogits, labels }) => loss(serverLogits, labels as never)));
    expect(error?.message).toBe("FT104: loss() mixes f32[B,3]@SERVER with {i32[B]}@CLIENTS: broadcast the SERVER value or reduce the CLIENTS one");
  });

  test("a SERVER value read inside map()'s function: FT102, as tsc says", () => {
    const error = thrownBy(() => program(inputs, ({ serverLogits, labels }) => map((y) => loss(serverLogits as never, y), labels)));
    expect(error?.code).toBe("FT102");
    expect(error?.message).toContain("got f32[B,3]@SERVER");
  });

  test("private in, private out: reducing a helper's result of private data is FT109", () => {
    const privateInputs = { logits: atClients(f32(["B", 3])), labels: atClients(i32(["B"]), { private: true }) };
    const error = thrownBy(() => program(privateInputs, ({ logits, labels }) => reduceMean(loss(logits, labels) as never)));
    expect(error?.code).toBe("FT109");
    // Broadcast model, private data: the members are private too.
    const perClient = thrownBy(() =>
      program({ ...privateInputs, w: atServer(f32(["B", 3])) }, ({ w, labels }) => reduceMean(map((wm, y) => loss(wm, y), broadcast(w), labels) as never)),
    );
    expect(perClient?.code).toBe("FT109");
  });

  test("bad helper() arguments from JavaScript are FT302", () => {
    const untyped = helper as unknown as (name: unknown, body: unknown) => unknown;
    expect(thrownBy(() => untyped("", () => 0))?.code).toBe("FT302");
    expect(thrownBy(() => untyped("loss", 3))?.code).toBe("FT302");
  });
});

describe('docs/language.md "Writing helpers"', () => {
  const root = join(import.meta.dirname, "../..");

  /** The section's TypeScript blocks as one module, importing the library from this checkout. */
  function sectionCode(): string {
    const doc = readFileSync(join(root, "docs/language.md"), "utf8");
    const section = doc.slice(doc.indexOf("## Writing helpers"), doc.indexOf("\n## ", doc.indexOf("## Writing helpers") + 1));
    const blocks = [...section.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!);
    expect(blocks.length).toBeGreaterThanOrEqual(2);
    return `${blocks.join("\n").replaceAll('from "fedtensor"', `from "${join(root, "src/index.js")}"`)}\nexport { federatedLoss, clientScore };\n`;
  }

  test("its code compiles under the project's strict options", () => {
    const dir = mkdtempSync(join(tmpdir(), "ft-doc-helpers-"));
    try {
      // .mts: an ES module wherever it lies, as the docs' code is in a user's "type": "module" package.
      const file = join(dir, "writing-helpers.mts");
      writeFileSync(file, sectionCode());
      const config = ts.getParsedCommandLineOfConfigFile(join(root, "tsconfig.json"), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined });
      const program = ts.createProgram([file], { ...config!.options, noEmit: true, rootDir: undefined });
      const diagnostics = ts.getPreEmitDiagnostics(program, program.getSourceFile(file)).map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"));
      expect(diagnostics).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, deadline(60_000));
});
