/**
 * docs/api.md, the generated API reference, is held to the sources: every export of `fedtensor`
 * and `fedtensor/lib` has a doc comment and an example, every operation of the language states
 * its placement rule, and the checked-in file is what `npm run docs:api` renders now. One
 * program over the sources serves every test here.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, test } from "vitest";
import { firstUse } from "../src/cli/api-examples.js";
import { collectApiReference, undocumented } from "../src/cli/api-reference.js";
import { renderApiReference } from "../src/cli/api-render.js";

const root = join(import.meta.dirname, "..");
const modules = collectApiReference(root);

test("every export of fedtensor and fedtensor/lib has a doc comment and an example", () => {
  const [main, lib] = modules;
  // Both entry points are read: the language's operations and the library's rounds.
  expect(main!.exports.map((item) => item.name)).toContain("broadcast");
  expect(lib!.exports.map((item) => item.name)).toContain("fedAvgProgram");
  const missing = undocumented(modules);
  expect(missing.noComment, "exports without a doc comment (write one above the export)").toEqual([]);
  expect(missing.noExample, "exports without an @example, and no use in docs/guide.md or examples/").toEqual([]);
});

test("every operation of the language states its placement rule", () => {
  const operations = modules[0]!.exports.filter((item) => item.file.startsWith("src/front/") && (item.kind === "function" || item.kind === "constant") && item.alsoIn === undefined);
  expect(operations.length).toBeGreaterThan(100);
  expect(
    operations.filter((item) => item.placement === undefined).map((item) => `${item.name} (${item.file}:${item.line})`),
    "operations without a @placement tag",
  ).toEqual([]);
});

test("docs/api.md is what `npm run docs:api` renders from the sources now", () => {
  const rendered = renderApiReference(modules);
  const checkedIn = readFileSync(join(root, "docs/api.md"), "utf8");
  // A mismatch names the first line that differs, not the whole 10,000-line file.
  const renderedLines = rendered.split("\n");
  const checkedInLines = checkedIn.split("\n");
  const lines = Math.max(renderedLines.length, checkedInLines.length);
  const first = Array.from({ length: lines }, (_, i) => i).find((i) => renderedLines[i] !== checkedInLines[i]);
  expect(first === undefined ? "up to date" : `docs/api.md line ${first + 1} is stale: run \`npm run docs:api\``).toBe("up to date");
  // Each export is shown with its signature, and a placement rule where it has one.
  expect(checkedIn).toContain("#### `broadcast`");
  expect(checkedIn).toMatch(/#### `broadcast`[\s\S]*?function broadcast<[\s\S]*?\*\*Placement:\*\* `T@SERVER`/);
});

test("an example taken from other code is a whole statement, not an import or a fragment", () => {
  const lines = ['import { broadcast } from "fedtensor";', "", "const y = map(", "  (m) => m,", "  broadcast(w),", ");", "broadcast(v);"].map((text, i) => ({ text, line: i + 1 }));
  expect(firstUse([{ file: "demo.ts", lines }], "broadcast")).toEqual({ code: "const y = map(\n  (m) => m,\n  broadcast(w),\n);", from: "demo.ts line 3" });
  expect(firstUse([{ file: "demo.ts", lines }], "missing")).toBeUndefined();
});
