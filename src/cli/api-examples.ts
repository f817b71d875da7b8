/**
 * Examples for the API reference taken from code that is already checked: docs/guide.md's ```ts
 * blocks (type-checked and run by test/docs-guide.test.ts) and examples/*.ts (type-checked with
 * the package, several run by test/examples/). An export whose doc comment has no `@example`
 * is shown with its first use there, so its example cannot drift from the library.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** An example: its code, and where it was taken from ("" for a doc comment's own `@example`). */
export interface CodeExample {
  code: string;
  from: string;
}

interface CodeLine {
  text: string;
  /** The line in its file, 1-based. */
  line: number;
}

export interface CodeSource {
  file: string;
  lines: CodeLine[];
}

/** The runnable ```ts blocks of a markdown file (not those marked `error FTnnn`), with their lines. */
function markdownCode(file: string, markdown: string): CodeSource {
  const lines = markdown.split("\n");
  const code: CodeLine[] = [];
  let inBlock = false;
  lines.forEach((text, i) => {
    if (!inBlock && text === "```ts") inBlock = true;
    else if (inBlock && text === "```") inBlock = false;
    else if (inBlock) code.push({ text, line: i + 1 });
  });
  return { file, lines: code };
}

/** The code of docs/guide.md and examples/*.ts (examples/mistakes.ts shows errors: left out). */
export function exampleSources(root: string): CodeSource[] {
  const guide = markdownCode("docs/guide.md", readFileSync(join(root, "docs/guide.md"), "utf8"));
  const examples = readdirSync(join(root, "examples"))
    .filter((name) => name.endsWith(".ts") && name !== "mistakes.ts")
    .sort()
    .map((name) => ({
      file: `examples/${name}`,
      lines: readFileSync(join(root, "examples", name), "utf8")
        .split("\n")
        .map((text, i) => ({ text, line: i + 1 })),
    }));
  return [guide, ...examples];
}

const isComment = (text: string): boolean => /^\s*(\/\/|\/\*|\*)/.test(text);
const depthChange = (text: string): number => (text.match(/[([{]/g)?.length ?? 0) - (text.match(/[)\]}]/g)?.length ?? 0);
/** The most lines an example taken from other code may have: a use, not a whole program. */
const MAX_LINES = 16;

/** Which lines begin a statement: the code line before each ends one, or opens a block. */
function statementStarts(lines: readonly CodeLine[]): boolean[] {
  let previous = "";
  return lines.map(({ text }) => {
    const starts = previous === "" || /[;{}]\s*$/.test(previous);
    if (text.trim() !== "" && !isComment(text)) previous = text;
    return starts;
  });
}

/** The lines of a source that are import or re-export statements (they name, not use, an export). */
function importLines(lines: readonly CodeLine[]): Set<number> {
  const inImport = new Set<number>();
  let open = false;
  for (const { text, line } of lines) {
    if (/^\s*(import|export\s*(type\s*)?\{[^}]*$|export\s*\*)/.test(text) || open) {
      inImport.add(line);
      open = !/(\sfrom\s|;\s*$)/.test(text);
    }
  }
  return inImport;
}

/** The lines from the first until its brackets close, dedented; undefined if they do not close. */
function statementFrom(lines: readonly string[]): string | undefined {
  let depth = 0;
  for (const [i, text] of lines.entries()) {
    depth += depthChange(text);
    if (depth > 0) continue;
    const taken = lines.slice(0, i + 1);
    const indent = Math.min(...taken.filter((line) => line.trim() !== "").map((line) => /^\s*/.exec(line)![0].length));
    return taken.map((line) => line.slice(indent)).join("\n");
  }
  return undefined;
}

/**
 * The first statement in the sources that uses a name (not in an import, not in a comment), from
 * the line that begins it until its brackets close, if that is at most MAX_LINES lines.
 */
export function firstUse(sources: readonly CodeSource[], name: string): CodeExample | undefined {
  const word = new RegExp(`(^|[^\\w$.])${name.replace(/\$/g, "\\$")}(?![\\w$])`);
  for (const { file, lines } of sources) {
    const imports = importLines(lines);
    const starts = statementStarts(lines);
    for (const [at, { text, line }] of lines.entries()) {
      if (!word.test(text) || imports.has(line) || isComment(text)) continue;
      // The whole statement the use is in, from the line that begins it.
      let start = at;
      while (start > 0 && at - start < MAX_LINES && !starts[start]) start--;
      const taken = statementFrom(lines.slice(start, start + MAX_LINES).map((code) => code.text));
      if (taken !== undefined && taken.split("\n").length > at - start) return { code: taken, from: `${file} line ${lines[start]!.line}` };
    }
  }
  return undefined;
}
