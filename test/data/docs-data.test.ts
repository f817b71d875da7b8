/**
 * docs/data.md's code blocks run as written (with "fedtensor" and "fedtensor/lib" resolved to
 * this checkout's sources), and what its comments say about the results holds.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect, test } from "vitest";
import { temporaryDir } from "./helpers.js";

const root = join(import.meta.dirname, "../..");

test("docs/data.md's examples run, and the cohort is what the comment says", async () => {
  const markdown = readFileSync(join(root, "docs/data.md"), "utf8");
  const blocks = [...markdown.matchAll(/```ts\n([\s\S]*?)```/g)].map(([, code]) => code!);
  expect(blocks.length).toBeGreaterThanOrEqual(2);
  const source = blocks
    .join("\n")
    .replaceAll('from "fedtensor/lib"', `from ${JSON.stringify(join(root, "src/lib/index.ts"))}`)
    .replaceAll('from "fedtensor"', `from ${JSON.stringify(join(root, "src/index.ts"))}`);
  const path = join(temporaryDir(), "data-example.ts");
  writeFileSync(path, `${source}\nexport { count, mask, out, x };\n`);
  const example = (await import(/* @vite-ignore */ path)) as {
    x: { shape: number[] };
    mask: { shape: number[] };
    count: { data: Float32Array };
    out: { params: Record<string, { shape: number[]; dispose(): void }>; loss: { dispose(): void } };
  };
  expect(example.x.shape).toEqual([2, 2, 2, 2]);
  expect(example.mask.shape).toEqual([2, 2, 2]);
  expect(Array.from(example.count.data)).toEqual([3, 1]);
  expect(example.out.params.w!.shape).toEqual([2, 2]);
  for (const tensor of [...Object.values(example.out.params), example.out.loss]) tensor.dispose();
});
