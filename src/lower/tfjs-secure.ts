/**
 * tfjs lowering of secure_sum_clients: the definition (src/ir/secure-sum.ts) run on the host,
 * as the random-number kernels do (src/lower/tfjs-random.ts): tfjs has no 32-bit word kernels
 * to build the pair masks from, and this is the same code as the reference interpreter's.
 */
import * as tf from "@tensorflow/tfjs";
import { keyWords, secureSumHost, type SecureDType, type SecureSumAttrs } from "../ir/secure-sum.js";
import type { LoweringRule } from "./executable.js";

export const tfjsSecureRules: Record<string, LoweringRule> = {
  secure_sum_clients: (node) => {
    const attrs = node.attrs as unknown as SecureSumAttrs;
    return ([x, key]) => {
      const dtype = x!.dtype as SecureDType;
      const sum = secureSumHost("secureSum", x!.dataSync(), x!.shape[0]!, dtype, keyWords(key!.dataSync()), attrs);
      return [tf.tensor(sum, x!.shape.slice(1), dtype)];
    };
  },
};
