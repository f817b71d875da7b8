/**
 * The container matrix (issue 29, "generated, not hand-picked"): every shape of tree a user
 * writes around a value (`containers`), at every position that takes a value to the SERVER or
 * out of the program (`positions`), once with a private CLIENTS leaf in it and once with every
 * leaf public, generated into one module of programs, one per line. The test
 * (taint-containers.test.ts) type-checks the module in one ts.Program, traces every program,
 * and holds both to the verdicts `expected` gives; above all, a program that tracing rejects
 * with FT109 must be rejected by tsc too (FT109, or FT115/FT116 where tsc fails closed), save
 * the cases of `unclosable`, which say why no type can see them.
 */

/** How a position treats the privacy of its operand. */
export type Role = "leaks" | "releases";

export interface Container {
  /** The tree's expression around a public leaf `o` and the value under test `v`. */
  readonly wrap: (o: string, v: string) => string;
  /**
   * What the container does besides holding the value (`unplaced`: its placement is not known
   * statically; `widened`: typed with a union of placements that may be private; `instance`:
   * the runtime takes no class instance as a tree, FT302).
   */
  readonly kind?: "unplaced" | "instance" | "widened";
}

/**
 * The containers. Module-level helpers (`prelude`) build the ones that need a declared type:
 * a readonly array, an optional field, classes.
 */
export const containers: Readonly<Record<string, Container>> = {
  tensor: { wrap: (_o, v) => v },
  tuple: { wrap: (o, v) => `[${o}, ${v}] as const` },
  array: { wrap: (o, v) => `[${o}, ${v}]` },
  readonlyArray: { wrap: (o, v) => `readonlyArray(${o}, ${v})` },
  nestedArrays: { wrap: (o, v) => `[[${o}], [${o}, ${v}]]` },
  record: { wrap: (o, v) => `{ a: ${o}, b: ${v} }` },
  numericKeys: { wrap: (o, v) => `{ 0: ${o}, 1: ${v} }` },
  optionalField: { wrap: (o, v) => `optionalField(${o}, ${v})` },
  objectSpread: { wrap: (o, v) => `{ ...{ a: ${o} }, b: ${v} }` },
  arraySpread: { wrap: (o, v) => `[...[${o}], ${v}]` },
  fromEntries: { wrap: (o, v) => `Object.fromEntries(entries(${o}, ${v}))` },
  fromEntriesLiteral: { wrap: (o, v) => `Object.fromEntries([["a", ${o}], ["b", ${v}]] as const)` },
  classSpread: { wrap: (o, v) => `{ ...new Pair(${o}, ${v}) }` },
  hiddenFieldSpread: { wrap: (o, v) => `{ ...new Hidden(${o}, ${v}) }` },
  classInstance: { wrap: (o, v) => `new Pair(${o}, ${v})`, kind: "instance" },
  unplacedHelper: { wrap: (o, v) => `{ a: ${o}, b: unplaced(${v}) }`, kind: "unplaced" },
  widenedArray: { wrap: (o, v) => `widened(${o}, ${v})`, kind: "widened" },
};

/**
 * The positions, each given the tree `t`: the plain reductions and aggregate() (which must not
 * take private data), the releasing aggregators (which may), an aggregator's next(), the
 * program's outputs, and the same after a loop's carry or map() has held the tree. The
 * programs with every leaf public (which must pass, save where tsc fails closed) are generated
 * for the positions marked `publicToo`, one per kind of check: the other reductions and
 * releases check public trees as reduceSum and dpSum do, and the matrix stays quick to check.
 */
