/**
 * Where in the user's code an FT error comes from, as tsc shows it: the file, line and column
 * of the first stack frame outside FedTensor, and that line of source with a caret under the
 * column. An FT error thrown while program(...) traces is a mistake in the user's program, so
 * the frames inside FedTensor (dist/src or src, types) and in other packages (node_modules,
 * node: internals) say nothing to its reader; the user's frame says where to look.
 */
import { readFileSync } from "node:fs";
import { basename, dirname, join, sep } from "node:path";
import { fileURLToPath } from "node:url";
import type { FedTensorError, SourceLocation } from "./error.js";

/**
 * FedTensor's own folders: src and types, built into dist/src and dist/types. Both, whichever
 * runs: with source maps on (node --enable-source-maps), frames of dist/ are reported in src/.
 */
const buildRoot = dirname(dirname(dirname(fileURLToPath(import.meta.url))));
const packageRoot = basename(buildRoot) === "dist" ? dirname(buildRoot) : buildRoot;
const libraryDirs = ["src", "types", join("dist", "src"), join("dist", "types")].map((dir) => `${join(packageRoot, dir)}${sep}`);

/** Whether a frame's file is user code: not FedTensor's own, not another package's, not Node's. */
export function isUserFile(file: string, dirs: readonly string[] = libraryDirs): boolean {
  if (file.startsWith("node:") || file.includes(`${sep}node_modules${sep}`) || file.includes("/node_modules/")) return false;
  return !dirs.some((dir) => file.startsWith(dir));
}

// "    at fn (file:///a/b.mjs:4:13)" or "    at file:///a/b.mjs:4:13" or "    at async fn (/a/b.js:4:13)".
const framePattern = /^\s*at (?:.*?\()?(.+?):(\d+):(\d+)\)?$/;

/** The first frame of `stack` in user code, or undefined when every frame is FedTensor's, a package's or Node's. */
export function firstUserFrame(stack: string, dirs?: readonly string[]): { file: string; line: number; column: number; frame: string } | undefined {
  for (const frame of stack.split("\n")) {
    const match = framePattern.exec(frame);
    if (match === null) continue;
    const [, where, line, column] = match as unknown as [string, string, string, string];
    let file = where;
    if (where.startsWith("file://")) {
      try {
        file = fileURLToPath(where);
      } catch {
        continue;
      }
    }
    if (isUserFile(file, dirs)) return { file, line: Number(line), column: Number(column), frame: frame.trim() };
  }
  return undefined;
}

/** The line of `source` numbered `line` (1-based) with a caret under `column`, framed as tsc and Babel do. */
export function codeFrame(source: string, line: number, column: number): string | undefined {
  const text = source.split(/\r?\n/)[line - 1];
  if (text === undefined) return undefined;
  const gutter = String(line);
  // Tabs stay tabs, so the caret lines up however wide the reader's tabs are.
  const indent = text.slice(0, Math.max(0, column - 1)).replace(/[^\t]/g, " ");
  return [`  ${gutter} | ${text}`, `  ${" ".repeat(gutter.length)} | ${indent}^`].join("\n");
}

/**
 * Points `error` at the user's code: sets its `location`, and starts its stack with the message,
 * the location and the code frame, followed by the user's frames only. Left as it is when no
 * frame is the user's (a program the library builds for the CLI) or when it already points.
 *
 * `boundary` is the library function the user called (program): the stack V8 keeps for the
 * error is captured again from the user's call of it, because Node prints the top frame of that
 * stack with its source line above an uncaught error, and that line should be the user's too.
 */
export function pointAtUserCode(error: FedTensorError, boundary: (...args: never[]) => unknown): FedTensorError {
  if (error.location !== undefined) return error;
  const stack = error.stack ?? "";
  const frame = firstUserFrame(stack);
  if (frame === undefined) return error;
  Error.captureStackTrace(error, boundary);
  let source: string | undefined;
  try {
    source = readFileSync(frame.file, "utf8");
  } catch {
    source = undefined;
  }
  const at = `at ${frame.file}:${frame.line}:${frame.column}`;
  const shown = source === undefined ? undefined : codeFrame(source, frame.line, frame.column);
  const location: SourceLocation = { file: frame.file, line: frame.line, column: frame.column, text: shown === undefined ? at : `${at}\n${shown}` };
  const userFrames = stack.split("\n").filter((line) => firstUserFrame(line) !== undefined);
  Object.defineProperty(error, "location", { value: location, enumerable: false });
  Object.defineProperty(error, "stack", {
    value: [`${error.name}: ${error.message}`, indent(location.text), ...userFrames].join("\n"),
    enumerable: false,
    writable: true,
    configurable: true,
  });
  return error;
}

const indent = (text: string) => text.split("\n").map((line) => `  ${line}`).join("\n");
