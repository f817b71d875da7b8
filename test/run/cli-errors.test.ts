/**
 * What `fedtensor` prints when a command fails: an expected failure is one FT error with its
 * explanation and no stack trace; an unexpected one says it is a bug and where to report it,
 * with the stack.
 */
import { readFileSync } from "node:fs";
import { afterEach, describe, expect, test, vi } from "vitest";
import { internalErrorStatus, reportFailure } from "../../src/cli/main.js";
import { stackLine } from "./cli.js";

const command = { name: "run", usage: "usage: fedtensor run" };

function printed(thrown: unknown): { status: number; text: string } {
  const lines: string[] = [];
  vi.spyOn(console, "error").mockImplementation((line: string) => void lines.push(line));
  const status = reportFailure(command, ["run", "--out", "x"], thrown);
  return { status, text: lines.join("\n") };
}

const caught = (work: () => unknown): unknown => {
  try {
    work();
  } catch (error) {
    return error;
  }
  throw new Error("expected a failure");
};

afterEach(() => vi.restoreAllMocks());

describe("reportFailure", () => {
  test("a file-system error no caller named is FT307, exit 1, no stack", () => {
    const { status, text } = printed(caught(() => readFileSync("/nonexistent/fedtensor/metrics.jsonl")));
    expect(status).toBe(1);
    expect(text).toContain("fedtensor run: FT307: /nonexistent/fedtensor/metrics.jsonl: cannot complete the command: no such file or folder (ENOENT)");
    expect(text).not.toMatch(stackLine);
  });

  test("an unexpected error says it is a bug, where to report it, and gives the stack", () => {
    const bug = caught(() => (JSON.parse("null") as { shape: number[] }).shape.length);
    const { status, text } = printed(bug);
    expect(status).toBe(internalErrorStatus);
    expect(text).toContain("fedtensor run: internal error. This is a bug in FedTensor, not a mistake in your command or data.");
    expect(text).toContain('README.md, "Reporting a bug"');
    expect(text).toContain("command: fedtensor run --out x");
    expect(text).toContain("TypeError: Cannot read properties of null");
    expect(text).toMatch(stackLine);
  });
});
