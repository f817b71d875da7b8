/**
 * Loading your own data from files, grouped by a client-id column: CSV (RFC 4180, quoted
 * fields), JSON lines and safetensors, written to a temporary folder as a user's would be.
 * All three of the same examples give the same ClientDataset.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { describe, expect, test } from "vitest";
import type { ClientDataset } from "../../src/lib/data/clients.js";
import { CsvSyntaxError, parseCsv } from "../../src/lib/data/csv.js";
import { loadCsvClients, loadJsonlClients, loadSafetensorsClients } from "../../src/lib/data/loaders.js";
import { encodeSafetensors } from "../../src/lib/run/safetensors.js";
import { expectFtError, temporaryDir } from "./helpers.js";

const dir = temporaryDir();
const file = (name: string, content: string | Buffer) => {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
};

/** The examples every format below holds: client, two features, a label; clients interleaved. */
const rows = [
  { user: "ann", a: 0.5, b: -1, label: 1 },
  { user: "bo, jr", a: 2, b: 0.25, label: 0 },
  { user: "ann", a: -3, b: 4, label: 2 },
  { user: "cy", a: 1.5, b: 1.5, label: 1 },
  { user: "ann", a: 6, b: 7, label: 0 },
];
const expected = {
  clientIds: ["ann", "bo, jr", "cy"],
  offsets: [0, 3, 4, 5],
  x: [0.5, -1, -3, 4, 6, 7, 2, 0.25, 1.5, 1.5],
  y: [1, 2, 0, 0, 1],
};

function expectExpected(data: ClientDataset) {
  expect(data.clientIds).toEqual(expected.clientIds);
  expect(Array.from(data.offsets)).toEqual(expected.offsets);
  expect(Array.from(data.fields.x!.data)).toEqual(expected.x);
  expect(data.fields.x!.shape).toEqual([2]);
  expect(Array.from(data.fields.y!.data)).toEqual(expected.y);
  expect(data.fields.y!.dtype).toBe("int32");
}

const csvText = ["user,a,b,label", ...rows.map((r) => `${r.user.includes(",") ? `"${r.user}"` : r.user},${r.a},${r.b},${r.label}`)].join("\r\n") + "\r\n";
const csvOptions = { client: "user", fields: { x: ["a", "b"], y: "label" }, dtypes: { y: "int32" } } as const;

describe("CSV", () => {
  test("groups rows by the client column, in order of first appearance; a quoted id may hold a comma", () => {
    expectExpected(loadCsvClients(file("data.csv", csvText), csvOptions));
  });

  test("a gzipped file is read as it is", () => {
    expectExpected(loadCsvClients(file("data.csv.gz", gzipSync(csvText)), csvOptions));
  });

  test("the parser: quotes, doubled quotes, line breaks in quotes, LF or CRLF, blank lines, a BOM", () => {
    const parsed = parseCsv('\ufeffid,text\n1,"say ""hi"", then\r\nleave"\n\n2,""\n3,plain,\n');
    expect(parsed.map((r) => r.fields)).toEqual([["id", "text"], ["1", 'say "hi", then\r\nleave'], ["2", ""], ["3", "plain", ""]]);
    expect(parsed.map((r) => r.line)).toEqual([1, 2, 5, 6]);
    expect(() => parseCsv('a,b"c\n')).toThrow(new CsvSyntaxError("line 1: a quote inside an unquoted field (quote the whole field and write the quote twice)"));
    expect(() => parseCsv('a\n"open,\nstill')).toThrow(new CsvSyntaxError("line 2: a quoted field is never closed"));
    expect(() => parseCsv('"a"b\n')).toThrow(new CsvSyntaxError("line 1: text after a closing quote (a field is quoted whole, or not at all)"));
  });

  test("bad files and values are FT304 and FT302 naming the file, line and column", () => {
    expectFtError(() => loadCsvClients(join(dir, "missing.csv"), csvOptions), "FT304", "missing.csv", "file not found");
    expectFtError(() => loadCsvClients(file("quote.csv", 'user,a\n"ann,1\n'), { client: "user", fields: { x: "a" } }), "FT304", "not valid CSV: line 2: a quoted field is never closed");
    expectFtError(() => loadCsvClients(file("cols.csv", "user,a\nann,1\n"), { client: "user", fields: { x: "z" } }), "FT304", 'no column "z"; the header has "user", "a"');
    expectFtError(() => loadCsvClients(file("short.csv", "user,a\nann\n"), { client: "user", fields: { x: "a" } }), "FT304", "line 2 has 1 fields, the header 2");
    expectFtError(() => loadCsvClients(file("nan.csv", "user,a\nann,1\nbo,abc\n"), { client: "user", fields: { x: "a" } }), "FT302", 'nan.csv line 3, column "a"', '"abc" is not a number');
    expectFtError(() => loadCsvClients(file("empty-value.csv", "user,a\nann,\n"), { client: "user", fields: { x: "a" } }), "FT302", 'line 2, column "a"', '"" is not a number');
    expectFtError(() => loadCsvClients(file("inf.csv", "user,a\nann,Infinity\n"), { client: "user", fields: { x: "a" } }), "FT302", "client ann, field x, example 0", "not a finite float32");
    expectFtError(() => loadCsvClients(file("header.csv", "user,a\n"), { client: "user", fields: { x: "a" } }), "FT304", "no examples");
  });
});

