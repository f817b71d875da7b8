/**
 * Your own data: per-client arrays of any size, as a federated dataset and as the padded,
 * masked cohort tensors a program takes.
 *
 * A CLIENTS input is one tensor with the clients on axis 0 (SPEC section 6), so clients that
 * hold different numbers of examples are padded to the cohort's largest, with a mask that is 1
 * on real examples and 0 on padding, and `count`, each client's number of examples, as the
 * weight of a weighted mean (FedAvg's). clientsFrom checks and packs the arrays once; padClients
 * and batchClients copy a cohort's examples into those tensors each round. Examples stay in one
 * flat array per field, client after client, as LabelledDataset keeps them (dataset.ts), so a
 * round copies only its cohort's examples.
 */
import { ftError } from "../../errors/error.js";
import type { Rng } from "../random.js";
import { labelledDataset } from "./dataset.js";
import { epochOrder, federate, type FederatedDataset } from "./federated.js";
import { elementCount, type HostData, type HostTensor } from "./host-tensor.js";
import { examplesOf, isInt32, packField, type ClientDType, type ExampleValues } from "./client-examples.js";
import { checkInteger } from "./options.js";

export type { ClientDType, ExampleValues, NestedNumbers } from "./client-examples.js";

/**
 * One client's data: its fields (such as x and y), each with the same number of examples.
 *
 * @example
 * import { clientsFrom, type ClientRecord } from "fedtensor/lib";
 * const alice: ClientRecord = { x: [[0.1, 0.2], [0.3, 0.4]], y: new Int32Array([0, 1]) };
 * const data = clientsFrom([alice]);
 */
export type ClientRecord = { readonly [field: string]: ExampleValues };

/**
 * One field of a ClientDataset: its dtype, one example's shape, and every client's examples one
 * client after another.
 *
 * @example
 * import { clientsFrom, type ClientField } from "fedtensor/lib";
 * const x: ClientField = clientsFrom([{ x: [[1, 2]] }, { x: [[3, 4], [5, 6]] }]).fields.x;
 * console.log(x.dtype, x.shape, x.data.length); // float32 [2] 6
 */
export interface ClientField {
  readonly dtype: ClientDType;
  /** One example's shape ([] for one number per example). */
  readonly shape: readonly number[];
  /** Every client's examples, client after client: [examples, ...shape], row-major. */
  readonly data: HostData;
}

/** Checked per-client data; its clients are referred to by position (0 .. clientIds.length - 1). */
export interface ClientDataset<F extends string = string> {
  readonly clientIds: readonly string[];
  /** Client c's examples are offsets[c] .. offsets[c + 1] - 1 of every field. */
  readonly offsets: Int32Array;
  readonly fields: { readonly [K in F]: ClientField };
}

/**
 * clientsFrom's options: the clients' names and each field's dtype.
 *
 * @example
 * const clients = clientsFrom([{ x: [[1, 2]], y: [0] }, { x: [[3, 4], [5, 6]], y: [1, 1] }], { ids: ["alice", "bob"], dtypes: { y: "int32" } } satisfies ClientsFromOptions<"x" | "y">);
 */
export interface ClientsFromOptions<F extends string = string> {
  /** Names of the clients of an array, in order (default client-000, client-001, ...); a Map's keys name its clients. */
  readonly ids?: readonly string[];
  /**
   * A field's dtype. Default: int32 for Int32Array data, float32 otherwise; give int32 for
   * labels written as plain numbers (sparse cross-entropy takes i32 labels).
   */
  readonly dtypes?: { readonly [K in F]?: ClientDType };
}

/** Names a cohort's tensors use for themselves, which a field may not take. */
const reservedFields = ["mask", "count", "clients"];

/**
 * Packs per-client arrays into a ClientDataset, checking them: every client has the same
 * fields, each with the same number of examples (at least one), every example of a field has
 * the same shape (no ragged inner arrays), float32 values are finite and int32 values are
 * whole numbers in range. Any failure is FT302 naming the client, the field and the example.
 */