export const positions: Readonly<Record<string, { readonly at: (t: string) => string; readonly role: Role; readonly publicToo?: true }>> = {
  output: { at: (t) => `(${t})`, role: "leaks", publicToo: true },
  reduceSum: { at: (t) => `ft.reduceSum(${t})`, role: "leaks", publicToo: true },
  reduceMean: { at: (t) => `ft.reduceMean(${t})`, role: "leaks" },
  reduceMax: { at: (t) => `ft.reduceMax(${t})`, role: "leaks" },
  reduceMin: { at: (t) => `ft.reduceMin(${t})`, role: "leaks" },
  reduceWeightedMean: { at: (t) => `ft.reduceWeightedMean(${t}, i.count)`, role: "leaks" },
  aggregate: { at: (t) => `ft.aggregate(${t}, { zero: () => ft.zeros([]), accumulate: (acc) => acc, merge: (a) => a, report: (acc) => acc })`, role: "leaks" },
  nextMean: { at: (t) => `meanChain.next(${t}, { mask: i.mask, count: i.count }, {}).value`, role: "leaks", publicToo: true },
  loopCarry: { at: (t) => `ft.fori(2, ${t}, (_j, c) => c)`, role: "leaks", publicToo: true },
  loopThenReduce: { at: (t) => `ft.reduceSum(ft.fori(2, ${t}, (_j, c) => c))`, role: "leaks" },
  // A tree held in a variable, as map() is usually given one.
  mapThenReduce: { at: (t) => `((t) => ft.reduceSum(ft.map((m) => m, t)))(${t})`, role: "leaks", publicToo: true },
  // Client state is private data still: reducing what keepOnClients returned needs a release.
  keepThenReduce: { at: (t) => `ft.reduceSum(ft.keepOnClients(${t}))`, role: "leaks", publicToo: true },
  dpSum: { at: (t) => `ft.dpSum(${t}, { clip: 1, noiseMultiplier: 1, key: i.key })`, role: "releases", publicToo: true },
  dpMean: { at: (t) => `ft.dpMean(${t}, { clip: 1, noiseMultiplier: 1, key: i.key, expectedClients: 4 })`, role: "releases" },
  secureSum: { at: (t) => `ft.secureSum(${t}, { bits: 20, key: i.key, range: [-1, 1], scale: 1000 })`, role: "releases" },
  secureMean: { at: (t) => `ft.secureMean(${t}, { bits: 24, key: i.key, range: [-1, 1], scale: 1000 })`, role: "releases" },
  // 12 bits keep the noise table small (sigma about 200): these cases are about placement, not calibration.
  distributedDpSum: {
    at: (t) => `ft.distributedDpSum(${t}, { clip: 1, noiseMultiplier: 1, bits: 12, minClients: 1, maxClients: 4, rotationKey: i.key, clientKeys: i.clientKeys })`,
    role: "releases",
  },
  nextDp: { at: (t) => `dpChain.next(${t}, { mask: i.mask, count: i.count }, dpInputs(i)).value`, role: "releases", publicToo: true },
};

/**
 * The leaks no type can see, and why: tracing rejects them (FT109) where tsc accepts, and the
 * test holds tsc to accepting them, so that closing one shows here. docs/language.md ("Where
 * tsc cannot know a placement") gives the same reasons.
 */
export const unclosable: Readonly<Record<string, string>> = {
  fromEntriesLiteral:
    "Object.fromEntries of an array literal of pairs is `any` (TypeScript's lib.es2019 types it so when it cannot infer one value type for the pairs): the `any` escape; typed entries ([string, T][]) give { [k: string]: T }, which tsc checks",
  hiddenFieldSpread:
    "TypeScript leaves a class's private and protected members out of a spread's type (they are own properties, which the spread copies at run time): after the spread no type holds the leaf",
};

/** The verdicts of one program: the FT codes tsc reports on its line, and the FT code tracing throws (null: it traces). */
export interface Verdict {
  readonly tsc: readonly string[];
  readonly trace: string | null;
}

/**
 * What each program must give. A private leaf at a position that leaks: FT109 in both, FT115 in
 * tsc where the leaf's placement is unknown there, FT109 where its type says it may be private
 * (tsc fails closed; public too). At a releasing position no
 * error, whatever the leaf. A class instance is no tree at run time (FT302) wherever it goes.
 */
