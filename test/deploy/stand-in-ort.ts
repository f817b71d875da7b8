/** A stand-in ONNX runtime for the client core's tests: every session's run is the test's function. */
import type { OrtLike, OrtTensorLike } from "../../src/deploy/client/core.js";

export class StandInTensor implements OrtTensorLike {
  constructor(
    readonly type: string,
    readonly data: Float32Array | Int32Array | Uint8Array,
    readonly dims: readonly number[],
  ) {}
}

export function standInOrt(run: (feeds: Record<string, OrtTensorLike>) => Promise<Record<string, OrtTensorLike>>): OrtLike {
  return {
    Tensor: StandInTensor,
    InferenceSession: { create: async () => ({ run, release: async () => {} }) },
  };
}
