import { expect } from "vitest";
import { FedTensorError } from "../../src/errors/error.js";

/** The FT error of a call that must fail (a test failure when it returns or throws anything else). */
export function ftFailure(fn: () => unknown): FedTensorError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(FedTensorError);
    return error as FedTensorError;
  }
  throw new Error("expected an FT error");
}

/** The FT message of a call that must fail. */
export const failure = (fn: () => unknown): string => ftFailure(fn).message;

/** The FT error of an async call that must fail. */
export async function ftFailureAsync(build: () => unknown): Promise<FedTensorError> {
  try {
    await build();
  } catch (error) {
    expect(error).toBeInstanceOf(FedTensorError);
    return error as FedTensorError;
  }
  throw new Error("expected an FT error");
}