export function expected(container: string, position: string, isPrivate: boolean): Verdict {
  const { kind } = containers[container]!;
  const { role } = positions[position]!;
  const trace = kind === "instance" ? "FT302" : isPrivate && role === "leaks" ? "FT109" : null;
  if (role === "releases") return { tsc: [], trace };
  if (kind === "unplaced") return { tsc: ["FT115"], trace };
  if (kind === "widened") return { tsc: ["FT109"], trace };
  if (!isPrivate || container in unclosable) return { tsc: [], trace };
  return { tsc: ["FT109"], trace };
}

/**
 * Programs outside the product, one per remaining leak class of issue 29: a private flag held in
 * a variable, clientBatchSpecs' flag, private weights and round data, a chain built at run
 * time (before and after narrowing), a private member returned from the program.
 */
export const extras: Readonly<Record<string, { readonly program: string; readonly verdict: Verdict }>> = {
  privateFlagInVariable: { program: "ft.program(inputs, (i) => ft.reduceSum(i.pflag))", verdict: { tsc: ["FT109"], trace: "FT109" } },
  clientBatchSpecsFlag: {
    program: "ft.program(lib.clientBatchSpecs(lib.logistic, { private: true }), (d) => ft.reduceSum(d.count))",
    verdict: { tsc: ["FT109"], trace: "FT109" },
  },
  privateWeight: { program: "ft.program(inputs, (i) => ft.reduceWeightedMean(i.x, i.pcount))", verdict: { tsc: ["FT109"], trace: "FT109" } },
  privateCountsThroughMean: {
    program: "ft.program(inputs, (i) => meanChain.next(i.x, { mask: i.mask, count: i.pcount }, {}).value)",
    verdict: { tsc: ["FT109"], trace: "FT109" },
  },
  privateCountsReleased: {
    program: "ft.program(inputs, (i) => dpChain.next(i.p, { mask: i.mask, count: i.pcount }, dpInputs(i)).value)",
    verdict: { tsc: [], trace: null },
  },
  // aggregatorOf's chain is one that releases or one that does not: FT109 of the one that does not, until narrowed.
  runtimeChain: { program: "ft.program(inputs, (i) => runtimeMean.next(i.p, { mask: i.mask, count: i.count }, {}).value)", verdict: { tsc: ["FT109"], trace: "FT109" } },
  chainTypedAggregator: { program: "ft.program(inputs, (i) => looseChain.next(i.p, { mask: i.mask, count: i.count }, {}).value)", verdict: { tsc: ["FT116"], trace: "FT109" } },
  chainTypedAggregatorGuarded: {
    program:
      'ft.program(inputs, (i) => { if (!lib.releasesPrivateData(looseDp)) throw new Error("a releasing chain"); return looseDp.next(i.p, { mask: i.mask, count: i.count }, dpInputs(i)).value; })',
    verdict: { tsc: [], trace: null },
  },
  runtimeChainPublic: { program: "ft.program(inputs, (i) => runtimeMean.next(i.x, { mask: i.mask, count: i.count }, {}).value)", verdict: { tsc: [], trace: null } },
  runtimeChainNarrowed: {
    program:
      'ft.program(inputs, (i) => { if (!runtimeDp.releases) throw new Error("a releasing chain"); return runtimeDp.next(i.p, { mask: i.mask, count: i.count }, dpInputs(i)).value; })',
    verdict: { tsc: [], trace: null },
  },
  memberReturned: {
    program:
      'ft.program(inputs, (i) => { let leaked: ft.Tensor<[3], "float32", "member-private"> | undefined; ft.map((m) => { leaked = m; return m; }, i.p); return leaked!; })',
    verdict: { tsc: ["FT109"], trace: "FT109" },
  },
};

