/**
 * Where tsc cannot know a placement (test/privacy/untyped-leaks.ts type-checks), tracing
 * rejects the leak with FT109 before anything runs.
 */
import { expect, test } from "vitest";
import * as leaks from "./untyped-leaks.js";
import { ftFailure } from "./failure.js";

test.each(Object.entries(leaks))("%s: FT109 when traced", (_name, build) => {
  expect(ftFailure(build).code).toBe("FT109");
});
