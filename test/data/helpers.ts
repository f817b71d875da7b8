/** Shared by the data tests: temporary folders and checks on FedTensor errors. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect } from "vitest";
import { FedTensorError } from "../../src/errors/error.js";
import type { ErrorCode } from "../../src/errors/catalogue.js";

/** A fresh temporary folder, removed when the test file finishes. */
export function temporaryDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "fedtensor-data-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Runs `action`, expecting a FedTensorError with `code` whose message contains every fragment. */
export function expectFtError(action: () => unknown, code: ErrorCode, ...fragments: string[]): FedTensorError {
  let caught: unknown;
  try {
    action();
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(FedTensorError);
  const error = caught as FedTensorError;
  expect(error.code).toBe(code);
  for (const fragment of fragments) expect(error.message).toContain(fragment);
  return error;
}

/** Total variation distance between two histograms, each normalised to sum 1. */
export function totalVariation(a: ArrayLike<number>, b: ArrayLike<number>): number {
  const sum = (h: ArrayLike<number>) => Array.from(h).reduce((s, v) => s + v, 0);
  const totalA = sum(a);
  const totalB = sum(b);
  let distance = 0;
  for (let i = 0; i < a.length; i++) distance += Math.abs(a[i]! / totalA - b[i]! / totalB);
  return distance / 2;
}
