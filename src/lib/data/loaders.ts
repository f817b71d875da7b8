/**
 * Your own data from files: CSV, JSON lines and safetensors, one example per row (or per
 * leading index), each carrying its client's id. The rows are grouped by client, in the order
 * each client first appears, and checked by clientsFrom. A file that cannot be read or parsed
 * is FT304 naming it; a value that is not a number, or a shape that does not fit, is FT302
 * naming the line (or tensor) and the field. Gzipped files are read as they are.
 */
import { ftError } from "../../errors/error.js";
import { decodeSafetensors, SafetensorsFormatError } from "../run/safetensors.js";
import { clientsFrom, type ClientDataset, type ClientDType, type ExampleValues, type NestedNumbers } from "./clients.js";
import { CsvSyntaxError, parseCsv } from "./csv.js";
import { readDataFile } from "./files.js";

const pathHint = "check the path";

/**
 * csvClients's options: the file, the column that names each example's client, and which columns
 * make each field.
 *
 * @example
 * import { loadCsvClients, type CsvClientsOptions } from "fedtensor/lib";
 * const options: CsvClientsOptions<"x" | "y"> = { client: "user", fields: { x: ["age", "income"], y: "label" }, dtypes: { y: "int32" } };
 * const data = loadCsvClients("clients.csv", options);
 */
export interface CsvClientsOptions<F extends string> {
  /** The column that holds each row's client id. */
  readonly client: string;
  /** Each field's columns: one column name for one number per example, a list for a vector. */
  readonly fields: { readonly [K in F]: string | readonly string[] };
  readonly dtypes?: { readonly [K in NoInfer<F>]?: ClientDType };
}

/**
 * A CSV file with a header row (RFC 4180: quoted fields may hold commas, quotes and line
 * breaks). Example: `loadCsvClients("data.csv", { client: "user", fields: { x: ["age", "income"], y: "label" }, dtypes: { y: "int32" } })`.
 *
 * @example
 * import { writeFileSync } from "node:fs";
 * import { loadCsvClients } from "fedtensor/lib";
 * writeFileSync("clients.csv", "user,age,income,label\nu1,31,4.5,1\nu1,40,3.2,0\nu2,25,2.1,1\n");
 * const data = loadCsvClients("clients.csv", { client: "user", fields: { x: ["age", "income"], y: "label" }, dtypes: { y: "int32" } });
 * console.log(data.clientIds, data.fields.x.shape); // ["u1", "u2"] [2]
 */
export function loadCsvClients<F extends string>(path: string, options: CsvClientsOptions<F>): ClientDataset<F> {
  let records;
  try {
    records = parseCsv(readText(path));
  } catch (error) {
    if (error instanceof CsvSyntaxError) throw ftError("FT304", { path, why: `not valid CSV: ${error.message}` });
    throw error;
  }
  const [header, ...rows] = records;
  if (header === undefined) throw ftError("FT304", { path, why: "empty: expected a header row and one row per example" });
  const column = (name: string): number => {
    const index = header.fields.indexOf(name);
    if (index < 0) throw ftError("FT304", { path, why: `no column ${JSON.stringify(name)}; the header has ${header.fields.map((f) => JSON.stringify(f)).join(", ")}` });
    return index;
  };
  const clientColumn = column(options.client);
  const fieldColumns = Object.entries(options.fields as Record<string, string | readonly string[]>).map(([name, spec]) => ({
    name,
    vector: typeof spec !== "string",
    columns: (typeof spec === "string" ? [spec] : spec).map(column),
  }));
  const groups = new ClientGroups(fieldColumns.map(({ name }) => name));
  for (const { fields, line } of rows) {
    if (fields.length !== header.fields.length) throw ftError("FT304", { path, why: `line ${line} has ${fields.length} fields, the header ${header.fields.length}` });
    const number = (index: number): number => {
      const text = fields[index]!.trim();
      const value = text === "" ? Number.NaN : Number(text);
      if (Number.isNaN(value)) throw ftError("FT302", { what: `${path} line ${line}, column ${JSON.stringify(header.fields[index])}`, why: `${JSON.stringify(fields[index])} is not a number` });
      return value;
    };
    groups.add(
      fields[clientColumn]!,
      fieldColumns.map(({ vector, columns }) => (vector ? columns.map(number) : number(columns[0]!))),
    );
  }
  return groups.dataset(path, options.dtypes);
}

