/**
 * Where tsc cannot know a placement (test/privacy/untyped-leaks.ts type-checks), tracing
 * rejects the leak with FT109 before anything runs.
 */
import { expect, test } from "vitest";
import { FedTensorError } from "../../src/index.js";
import * as leaks from "./untyped-leaks.js";

test.each(Object.entries(leaks))("%s: FT109 when traced", (_name, build) => {
  let thrown: unknown;
  try {
    build();
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(FedTensorError);
  expect((thrown as FedTensorError).code).toBe("FT109");
});
