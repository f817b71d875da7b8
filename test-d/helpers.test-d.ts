/**
 * User helpers keep the checks (docs/language.md "Writing helpers"): a loss, a layer and a
 * metric written the way a user would, with helper() and the named aliases, used at the SERVER,
 * at the CLIENTS, on members inside map() and on private data; misuse at the call site fails
 * with the FT code of the placement rule (texts: test/fixtures/type-errors/ft104-helper.ts).
 */
import { expectError, expectType } from "tsd";
import {
  add,
  argmax,
  broadcast,
  cast,
  equal,
  helper,
  map,
  matmul,
  mean,
  reduceMean,
  relu,
  sparseSoftmaxCrossEntropy,
  type AtClients,
  type AtServer,
  type Dim,
  type Float,
  type Int,
  type Member,
  type Placement,
  type Tensor,
} from "../dist/src/index.js";
import type { F32 } from "./helpers.js";

// ---- the helpers: bodies typed without placements, where every shape and dtype rule resolves

/** Mean cross-entropy of a batch of logits against integer labels. */
const loss = helper("loss", (logits: Float<["B", 10]>, labels: Int<["B"]>) => mean(sparseSoftmaxCrossEntropy(logits, labels)));
/** A dense layer with ReLU; its parameters are a tree. */
const dense = helper("dense", (x: Float<["B", 784]>, p: { w: Float<[784, 10]>; b: Float<[10]> }) => relu(add(matmul(x, p.w), p.b)));
/** Accuracy of a batch: the fraction of rows whose largest logit is the label. */
const accuracy = helper("accuracy", (logits: Float<["B", 10]>, labels: Int<["B"]>) => mean(cast(equal(argmax(logits, -1), labels), "float32")));

declare const serverLogits: Tensor<["B", 10], "float32", "server">;
declare const serverLabels: Tensor<["B"], "int32", "server">;
declare const clientLogits: Tensor<["B", 10], "float32", "clients">;
declare const clientLabels: Tensor<["B"], "int32", "clients">;
declare const privateLabels: Tensor<["B"], "int32", "clients-private">;
declare const images: AtClients<["B", 784]>;
declare const privateImages: Tensor<["B", 784], "float32", "clients-private">;
declare const serverImages: AtServer<["B", 784]>;
declare const w: AtServer<[784, 10]>;
declare const b: AtServer<[10]>;

// ---- at the SERVER, at the CLIENTS: the result lives where the arguments do -------------------

expectType<F32<[], "server">>(loss(serverLogits, serverLabels));
expectType<F32<[], "clients">>(loss(clientLogits, clientLabels));
expectType<F32<[], "clients">>(accuracy(clientLogits, clientLabels));
expectType<F32<["B", 10], "server">>(dense(serverImages, { w, b }));
expectType<F32<["B", 10], "clients">>(dense(images, broadcast({ w, b })));
// An all-equal CLIENTS value (broadcast's) with members that differ gives members that differ.
expectType<F32<[], "clients">>(loss(add(broadcast(serverLogits), 0), clientLabels));

// ---- on members inside map(), and on private data (private in, private out) ------------------

expectType<F32<[], "clients">>(map((l, y) => loss(l, y), clientLogits, clientLabels));
expectType<F32<["B", 10], "clients">>(map((x, p) => dense(x, p), images, broadcast({ w, b })));
expectType<F32<[], "clients-private">>(loss(clientLogits, privateLabels));
expectType<F32<["B", 10], "clients-private">>(dense(privateImages, broadcast({ w, b })));
expectType<F32<[], "clients-private">>(map((x, p, y) => accuracy(dense(x, p), y), privateImages, broadcast({ w, b }), privateLabels));
// A private result stays private: reducing it is FT109, as for any operation's result.
expectError(reduceMean(loss(clientLogits, privateLabels)));

// ---- misuse at the call site: one FT message naming the helper -------------------------------

// FT104: SERVER logits with CLIENTS labels.
expectError(loss(serverLogits, clientLabels));
// FT104: the SERVER parameters passed to the layer without broadcast.
expectError(dense(images, { w, b }));
// FT102: a SERVER value read inside map()'s function meets a member.
expectError(map((y) => loss(serverLogits, y), clientLabels));
// Private data cannot meet a SERVER value either (FT104).
expectError(loss(serverLogits, privateLabels));
// A shape the body does not take: tsc names the shapes.
expectError(loss(value<F32<["B", 5], "server">>(), serverLabels));
// Too few arguments.
expectError(loss(serverLogits));

// ---- helpers that use placement primitives: concrete placements, checked inside ---------------

/** The clients' mean loss at the SERVER, from the SERVER model. */
function federatedLoss(model: { w: AtServer<[784, 10]>; b: AtServer<[10]> }, x: AtClients<["B", 784]>, y: AtClients<["B"], "int32">): AtServer<[]> {
  return reduceMean(map((xm, p, ym) => loss(dense(xm, p), ym), x, broadcast(model), y));
}
expectType<F32<[], "server">>(federatedLoss({ w, b }, images, clientLabels));

/** A per-client step, typed on members. */
function clientScore(x: Member<["B", 784]>, p: { w: Member<[784, 10]>; b: Member<[10]> }, y: Member<["B"], "int32">): Member<[]> {
  return accuracy(dense(x, p), y);
}
expectType<F32<[], "clients">>(map(clientScore, images, broadcast({ w, b }), clientLabels));

/** A helper whose body mixes placements is rejected where it is written (FT104). */
function mixesInside(model: AtServer<[10]>, update: AtClients<[10]>) {
  expectError(add(model, update));
  return model;
}
mixesInside(b, value<AtClients<[10]>>());

// ---- the pattern that turns the checks off -----------------------------------------------------

/**
 * `Tensor<Dim[], "float32">` has no placement statically (Placement, the whole union): ops
 * inside pass, and so does the call with a SERVER and a CLIENTS value. Only tracing reports
 * the FT104; helper() reports it in tsc.
 */
function unsafeAdd(a: Tensor<Dim[], "float32">, c: Tensor<Dim[], "float32">) {
  return add(a, c);
}
expectType<Tensor<Dim[], "float32", Placement>>(unsafeAdd(serverLogits, clientLogits) as Tensor<Dim[], "float32", Placement>);
const safeAdd = helper("safeAdd", (a: Float<["B", 10]>, c: Float<["B", 10]>) => add(a, c));
expectError(safeAdd(serverLogits, clientLogits));

declare function value<T>(): T;
