/**
 * Client-side pieces shared by the algorithms: the masked batch loss and local SGD over a
 * client's padded batches (a scan, traced once).
 */
import { atClients, atServer, f32, i32 } from "../../front/specs.js";
import type { Place } from "../../../types/tensor.js";
import { ops, type Value } from "./loose.js";
import type { AnyModel, ClientBatchSpecs } from "./types.js";

/**
 * The specs of a cohort's training data: S padded batches of B examples per client, a mask
 * (1 for real examples) and each client's example count (FedAvg's weight).
 */
export function clientBatchSpecs<M extends AnyModel>(model: M): ClientBatchSpecs<M["inputShape"]> {
  return {
    x: atClients(f32(["S", "B", ...model.inputShape])),
    y: atClients(i32(["S", "B"])),
    mask: atClients(f32(["S", "B"])),
    count: atClients(f32([])),
  } as never;
}

/** The model's parameter specs placed at the server. */
export function serverParamSpecs<M extends AnyModel>(model: M): Place<M["params"], "server"> {
  return atServer(model.params as never) as never;
}

/** Mean cross-entropy over the real (unmasked) examples of a batch; 0 for an all-padding batch. */
export function maskedLoss(model: AnyModel, params: Value, x: Value, y: Value, mask: Value): Value {
  const perExample = ops.softmaxCrossEntropy(model.logits(params, x), ops.oneHot(y, model.classes));
  return ops.div(ops.sum(ops.mul(perExample, mask)), ops.maximum(ops.sum(mask), 1));
}

export interface LocalTraining {
  /** Parameters after the client's local steps. */
  readonly params: Value;
  /** The client's mean training loss over its real examples. */
  readonly loss: Value;
}

/**
 * Plain SGD over a client's batches: params -= lr * grad(loss + extra). `extra` adds a term
 * to each step's objective (FedProx's proximal term); `correct` adjusts each step's gradient
 * (SCAFFOLD's control variates).
 */
export function localSgd(
  model: AnyModel,
  params: Value,
  batches: { x: Value; y: Value; mask: Value },
  lr: Value,
  hooks: { extra?: (p: Value) => Value; correct?: (g: Value) => Value } = {},
): LocalTraining {
  const [trained, stepLosses] = ops.scan(params, batches, (p: Value, b: Value) => {
    const objective = (q: Value) => {
      const loss = maskedLoss(model, q, b.x, b.y, b.mask);
      return hooks.extra === undefined ? loss : ops.add(loss, hooks.extra(q));
    };
    const [loss, g] = ops.valueAndGrad(objective)(p);
    const step = hooks.correct === undefined ? g : hooks.correct(g);
    return [ops.sub(p, ops.mul(step, lr)), ops.mul(loss, ops.sum(b.mask))];
  });
  const examples = ops.maximum(ops.sum(batches.mask), 1);
  return { params: trained, loss: ops.div(ops.sum(stepLosses), examples) };
}