describe("JSON lines", () => {
  test("one object per line, nested arrays for vectors; fields default to every key but the client's", () => {
    const text = rows.map((r) => JSON.stringify({ user: r.user, x: [r.a, r.b], y: r.label })).join("\n") + "\n\n";
    expectExpected(loadJsonlClients(file("data.jsonl", text), { client: "user", dtypes: { y: "int32" } }));
  });

  test("numeric client ids, and only the fields asked for", () => {
    const data = loadJsonlClients(file("ids.jsonl", '{"id": 4, "v": [[1, 2], [3, 4]], "note": 9}\n{"id": 2, "v": [[5, 6], [7, 8]], "note": 9}\n'), { client: "id", fields: ["v"] });
    expect(data.clientIds).toEqual(["4", "2"]);
    expect(data.fields.v.shape).toEqual([2, 2]);
    expect(Object.keys(data.fields)).toEqual(["v"]);
  });

  test("bad lines are FT304 or FT302 naming the line", () => {
    expectFtError(() => loadJsonlClients(file("bad.jsonl", '{"id": 1, "v": 2}\n{"id": 1, v: 2}\n'), { client: "id" }), "FT304", "line 2 is not JSON");
    expectFtError(() => loadJsonlClients(file("noid.jsonl", '{"id": 1, "v": 2}\n{"v": 2}\n'), { client: "id" }), "FT302", "noid.jsonl line 2", "no client id");
    expectFtError(() => loadJsonlClients(file("nokey.jsonl", '{"id": 1, "v": 2}\n{"id": 1}\n'), { client: "id" }), "FT302", "nokey.jsonl line 2", 'no key "v"');
    expectFtError(() => loadJsonlClients(file("str.jsonl", '{"id": 1, "v": "2"}\n'), { client: "id" }), "FT302", 'line 1, key "v"', "is not a number or an array of numbers");
    expectFtError(() => loadJsonlClients(file("ragged.jsonl", '{"id": 1, "v": [1, 2]}\n{"id": 1, "v": [1]}\n'), { client: "id" }), "FT302", "client 1, field v, example 1", "is ragged");
  });
});

describe("safetensors", () => {
  const write = (name: string, tensors: Map<string, { dtype: "F32" | "I32"; shape: number[]; data: Float32Array | Int32Array }>) =>
    file(name, Buffer.concat(encodeSafetensors(tensors, {})));
  const clientOf: Record<string, number> = { ann: 10, "bo, jr": 3, cy: 7 };
  const tensors = () =>
    new Map([
      ["client", { dtype: "I32" as const, shape: [5], data: Int32Array.from(rows, (r) => clientOf[r.user]!) }],
      ["x", { dtype: "F32" as const, shape: [5, 2], data: Float32Array.from(rows.flatMap((r) => [r.a, r.b])) }],
      ["y", { dtype: "I32" as const, shape: [5], data: Int32Array.from(rows, (r) => r.label) }],
    ]);

  test("tensors [examples, ...] with an I32 tensor of client ids", () => {
    const data = loadSafetensorsClients(write("data.safetensors", tensors()));
    expectExpected({ ...data, clientIds: data.clientIds.map((id) => Object.keys(clientOf).find((user) => String(clientOf[user]) === id)!) });
    expect(data.clientIds).toEqual(["10", "3", "7"]);
  });

  test("a corrupt file, missing client ids and a tensor of the wrong length are errors", () => {
    expectFtError(() => loadSafetensorsClients(file("junk.safetensors", Buffer.from("not a safetensors file"))), "FT304", "not a valid safetensors file");
    const path = write("ids.safetensors", tensors());
    expectFtError(() => loadSafetensorsClients(path, { client: "user" }), "FT304", 'no tensor "user" of client ids');
    const short = tensors();
    short.set("y", { dtype: "I32", shape: [4], data: Int32Array.of(1, 0, 2, 1) });
    expectFtError(() => loadSafetensorsClients(write("short.safetensors", short)), "FT302", "tensor y", "does not start with the 5 examples of client");
    const floatIds = tensors();
    floatIds.set("client", { dtype: "F32", shape: [5], data: new Float32Array(5) });
    expectFtError(() => loadSafetensorsClients(write("float-ids.safetensors", floatIds)), "FT302", "client ids are an I32 tensor [examples], got F32[5]");
  });
});
