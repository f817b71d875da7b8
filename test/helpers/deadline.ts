/**
 * Test deadlines scaled to the machine, not fixed wall-clock limits.
 *
 * Why: a test that waits for a round, a child process or a browser waits for an event; its
 * deadline only exists so that a hang fails instead of blocking CI. On a loaded laptop the same
 * work takes several times longer, so every deadline is multiplied by one factor:
 * FEDTENSOR_TEST_TIMEOUT_SCALE when set, else the machine's load per core when the run starts
 * (at least 1, at most 8).
 */
import { availableParallelism, loadavg } from "node:os";

function scaleFromEnvironment(): number {
  const text = process.env.FEDTENSOR_TEST_TIMEOUT_SCALE;
  if (text !== undefined && text !== "") {
    const value = Number(text);
    if (!Number.isFinite(value) || value <= 0) {
      throw new Error(`FEDTENSOR_TEST_TIMEOUT_SCALE must be a positive number, got ${JSON.stringify(text)}`);
    }
    return value;
  }
  const loadPerCore = (loadavg()[0] ?? 0) / Math.max(1, availableParallelism());
  return Math.min(8, Math.max(1, loadPerCore));
}

/** The factor every deadline is multiplied by in this run. */
export const deadlineScale = scaleFromEnvironment();

/** A deadline of `ms` milliseconds on an idle machine, scaled for this one. */
export function deadline(ms: number): number {
  return Math.ceil(ms * deadlineScale);
}
