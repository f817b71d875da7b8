import * as tf from "@tensorflow/tfjs";

/**
 * Tensors a run left behind, from tf.memory()'s count taken before it. The count is the
 * process's: with test files sharing a worker (vitest isolate: false), a compiled program that
 * an earlier file dropped is freed by its FinalizationRegistry (src/runtime/run.ts) whenever
 * the garbage collector gets to it, during this run too (seen: -77, and -1,641 in a fresh
 * clone's CI), which is no leak of this run; a leak shows as a count above the one before.
 */
export const tensorsLeftSince = (before: number): number => Math.max(0, tf.memory().numTensors - before);