export function clientsFrom<R extends ClientRecord>(
  clients: readonly R[] | ReadonlyMap<string, R>,
  options: ClientsFromOptions<keyof R & string> = {},
): ClientDataset<keyof R & string> {
  const entries = clientEntries(clients, options.ids);
  const [firstId, first] = entries[0]!;
  const fieldNames = Object.keys(first) as (keyof R & string)[];
  if (fieldNames.length === 0) throw ftError("FT302", { what: `client ${firstId}`, why: "has no fields; give each client's examples, such as { x: [[0.1, 0.2]], y: [1] }" });
  const reserved = fieldNames.find((name) => reservedFields.includes(name));
  if (reserved !== undefined) throw ftError("FT302", { what: `field ${reserved}`, why: `the cohort tensors use the names ${reservedFields.join(", ")}; rename the field` });
  for (const [id, record] of entries) {
    const names = Object.keys(record);
    const odd = names.find((name) => !fieldNames.includes(name as keyof R & string)) ?? fieldNames.find((name) => !names.includes(name));
    if (odd !== undefined) throw ftError("FT302", { what: `client ${id}`, why: `has fields ${names.join(", ")} where client ${firstId} has ${fieldNames.join(", ")}` });
  }
  const counts: number[] = [];
  const fields = {} as Record<keyof R & string, ClientField>;
  for (const name of fieldNames) {
    const parts = entries.map(([id, record]) => examplesOf(record[name]!, `client ${id}, field ${name}`));
    const shape = parts[0]!.shape;
    if (!shape.every((dim) => dim > 0)) throw ftError("FT302", { what: `client ${firstId}, field ${name}`, why: `an example of shape [${shape.join(", ")}] holds no values` });
    parts.forEach((part, c) => {
      const id = entries[c]![0];
      if (part.count === 0) throw ftError("FT302", { what: `client ${id}`, why: "has no examples; leave it out, or give it at least one" });
      if (!sameShape(part.shape, shape)) {
        throw ftError("FT302", { what: `client ${id}, field ${name}`, why: `its examples have shape [${part.shape.join(", ")}], client ${firstId}'s [${shape.join(", ")}]` });
      }
      if (name === fieldNames[0]) counts[c] = part.count;
      else if (part.count !== counts[c]) {
        throw ftError("FT302", { what: `client ${id}`, why: `field ${name} has ${part.count} examples, field ${fieldNames[0]} has ${counts[c]}` });
      }
    });
    const dtype = options.dtypes?.[name] ?? (isInt32(first[name]!) ? "int32" : "float32");
    fields[name] = { dtype, shape, data: packField(parts, dtype, entries.map(([id]) => id), name) };
  }
  const offsets = new Int32Array(entries.length + 1);
  counts.forEach((count, c) => (offsets[c + 1] = offsets[c]! + count));
  return { clientIds: entries.map(([id]) => id), offsets, fields };
}

/**
 * Each client's number of examples, float32 for use as aggregation weights.
 *
 * @example
 * import { clientCounts, clientsFrom } from "fedtensor/lib";
 * const data = clientsFrom([{ x: [0.5, 1.5] }, { x: [2.5] }]);
 * console.log(clientCounts(data)); // Float32Array [2, 1]
 */
export function clientCounts(data: ClientDataset, clients: ArrayLike<number> = allClients(data)): Float32Array {
  return Float32Array.from(checkedCohort(data, clients), (c) => data.offsets[c + 1]! - data.offsets[c]!);
}

/**
 * A cohort's tensors: each field, the mask (1 on real examples) and count, each client's examples.
 *
 * @example
 * import { clientsFrom, padClients, type ClientTensors } from "fedtensor/lib";
 * const padded: ClientTensors<"y"> = padClients(clientsFrom([{ y: [3, 1, 4] }, { y: [1] }], { dtypes: { y: "int32" } }));
 * console.log(padded.y.shape, padded.mask.data, padded.count.data); // [2, 3] [1, 1, 1, 1, 0, 0] [3, 1]
 */
