import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import { deadline } from "./test/helpers/deadline.js";

/**
 * Large buffers on transparent huge pages, for the test workers and every process they start
 * (each CLI process reads MNIST into 188 MB of float32): glibc 2.35+ then advises huge pages
 * for malloc's mmap'd chunks, which V8's ArrayBuffers and ONNX Runtime's arena are. On CI's
 * kind of VM a fresh 4 KiB page costs a fault to the host; a `fedtensor run` of 4 logistic
 * rounds took 0.77 times the wall time with it (bench/huge-pages.ts; docs/benchmarks.md, "Test machine").
 * Other C libraries ignore the variable.
 */
process.env.GLIBC_TUNABLES ??= "glibc.malloc.hugetlb=1";

export default defineConfig({
  // examples/ import the package by its names, as a user's code does: here they are this
  // checkout's sources, one module instance with the tests' own "../src/..." imports (Node's
  // self-reference through package.json "exports" would load the built dist/ beside them).
  // tsc resolves the same names to the sources through "exports", rootDir and outDir.
  resolve: {
    alias: [
      { find: /^fedtensor$/, replacement: fileURLToPath(new URL("./src/index.ts", import.meta.url)) },
      { find: /^fedtensor\/lib$/, replacement: fileURLToPath(new URL("./src/lib/index.ts", import.meta.url)) },
    ],
  },
  test: {
    include: ["test/**/*.test.ts", "checker-plugin/test/**/*.test.ts"],
    // Deadlines scale with the machine's load (test/helpers/deadline.ts): a busy laptop gets green.
    testTimeout: deadline(60_000),
    // Two test files at a time: CI's machine has 2 cores, and vitest's default (cores - 1) ran
    // one file at a time while most tests wait on child processes, Redis or a browser.
    maxWorkers: 2,
    // A worker keeps the modules it imported from one test file to the next: with isolation each
    // of the 206 files imported TensorFlow.js, ONNX Runtime and the library afresh. The whole
    // suite on CI's kind of 2-core VM: 14 m 06 s isolated, 10 m 42 s not (docs/benchmarks.md,
    // "Test machine"). Tests keep no state between files: each starts its own servers and
    // folders, and backends are chosen per call.
    isolate: false,
    hookTimeout: deadline(60_000),
  },
});
