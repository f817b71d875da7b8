import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts", "checker-plugin/test/**/*.test.ts"],
    testTimeout: 60_000,
    // Two test files at a time: CI's machine has 2 cores, and vitest's default (cores - 1) ran
    // one file at a time while most tests wait on child processes, Redis or a browser.
    maxWorkers: 2,
    hookTimeout: 60_000,
  },
});