export type ClientTensors<F extends string> = { readonly [K in F]: HostTensor } & {
  readonly mask: HostTensor<Float32Array>;
  /** [C] float32, the weights of a weighted mean. */
  readonly count: HostTensor<Float32Array>;
  /** The cohort's client positions, in tensor order. */
  readonly clients: Int32Array;
};

/**
 * Every example of each cohort client, in order, padded to the cohort's largest client: each
 * field [C, N, ...shape], mask [C, N], count [C]; for programs that use a client's data whole
 * (a histogram, k-means). `clients` defaults to every client.
 */
export function padClients<F extends string>(data: ClientDataset<F>, clients: ArrayLike<number> = allClients(data)): ClientTensors<F> {
  const cohort = checkedCohort(data, clients);
  const largest = largestOf(clientCounts(data, cohort));
  return gatherCohort(data, cohort, [largest], (client) => range(data.offsets[client]!, data.offsets[client + 1]!));
}

/**
 * batchClients's options: the batch size, local epochs, the shuffle stream and the fewest batches
 * per client.
 *
 * @example
 * import { batchClients, clientsFrom, Rng, type ClientBatchOptions } from "fedtensor/lib";
 * const options: ClientBatchOptions = { batchSize: 32, epochs: 2, rng: Rng.fromSeed(0).fork("round:0") };
 * const cohort = batchClients(clientsFrom([{ x: [1, 2, 3] }]), [0], options);
 */
export interface ClientBatchOptions {
  readonly batchSize: number;
  /** Local epochs: each client's examples are reshuffled this many times and concatenated. */
  readonly epochs?: number;
  /** Drives the shuffles; each client's order comes from rng.fork(`client:<position>`), as batchCohort's. */
  readonly rng: Rng;
  /** At least this many batches per client. */
  readonly steps?: number;
}

/**
 * A cohort's training batches: each field [C, nBatches, B, ...shape], mask [C, nBatches, B],
 * count [C], with nBatches = ceil(epochs * largest client / B) (at least `steps`). The same
 * examples in the same order as batchCohort on federateClients(data): a client's batches depend
 * only on its own examples and its fork of `rng`.
 *
 * @example
 * import { batchClients, clientsFrom, Rng } from "fedtensor/lib";
 * const data = clientsFrom([{ x: [[1, 2], [3, 4], [5, 6]], y: [0, 1, 1] }, { x: [[7, 8]], y: [1] }], { dtypes: { y: "int32" } });
 * const cohort = batchClients(data, [0, 1], { batchSize: 2, rng: Rng.fromSeed(0) });
 * console.log(cohort.x.shape, cohort.mask.shape, cohort.count.data); // [2, 2, 2, 2] [2, 2, 2] Float32Array [3, 1]
 */
export function batchClients<F extends string>(data: ClientDataset<F>, clients: ArrayLike<number>, options: ClientBatchOptions): ClientTensors<F> {
  const { batchSize, epochs = 1, rng, steps = 1 } = options;
  checkInteger("batchSize", batchSize, 1);
  checkInteger("epochs", epochs, 1);
  checkInteger("steps", steps, 1);
  const cohort = checkedCohort(data, clients);
  const largest = largestOf(clientCounts(data, cohort));
  const nBatches = Math.max(steps, Math.ceil((epochs * largest) / batchSize));
  return gatherCohort(data, cohort, [nBatches, batchSize], (client) => epochOrder(range(data.offsets[client]!, data.offsets[client + 1]!), epochs, rng.fork(`client:${client}`)));
}

