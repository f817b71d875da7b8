import { defineConfig } from "vitest/config";
import { deadline } from "./test/helpers/deadline.js";

/**
 * Large buffers on transparent huge pages, for the test workers and every process they start
 * (each CLI process reads MNIST into 188 MB of float32): glibc 2.35+ then advises huge pages
 * for malloc's mmap'd chunks, which V8's ArrayBuffers and ONNX Runtime's arena are. On CI's
 * kind of VM a fresh 4 KiB page costs a fault to the host; a `fedtensor run` of 4 logistic
 * rounds took 3.9 s of CPU without it and 2.9 s with it (docs/benchmarks.md, "Test machine").
 * Other C libraries ignore the variable.
 */
process.env.GLIBC_TUNABLES ??= "glibc.malloc.hugetlb=1";

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
