/**
 * Evaluation rule of secure_sum: the definition (src/ir/secure-sum.ts) on the clients'
 * members, concatenated client-major.
 */
import { keyWords, secureSumHost, type SecureDType, type SecureSumAttrs } from "../ir/secure-sum.js";
import type { ControlRule } from "./rule.js";
import { tensor } from "./tensor.js";
import { membersOf, oneTensor } from "./values.js";

export const secureControlRules: Record<string, ControlRule> = {
  secure_sum: ([x, key], node) => {
    const members = membersOf(x!, "secureSum");
    const dtype = members[0]!.dtype as SecureDType;
    const values = members.flatMap((m) => Array.from(m.data));
    const sum = secureSumHost("secureSum", values, members.length, dtype, keyWords(oneTensor(key!, "secureSum").data), node.attrs as unknown as SecureSumAttrs);
    return [tensor(members[0]!.shape, dtype, Float64Array.from(sum))];
  },
};