/**
 * federateClients's options: the feature and label fields, the number of classes and the server's
 * test set.
 *
 * @example
 * import { clientsFrom, federateClients, type FederateClientsOptions } from "fedtensor/lib";
 * const clients = clientsFrom([{ pixels: [[0.1, 0.9]], digit: [1] }], { dtypes: { digit: "int32" } });
 * const options: FederateClientsOptions<"pixels" | "digit"> = { features: "pixels", labels: "digit", numClasses: 10 };
 * const data = federateClients(clients, options);
 */
export interface FederateClientsOptions<F extends string = string> {
  /** The field of features (default "x"). */
  readonly features?: F;
  /** The field of int32 labels, one per example (default "y"). */
  readonly labels?: F;
  /** Labels lie in [0, numClasses); default: the largest label + 1. */
  readonly numClasses?: number;
  /** The server's held-out set, one record with the same two fields; default none (an empty test set). */
  readonly test?: ClientRecord;
}

/**
 * The labelled data as a FederatedDataset, the form the library's algorithms, sampleRound and
 * the CLI's round loop (with its size buckets for ragged cohorts) work on: the same examples,
 * with each client's indices in one shared LabelledDataset.
 *
 * @example
 * import { clientsFrom, federateClients, roundCohort, Rng } from "fedtensor/lib";
 * const clients = clientsFrom([{ x: [[0.1, 0.2], [0.3, 0.4]], y: [0, 1] }, { x: [[0.5, 0.6]], y: [1] }], { dtypes: { y: "int32" } });
 * const data = federateClients(clients, { numClasses: 2 });
 * const cohort = roundCohort(data, { rng: Rng.fromSeed(0), round: 0, clientsPerRound: 2, batchSize: 2 });
 */
export function federateClients<F extends string>(data: ClientDataset<F>, options: FederateClientsOptions<F> = {}): FederatedDataset {
  const features = (options.features ?? "x") as F;
  const labels = (options.labels ?? "y") as F;
  const x = data.fields[features];
  const y = data.fields[labels];
  for (const [role, name, field] of [["features", features, x], ["labels", labels, y]] as const) {
    if (field === undefined) throw ftError("FT302", { what: `federateClients ${role}`, why: `no field ${name}; the fields are ${Object.keys(data.fields).join(", ")}` });
  }
  if (y.dtype !== "int32" || y.shape.length !== 0) {
    throw ftError("FT302", { what: `field ${labels}`, why: `labels are one int32 per example; got ${y.dtype} examples of shape [${y.shape.join(", ")}] (give dtypes: { ${labels}: "int32" })` });
  }
  const test = options.test === undefined ? undefined : clientsFrom([options.test], { ids: ["test"], dtypes: { [features]: x.dtype, [labels]: "int32" } as never }).fields as Record<string, ClientField>;
  if (test !== undefined && !sameShape(test[features]!.shape, x.shape)) {
    throw ftError("FT302", { what: "test set", why: `features of shape [${test[features]!.shape.join(", ")}] where the clients' are [${x.shape.join(", ")}]` });
  }
  const numClasses = options.numClasses ?? Math.max(largestOf(y.data), largestOf(test?.[labels]!.data ?? [])) + 1;
  const train = labelledDataset("train set", { x: x.data, y: y.data as Int32Array, featureShape: x.shape, numClasses });
  const testSet = labelledDataset("test set", {
    x: test?.[features]!.data ?? (x.dtype === "int32" ? new Int32Array(0) : new Float32Array(0)),
    y: (test?.[labels]!.data as Int32Array | undefined) ?? new Int32Array(0),
    featureShape: x.shape,
    numClasses,
  });
  const partition = data.clientIds.map((_, c) => range(data.offsets[c]!, data.offsets[c + 1]!));
  return federate(train, testSet, partition, data.clientIds);
}