/**
 * jsonlClients's options: the file, the key that names each record's client, and the fields to
 * read.
 *
 * @example
 * import { loadJsonlClients, type JsonlClientsOptions } from "fedtensor/lib";
 * const options: JsonlClientsOptions<"x" | "y"> = { client: "user", fields: ["x", "y"], dtypes: { y: "int32" } };
 * const data = loadJsonlClients("clients.jsonl", options);
 */
export interface JsonlClientsOptions<F extends string> {
  /** The key that holds each line's client id (a string or a number). */
  readonly client: string;
  /** The keys to read; default every key of the first line but the client's. */
  readonly fields?: readonly F[];
  /** Not where F is inferred from: without `fields`, the keys are any of the first line's. */
  readonly dtypes?: { readonly [K in NoInfer<F>]?: ClientDType };
}

/**
 * A JSON lines file: one JSON object per line, a number or nested arrays of numbers per key.
 * Example line: `{"user": "u7", "x": [0.5, 1.25], "y": 1}`.
 *
 * @example
 * import { writeFileSync } from "node:fs";
 * import { loadJsonlClients } from "fedtensor/lib";
 * writeFileSync("clients.jsonl", '{"user": "u7", "x": [0.5, 1.25], "y": 1}\n{"user": "u8", "x": [2, 0], "y": 0}\n');
 * const data = loadJsonlClients("clients.jsonl", { client: "user", fields: ["x", "y"], dtypes: { y: "int32" } });
 */
export function loadJsonlClients<F extends string = string>(path: string, options: JsonlClientsOptions<F>): ClientDataset<F> {
  const lines = readText(path).split(/\r?\n/);
  let groups: ClientGroups | undefined;
  lines.forEach((text, index) => {
    if (text.trim() === "") return;
    const line = index + 1;
    let row: unknown;
    try {
      row = JSON.parse(text);
    } catch (error) {
      throw ftError("FT304", { path, why: `line ${line} is not JSON: ${(error as Error).message}` });
    }
    if (row === null || typeof row !== "object" || Array.isArray(row)) throw ftError("FT304", { path, why: `line ${line} is not a JSON object` });
    const record = row as Record<string, unknown>;
    groups ??= new ClientGroups(options.fields ?? Object.keys(record).filter((key) => key !== options.client));
    const id = record[options.client];
    if (typeof id !== "string" && typeof id !== "number") throw ftError("FT302", { what: `${path} line ${line}`, why: `no client id: key ${JSON.stringify(options.client)} holds ${JSON.stringify(id)}, not a string or number` });
    groups.add(
      String(id),
      groups.fields.map((name) => {
        const value = record[name];
        if (value === undefined) throw ftError("FT302", { what: `${path} line ${line}`, why: `no key ${JSON.stringify(name)}, which the first line has` });
        if (!isNested(value)) throw ftError("FT302", { what: `${path} line ${line}, key ${JSON.stringify(name)}`, why: `${JSON.stringify(value)} is not a number or an array of numbers` });
        return value;
      }),
    );
  });
  if (groups === undefined) throw ftError("FT304", { path, why: "empty: expected one JSON object per line" });
  return groups.dataset(path, options.dtypes) as ClientDataset<F>;
}

/**
 * safetensorsClients's options: the file, the tensor of client ids and the tensors that make each
 * field.
 *
 * @example
 * import { loadSafetensorsClients, type SafetensorsClientsOptions } from "fedtensor/lib";
 * const options: SafetensorsClientsOptions<"x" | "y"> = { client: "writer", fields: ["x", "y"] };
 * const data = loadSafetensorsClients("femnist.safetensors", options);
 */
export interface SafetensorsClientsOptions<F extends string> {
  /** The I32 tensor [N] of each example's client id (default "client"). */
  readonly client?: string;
  /** The tensors to read, each [N, ...]; default every tensor but the client ids. */
  readonly fields?: readonly F[];
}

