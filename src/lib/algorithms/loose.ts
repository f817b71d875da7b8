/**
 * The operations with loose static types, for library code that is generic over models.
 *
 * FedTensor's operation signatures check placements and shapes of concrete types; inside a
 * function generic over "any model's parameter tree" those checks cannot resolve, so the
 * algorithm library calls the same operations through these signatures. Nothing is lost at
 * run time: every call is still checked while tracing, with the same FT codes. The
 * algorithms' entry points (the programs and round functions users call) have precise types.
 */
import * as constants from "../../front/constants.js";
import * as elementwise from "../../front/elementwise.js";
import * as grads from "../../front/grad.js";
import * as loops from "../../front/loops.js";
import * as nn from "../../front/nn.js";
import * as placement from "../../front/placement.js";
import * as tensorOps from "../../front/tensor-ops.js";

/** A traced value or tree of them, statically unchecked here (checked while tracing). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Value = any;
type Loose<T> = { [K in keyof T]: T[K] extends (...args: never[]) => unknown ? (...args: Value[]) => Value : never };

export const ops = { ...constants, ...elementwise, ...tensorOps, ...nn, ...placement, ...loops, ...grads } as unknown as Loose<
  typeof constants & typeof elementwise & typeof tensorOps & typeof nn & typeof placement & typeof loops & typeof grads
>;