/** Copies each cohort client's examples, in `orderOf(client)`, into slots of shape `slotShape` per client. */
function gatherCohort<F extends string>(data: ClientDataset<F>, cohort: Int32Array, slotShape: number[], orderOf: (client: number) => Int32Array): ClientTensors<F> {
  const slots = elementCount(slotShape);
  const mask = new Float32Array(cohort.length * slots);
  const tensors: Record<string, HostTensor> = {};
  const orders = Array.from(cohort, orderOf);
  for (const [name, field] of Object.entries(data.fields) as [string, ClientField][]) {
    const size = elementCount(field.shape);
    const out = field.dtype === "int32" ? new Int32Array(cohort.length * slots * size) : new Float32Array(cohort.length * slots * size);
    orders.forEach((order, position) => {
      for (let i = 0; i < order.length; i++) {
        const example = order[i]!;
        out.set(field.data.subarray(example * size, (example + 1) * size), (position * slots + i) * size);
      }
    });
    // Not marked checked: the caller may write into `out`, so the program that takes it checks it (verified.ts).
    tensors[name] = { shape: [cohort.length, ...slotShape, ...field.shape], data: out };
  }
  orders.forEach((order, position) => mask.fill(1, position * slots, position * slots + order.length));
  const count = { shape: [cohort.length], data: clientCounts(data, cohort) };
  return { ...tensors, mask: { shape: [cohort.length, ...slotShape], data: mask }, count, clients: cohort } as ClientTensors<F>;
}

function clientEntries<R>(clients: readonly R[] | ReadonlyMap<string, R>, ids: readonly string[] | undefined): [string, R][] {
  let entries: [string, R][];
  if (clients instanceof Map) {
    if (ids !== undefined) throw ftError("FT302", { what: "clientsFrom ids", why: "a Map's keys name its clients already" });
    // From JavaScript a Map's keys may be numbers: ids are strings.
    entries = [...(clients as ReadonlyMap<unknown, R>)].map(([id, record]) => [String(id), record]);
  } else if (Array.isArray(clients)) {
    const names = ids ?? clients.map((_, c) => `client-${String(c).padStart(3, "0")}`);
    if (names.length !== clients.length) throw ftError("FT302", { what: "clientsFrom ids", why: `${names.length} ids for ${clients.length} clients` });
    entries = clients.map((record, c) => [names[c]!, record]);
  } else {
    throw ftError("FT302", { what: "clientsFrom clients", why: "expected an array of client records, such as [{ x: [[0.1, 0.2]], y: [1] }], or a Map from client id to record" });
  }
  if (entries.length === 0) throw ftError("FT302", { what: "clientsFrom clients", why: "no clients" });
  if (new Set(entries.map(([id]) => id)).size !== entries.length) throw ftError("FT302", { what: "clientsFrom ids", why: "ids must be unique" });
  for (const [id, record] of entries) {
    if (record === null || typeof record !== "object" || Array.isArray(record)) {
      throw ftError("FT302", { what: `client ${id}`, why: "expected a record of fields, such as { x: [[0.1, 0.2]], y: [1] }" });
    }
  }
  return entries;
}

function checkedCohort(data: ClientDataset, clients: ArrayLike<number>): Int32Array {
  const numClients = data.clientIds.length;
  if (clients.length === 0) throw ftError("FT302", { what: "cohort", why: "no clients: a round needs at least one (a Poisson sample can be empty; skip such a round)" });
  return Int32Array.from(clients, (client) => {
    if (!Number.isInteger(client) || client < 0 || client >= numClients) {
      throw ftError("FT305", { option: "clients", why: `client position ${client} is not in [0, ${numClients})` });
    }
    return client;
  });
}

/** The largest value, -1 for none (a loop: spreading a million labels into Math.max overflows the stack). */
function largestOf(values: ArrayLike<number>): number {
  let most = -1;
  for (let i = 0; i < values.length; i++) most = Math.max(most, values[i]!);
  return most;
}

const allClients = (data: ClientDataset) => range(0, data.clientIds.length);
const range = (start: number, end: number) => Int32Array.from({ length: end - start }, (_, i) => start + i);
const sameShape = (a: readonly number[], b: readonly number[]) => a.length === b.length && a.every((d, i) => d === b[i]);
