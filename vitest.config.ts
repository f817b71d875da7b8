import { defineConfig } from "vitest/config";
import { deadline } from "./test/helpers/deadline.js";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts", "checker-plugin/test/**/*.test.ts"],
    // Deadlines scale with the machine's load (test/helpers/deadline.ts): a busy laptop gets green.
    testTimeout: deadline(60_000),
    // Two test files at a time: CI's machine has 2 cores, and vitest's default (cores - 1) ran
    // one file at a time while most tests wait on child processes, Redis or a browser.
    maxWorkers: 2,
    hookTimeout: deadline(60_000),
  },
});