/**
 * A safetensors file (as PyTorch, JAX or NumPy write it, and src/lib/run/safetensors.ts reads
 * it) of tensors whose axis 0 is the example, with an I32 tensor of each example's client id.
 * F32 tensors become float32 fields, I32 tensors int32 fields.
 *
 * @example
 * import { loadSafetensorsClients } from "fedtensor/lib";
 * // clients.safetensors holds F32 "x" [N, 784], I32 "y" [N] and I32 "client" [N], as numpy or torch wrote them.
 * const data = loadSafetensorsClients("clients.safetensors", { client: "client", fields: ["x", "y"] });
 */
export function loadSafetensorsClients<F extends string = string>(path: string, options: SafetensorsClientsOptions<F> = {}): ClientDataset<F> {
  const clientName = options.client ?? "client";
  let file;
  try {
    file = decodeSafetensors(readDataFile(path, pathHint));
  } catch (error) {
    if (error instanceof SafetensorsFormatError) throw ftError("FT304", { path, why: `not a valid safetensors file: ${error.message}` });
    throw error;
  }
  const ids = file.tensors.get(clientName);
  if (ids === undefined) throw ftError("FT304", { path, why: `no tensor ${JSON.stringify(clientName)} of client ids; the tensors are ${[...file.tensors.keys()].join(", ")}` });
  if (ids.dtype !== "I32" || ids.shape.length !== 1) throw ftError("FT302", { what: `${path} tensor ${clientName}`, why: `client ids are an I32 tensor [examples], got ${ids.dtype}[${ids.shape.join(",")}]` });
  const names = options.fields ?? ([...file.tensors.keys()].filter((name) => name !== clientName) as F[]);
  const examples = ids.data.length;
  const tensors = names.map((name) => {
    const tensor = file.tensors.get(name);
    if (tensor === undefined) throw ftError("FT304", { path, why: `no tensor ${JSON.stringify(name)}; the tensors are ${[...file.tensors.keys()].join(", ")}` });
    if (tensor.shape[0] !== examples) throw ftError("FT302", { what: `${path} tensor ${name}`, why: `shape [${tensor.shape.join(", ")}] does not start with the ${examples} examples of ${clientName}` });
    return { name, tensor, size: tensor.data.length / Math.max(1, examples) };
  });
  // Each client's example indices, clients in order of first appearance.
  const byClient = new Map<number, number[]>();
  ids.data.forEach((id, example) => {
    const list = byClient.get(id);
    if (list === undefined) byClient.set(id, [example]);
    else list.push(example);
  });
  const clients = new Map<string, Record<string, ExampleValues>>();
  for (const [id, indices] of byClient) {
    const record: Record<string, ExampleValues> = {};
    for (const { name, tensor, size } of tensors) {
      const data = new (tensor.data.constructor as Float32ArrayConstructor | Int32ArrayConstructor)(indices.length * size);
      indices.forEach((example, i) => data.set(tensor.data.subarray(example * size, (example + 1) * size), i * size));
      record[name] = { shape: [indices.length, ...tensor.shape.slice(1)], data };
    }
    clients.set(String(id), record);
  }
  return clientsFrom(clients) as ClientDataset<F>;
}

/** Examples grouped by client id, in order of first appearance: one value per field each. */
class ClientGroups {
  private readonly clients = new Map<string, NestedNumbers[][]>();

  constructor(readonly fields: readonly string[]) {}

  add(id: string, values: readonly NestedNumbers[]): void {
    let columns = this.clients.get(id);
    if (columns === undefined) this.clients.set(id, (columns = this.fields.map(() => [])));
    values.forEach((value, f) => columns[f]!.push(value));
  }

  dataset<F extends string>(path: string, dtypes: { readonly [K in F]?: ClientDType } | undefined): ClientDataset<F> {
    if (this.clients.size === 0) throw ftError("FT304", { path, why: "no examples" });
    const records = new Map([...this.clients].map(([id, columns]) => [id, Object.fromEntries(this.fields.map((name, f) => [name, columns[f]!]))] as const));
    return clientsFrom(records, { ...(dtypes === undefined ? {} : { dtypes }) }) as ClientDataset<F>;
  }
}

function readText(path: string): string {
  return new TextDecoder("utf-8").decode(readDataFile(path, pathHint));
}

function isNested(value: unknown): value is NestedNumbers {
  return typeof value === "number" || (Array.isArray(value) && value.every(isNested));
}