export interface Case {
  readonly name: string;
  readonly container: string;
  readonly exportName: string;
  readonly line: number;
  readonly verdict: Verdict;
}

/** The module's preamble: imports, the inputs and the helpers the containers and positions use. */
function prelude(index: string, lib: string): string[] {
  return [
    `import * as ft from ${JSON.stringify(index)};`,
    `import * as lib from ${JSON.stringify(lib)};`,
    "const flag = { private: true };",
    "const inputs = {",
    "  x: ft.atClients(ft.f32([3])), p: ft.atClients(ft.f32([3]), { private: true }),",
    "  pflag: ft.atClients(ft.f32([3]), flag), pcount: ft.atClients(ft.f32([]), { private: true }),",
    "  count: ft.atClients(ft.f32([])), mask: ft.atClients(ft.f32([1, 1])), clientKeys: ft.atClients(ft.i32([2]), { private: true }),",
    "  key: ft.atServer(ft.i32([2])), round: ft.i32([]), clip: ft.atServer(ft.f32([])), noiseMultiplier: ft.f32([]), expectedClients: ft.f32([]),",
    "};",
    "type Inputs = ft.ValueOf<typeof inputs>;",
    "const readonlyArray = <A, B>(a: A, b: B): readonly (A | B)[] => [a, b];",
    "const optionalField = <A, B>(a: A, b: B): { a: A; b?: B } => ({ a, b });",
    "const entries = <A, B>(a: A, b: B): [string, A | B][] => [[\"a\", a], [\"b\", b]];",
    "class Pair<A, B> { constructor(readonly a: A, readonly b: B) {} }",
    "class Hidden<A, B> { constructor(readonly a: A, private readonly b: B) {} get hidden(): B { return this.b; } }",
    'const unplaced = (t: ft.Tensor<[3], "float32">) => t;',
    'const widened = (...ts: ft.Tensor<[3], "float32", "clients" | "clients-private">[]) => ts;',
    "const meanChain = lib.aggregator(lib.aggregationStages.mean());",
    "const dpChain = lib.aggregator(lib.aggregationStages.clip(1), lib.aggregationStages.dp());",
    "const runtimeMean = lib.aggregatorOf([lib.aggregationStages.mean()]);",
    "const runtimeDp = lib.aggregatorOf([lib.aggregationStages.clip(1), lib.aggregationStages.dp()]);",
    "const looseChain: lib.Aggregator = runtimeMean;",
    "const looseDp: lib.Aggregator = runtimeDp;",
    "const dpInputs = (i: Inputs) => ({ clip: i.clip, noiseMultiplier: i.noiseMultiplier, expectedClients: i.expectedClients, key: i.key, round: i.round });",
  ];
}

/** The module: the prelude, then one exported program builder per (container, position, privacy), one line each. */
export function generateContainers(index: string, lib: string): { source: string; cases: Case[] } {
  const lines = prelude(index, lib);
  const cases: Case[] = [];
  for (const [container, { wrap }] of Object.entries(containers)) {
    for (const [position, { at, publicToo }] of Object.entries(positions)) {
      for (const isPrivate of publicToo ? [true, false] : [true]) {
        const exportName = `case${cases.length}`;
        lines.push(`export const ${exportName} = () => ft.program(inputs, (i) => ${at(wrap("i.x", isPrivate ? "i.p" : "i.x"))});`);
        cases.push({ name: `${container} at ${position}, ${isPrivate ? "private" : "public"}`, container, exportName, line: lines.length, verdict: expected(container, position, isPrivate) });
      }
    }
  }
  for (const [name, { program, verdict }] of Object.entries(extras)) {
    const exportName = `case${cases.length}`;
    lines.push(`export const ${exportName} = () => ${program};`);
    cases.push({ name, container: name, exportName, line: lines.length, verdict });
  }
  return { source: `${lines.join("\n")}\n`, cases };
}
