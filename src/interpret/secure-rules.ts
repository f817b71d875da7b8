/**
 * Evaluation rules of the secure-sum primitives: the definition (src/ir/secure-sum.ts) on the
 * clients' members (secure_sum), or on a tensor whose axis 0 is the clients (its batched form
 * secure_sum_clients, for batched programs given to the interpreter).
 */
import { keyWords, secureSumHost, type SecureDType, type SecureSumAttrs } from "../ir/secure-sum.js";
import type { ControlRule, TensorRule } from "./rule.js";
import { tensor, type Tensor } from "./tensor.js";
import { membersOf, oneTensor } from "./values.js";

/** The secure sum of `clients` members of `shape`, laid out client-major in `values`. */
function secureSumOf(values: ArrayLike<number>, clients: number, shape: readonly number[], dtype: SecureDType, key: Tensor, attrs: unknown): Tensor {
  const sum = secureSumHost("secureSum", values, clients, dtype, keyWords(key.data), attrs as SecureSumAttrs);
  return tensor(shape, dtype, Float64Array.from(sum));
}

export const secureControlRules: Record<string, ControlRule> = {
  secure_sum: ([x, key], node) => {
    const members = membersOf(x!, "secureSum");
    const values = members.flatMap((m) => Array.from(m.data));
    return [secureSumOf(values, members.length, members[0]!.shape, members[0]!.dtype as SecureDType, oneTensor(key!, "secureSum"), node.attrs)];
  },
};

export const secureRules: Record<string, TensorRule> = {
  secure_sum_clients: ([x, key], cx) => secureSumOf(x!.data, x!.shape[0]!, x!.shape.slice(1), x!.dtype as SecureDType, key!, cx.attrs),
};
