/**
 * Evaluation programs' static types: central classification evaluation (local inputs, a
 * [classes, classes] confusion matrix), federated evaluation (server parameters, held-out
 * batches at the CLIENTS with their own number of batches T, per-client metrics {f32[]}@CLIENTS and the
 * confusion matrix at the SERVER), and personalization (metrics before and after, per client).
 * run() refuses a call missing held-out data or given an input the program does not take.
 */
import { expectError, expectType } from "tsd";
import { type Program, type TensorSpec } from "../dist/src/index.js";
import { characterModel, classificationEvaluationProgram, cnn, federatedEvaluationProgram, mlp2nn, personalizationProgram } from "../dist/src/lib/index.js";
import { value, type F32 } from "./helpers.js";

type InputsOf<P> = P extends Program<infer I, unknown> ? I : never;
type OutputsOf<P> = P extends Program<infer _I, infer O> ? O : never;

const central = classificationEvaluationProgram(cnn, { topK: 5 });
expectType<TensorSpec<["S", "B", 784], "float32", "local">>(value<InputsOf<typeof central>["x"]>());
expectType<F32<[10, 10]>>(value<OutputsOf<typeof central>["confusion"]>());
expectType<F32<[]>>(value<OutputsOf<typeof central>["topKAccuracy"]>());

const federated = federatedEvaluationProgram(mlp2nn);
expectType<TensorSpec<[784, 200], "float32", "server">>(value<InputsOf<typeof federated>["params"]["w1"]>());
expectType<TensorSpec<["T", "B", 784], "float32", "clients">>(value<InputsOf<typeof federated>["x"]>());
expectType<TensorSpec<["T", "B"], "int32", "clients">>(value<InputsOf<typeof federated>["y"]>());
expectType<F32<[], "clients">>(value<OutputsOf<typeof federated>["accuracy"]>());
expectType<F32<[], "clients">>(value<OutputsOf<typeof federated>["examples"]>());
expectType<F32<[10, 10], "server">>(value<OutputsOf<typeof federated>["confusion"]>());

// The character model's held-out features are int32 ids; its confusion matrix is over 96 characters.
const characters = federatedEvaluationProgram(characterModel({ sequenceLength: 12 }));
expectType<TensorSpec<["T", "B", 12], "int32", "clients">>(value<InputsOf<typeof characters>["x"]>());
expectType<F32<[96, 96], "server">>(value<OutputsOf<typeof characters>["confusion"]>());

const personalize = personalizationProgram(mlp2nn);
expectType<TensorSpec<["S", "B", 784], "float32", "clients">>(value<InputsOf<typeof personalize>["trainX"]>());
expectType<TensorSpec<["T", "B", 784], "float32", "clients">>(value<InputsOf<typeof personalize>["x"]>());
expectType<TensorSpec<[], "float32", "local">>(value<InputsOf<typeof personalize>["lr"]>());
expectType<F32<[], "clients">>(value<OutputsOf<typeof personalize>["before"]["accuracy"]>());
expectType<F32<[], "clients">>(value<OutputsOf<typeof personalize>["after"]["loss"]>());

// run() takes the parameters as server values and the held-out data as client values, nothing else.
declare const params: Parameters<typeof federated.run>[0]["params"];
declare const heldOut: Omit<Parameters<typeof federated.run>[0], "params">;
federated.run({ params, ...heldOut });
expectError(federated.run({ params, x: heldOut.x }));
expectError(federated.run({ params, ...heldOut, lr: 0.1 }));
