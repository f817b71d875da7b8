/**
 * The argument makers of the taint matrix (test/privacy/taint-matrix.test.ts): for every value
 * that src/index.ts exports, how to call it with valid operands, one slot per tensor-valued
 * operand (options' tensor fields, values captured by a function argument and the arguments
 * of a returned function included), or why it is no operation on traced values. The test reads
 * the exports and their parameter lists with the compiler API and fails for an export without
 * an entry here, and for an entry whose slots miss one of its tensor-valued parameters.
 *
 * Each slot names a kind of program input (`inputKinds`); the generated program passes the
 * kind's public CLIENTS input in every slot but one, and its private counterpart there.
 */

/** A kind of operand: the program input that fills a slot, public, and its private counterpart. */
export const inputKinds = {
  x: { spec: "ft.f32([4, 3])", at: "clients" },
  v: { spec: "ft.f32([3])", at: "clients" },
  s: { spec: "ft.f32([])", at: "clients" },
  m: { spec: "ft.f32([3, 2])", at: "clients" },
  c: { spec: "ft.bool([4, 3])", at: "clients" },
  i: { spec: "ft.i32([4])", at: "clients" },
  n: { spec: "ft.i32([])", at: "clients" },
  k: { spec: "ft.i32([2])", at: "clients" },
  img: { spec: "ft.f32([2, 4, 4, 3])", at: "clients" },
  filt: { spec: "ft.f32([3, 3, 3, 2])", at: "clients" },
  // SERVER operands (broadcast, dpSum's and secureSum's options): private data is never at
  // the SERVER, so their private counterpart is the CLIENTS kind of the same type.
  sx: { spec: "ft.f32([4, 3])", at: "server", privateKind: "x" },
  ss: { spec: "ft.f32([])", at: "server", privateKind: "s" },
  skey: { spec: "ft.i32([2])", at: "server", privateKind: "k" },
  // A constant, which map()'s function may read; a private value it reads is a CLIENTS one.
  lv: { spec: "ft.f32([3])", at: "local", value: "ft.zeros([3])", privateKind: "v" },
} as const;
export type Kind = keyof typeof inputKinds;

/**
 * What a private slot must give, in tsc and when traced: an FT code (FT109 unless said), or
 * "released" for the operand of a declassifying aggregator (dpSum, secureSum): no error.
 */
export interface Expect {
  readonly tsc: string;
  readonly trace: string;
}
export const released: Expect = { tsc: "released", trace: "released" };
const both = (code: string): Expect => ({ tsc: code, trace: code });

export interface OpCase {
  /** Slot name (a parameter, `param.field` of an options object, `param[i]` of a list) to the kind that fills it. */
  readonly slots: Readonly<Record<string, Kind>>;
  /** The call, given the op's name and an expression per slot. */
  readonly call: (name: string, a: Readonly<Record<string, string>>) => string;
  /** Slots whose private value gives something other than FT109. */
  readonly expect?: Readonly<Record<string, Expect>>;
  /** Parameters the export check takes for tensor-valued that are not, and why. */
  readonly notOperands?: Readonly<Record<string, string>>;
}
export interface NotAnOp {
  readonly notAnOp: string;
}
export type Entry = OpCase | NotAnOp;

const fn = (name: string, ...args: string[]) => `ft.${name}(${args.join(", ")})`;
const binary = (kind: Kind = "x"): OpCase => ({ slots: { a: kind, b: kind }, call: (name, a) => fn(name, a.a!, a.b!) });
const unary = (kind: Kind = "x", ...rest: string[]): OpCase => ({ slots: { x: kind }, call: (name, a) => fn(name, a.x!, ...rest) });
const unaryA = (kind: Kind = "x"): OpCase => ({ slots: { a: kind }, call: (name, a) => fn(name, a.a!) });
const reduction = (kind: Kind = "x"): OpCase => ({ slots: { x: kind }, call: (name, a) => fn(name, a.x!) });
const draw = (...rest: string[]): OpCase => ({ slots: { key: "k" }, call: (name, a) => fn(name, a.key!, ...rest) });
const noOperands = (call: string, notOperands?: Record<string, string>): OpCase => ({ slots: {}, call: () => call, ...(notOperands ? { notOperands } : {}) });

export const taintCases: Readonly<Record<string, Entry>> = {
  // Not operations on traced values.
  catalogue: { notAnOp: "the error catalogue, data" },
  errorCodes: { notAnOp: "the list of error codes, data" },
  FedTensorError: { notAnOp: "the error class" },
  f32: { notAnOp: "builds an input spec from a shape" },
  i32: { notAnOp: "builds an input spec from a shape" },
  bool: { notAnOp: "builds an input spec from a shape" },
  atServer: { notAnOp: "places an input spec; private data is declared with atClients only" },
  atClients: { notAnOp: "places an input spec (the source of private data)" },
  program: { notAnOp: "declares a program; its outputs are what every case here checks (OutputCheck)" },
  helper: { notAnOp: "makes a user function placement-generic: its body's operations carry the taint (test/front/helper.test.ts, test-d/helpers.test-d.ts)" },
  Program: { notAnOp: "the class of traced programs" },
  signatureOf: { notAnOp: "prints a program's IR" },
  loadProgram: { notAnOp: "reads a program's IR from JSON" },
  interpret: { notAnOp: "runs a program's IR on host values" },
  useBackend: { notAnOp: "selects the tfjs backend" },
  backendNames: { notAnOp: "lists the tfjs backends" },
  printType: { notAnOp: "prints an IR value type" },
  quantizedBits: { notAnOp: "arithmetic on JavaScript numbers (bit counts)" },
  secretKey: { notAnOp: "draws a host key from node:crypto, to feed a SERVER input" },
  SecretKey: { notAnOp: "the class of secretKey()'s host keys" },
  RdpAccountant: { notAnOp: "host-side privacy accounting on JavaScript numbers" },
  PldAccountant: { notAnOp: "host-side privacy accounting on JavaScript numbers" },
  programEpsilon: { notAnOp: "host-side pricing of a traced program's releases (JavaScript numbers)" },

  // Placement primitives.
  broadcast: { slots: { x: "sx" }, call: (name, a) => fn(name, a.x!), expect: { x: both("FT101") } },
  map: {
    slots: { f: "lv", xs: "x" },
    call: (name, a) => fn(name, `(r) => ft.add(r, ft.sum(${a.f}))`, a.xs!),
    // A CLIENTS value captured inside the function is no member: FT106 whether private or not.
    expect: { f: both("FT106") },
  },
  reduceSum: reduction(),
  reduceMean: reduction(),
  reduceMax: reduction(),
  reduceMin: reduction(),
  reduceWeightedMean: { slots: { x: "x", weight: "s" }, call: (name, a) => fn(name, a.x!, a.weight!) },
  aggregate: {
    // Each function slot is a value the function reads; report's result is what it returns.
    slots: { x: "v", "fns.zero": "lv", "fns.accumulate": "lv", "fns.merge": "lv", "fns.report": "lv" },
    call: (name, a) =>
      fn(
        name,
        a.x!,
        `{ zero: () => ft.add(ft.zeros([3]), ${a["fns.zero"]}), accumulate: (acc, r) => ft.add(ft.add(acc, r), ${a["fns.accumulate"]}), merge: (p, q) => ft.add(ft.add(p, q), ${a["fns.merge"]}), report: (acc) => ${a["fns.report"]} }`,
      ),
    // A function of aggregate() runs per group of clients: a CLIENTS value it reads is no member (FT106), zero() starts from constants (FT208).
    expect: { "fns.zero": both("FT208"), "fns.accumulate": both("FT106"), "fns.merge": both("FT106"), "fns.report": both("FT106") },
  },

  // Elementwise.
  add: binary(),
  sub: binary(),
  mul: binary(),
  div: binary(),
  pow: binary(),
  maximum: binary(),
  minimum: binary(),
  less: binary(),
  lessEqual: binary(),
  greater: binary(),
  greaterEqual: binary(),
  equal: binary(),
  notEqual: binary(),
  logicalAnd: binary("c"),
  logicalOr: binary("c"),
  logicalNot: unaryA("c"),
  neg: unaryA(),
  abs: unaryA(),
  sign: unaryA(),
  exp: unaryA(),
  log: unaryA(),
  sqrt: unaryA(),
  relu: unaryA(),
  sigmoid: unaryA(),
  tanh: unaryA(),
  sin: unaryA(),
  cos: unaryA(),
  stopGradient: unaryA(),
  mod: binary(),
  log1p: unaryA(),
  floor: unaryA(),
  round: unaryA(),
  square: unaryA(),
  softplus: unaryA(),

  // Tensor operations.
  matmul: { slots: { a: "x", b: "m" }, call: (name, a) => fn(name, a.a!, a.b!) },
  transpose: unary("x"),
  reshape: unary("x", "[3, 4]"),
  expandDims: unary("x", "0"),
  concat: { slots: { "xs[0]": "x", "xs[1]": "x" }, call: (name, a) => fn(name, `[${a["xs[0]"]}, ${a["xs[1]"]}]`) },
  stack: { slots: { "xs[0]": "x", "xs[1]": "x" }, call: (name, a) => fn(name, `[${a["xs[0]"]}, ${a["xs[1]"]}]`) },
  slice: unary("x", "[0, 0]", "[2, 2]"),
  oneHot: { slots: { indices: "i" }, call: (name, a) => fn(name, a.indices!, "5") },
  sum: unary(),
  mean: unary(),
  max: unary(),
  min: unary(),
  argmax: unary(),
  argmin: unary(),
  norm: unary("x", "{ axis: -1 }"),
  squaredDistance: { slots: { a: "x", b: "v" }, call: (name, a) => fn(name, a.a!, a.b!, "-1") },
  cast: unary("x", '"int32"'),
  where: { slots: { cond: "c", a: "x", b: "x" }, call: (name, a) => fn(name, a.cond!, a.a!, a.b!) },
  clip: unary("x", "0", "1"),
  zerosLike: unary(),

  // Neural-network operations.
  softmax: unary(),
  logSoftmax: unary(),
  logsumexp: unary(),
  layerNorm: { slots: { x: "x", gamma: "v", beta: "v" }, call: (name, a) => fn(name, a.x!, a.gamma!, a.beta!) },
  groupNorm: { slots: { x: "x", gamma: "v", beta: "v" }, call: (name, a) => fn(name, a.x!, a.gamma!, a.beta!, "3") },
  softmaxCrossEntropy: { slots: { logits: "x", labels: "x" }, call: (name, a) => fn(name, a.logits!, a.labels!) },
  sparseSoftmaxCrossEntropy: { slots: { logits: "x", labels: "i" }, call: (name, a) => fn(name, a.logits!, a.labels!) },
  meanSquaredError: { slots: { predictions: "x", targets: "x" }, call: (name, a) => fn(name, a.predictions!, a.targets!) },
  sigmoidCrossEntropy: { slots: { logits: "x", labels: "x" }, call: (name, a) => fn(name, a.logits!, a.labels!) },
  binaryCrossEntropy: { slots: { probabilities: "x", labels: "x" }, call: (name, a) => fn(name, a.probabilities!, a.labels!) },
  conv2d: { slots: { x: "img", filter: "filt" }, call: (name, a) => fn(name, a.x!, a.filter!) },
  maxPool2d: unary("img", "2"),
  dropout: { slots: { x: "x", key: "k" }, call: (name, a) => fn(name, a.x!, "0.5", a.key!) },

  // Along an axis.
  argsort: unary(),
  cumsum: unary(),
  sort: unary(),
  topk: unary("x", "2"),
  take: { slots: { x: "x", indices: "i" }, call: (name, a) => fn(name, a.x!, a.indices!) },
  gather: { slots: { x: "x", indices: "i" }, call: (name, a) => fn(name, a.x!, a.indices!) },
  einsum: { slots: { "operands[0]": "x", "operands[1]": "m" }, call: (name, a) => fn(name, '"ij,jk->ik"', a["operands[0]"]!, a["operands[1]"]!) },

  // Loops: `body` is a value the body captures; scan's result is its stacked outputs (computed from the carry).
  fori: { slots: { init: "v", body: "v" }, call: (name, a) => fn(name, "2", a.init!, `(_j, c) => ft.add(c, ${a.body})`) },
  scan: { slots: { init: "v", xs: "x", body: "v" }, call: (name, a) => `${fn(name, a.init!, a.xs!, `(c, r) => [ft.add(ft.add(c, r), ${a.body}), c] as const`)}[1]` },

  // Randomness: a key computed from private data gives private draws.
  bernoulli: draw("0.5", "[3]"),
  normal: draw("[3]"),
  uniform: draw("[3]"),
  randomPermutation: draw("4"),
  split: draw(),
  foldIn: { slots: { key: "k", data: "n" }, call: (name, a) => fn(name, a.key!, a.data!) },
  randomKey: noOperands("ft.randomKey(7)"),
  clientIndex: noOperands("ft.map((r) => ft.add(r, ft.cast(ft.clientIndex(), \"float32\")), i.v)"),
  constant: noOperands("ft.constant([1, 2])", { value: "JavaScript numbers (nested arrays), FT302 for anything else" }),
  zeros: noOperands("ft.zeros([3])"),
  // Only the shape of its argument is read: zeros shaped like private data are not private.
  localZeros: noOperands("ft.localZeros(i.v)", { x: "only its shape is read: the zeros are local" }),
  ones: noOperands("ft.ones([3])"),
  full: noOperands("ft.full([3], 2)"),

  // Derivatives: `f` is a value f captures, `args` the returned function's arguments.
  grad: { slots: { f: "v", args: "v" }, call: (name, a) => `${fn(name, `(w: typeof ${a.args}) => ft.sum(ft.mul(w, ${a.f}))`)}(${a.args})` },
  valueAndGrad: { slots: { f: "v", args: "v" }, call: (name, a) => `${fn(name, `(w: typeof ${a.args}) => ft.sum(ft.mul(w, ${a.f}))`)}(${a.args})[1]` },
  jvp: {
    slots: { f: "v", primals: "v", tangents: "v" },
    // The output tangent, 2 w f t, depends on every operand (a linear f's would not on w).
    call: (name, a) => `${fn(name, `(w: typeof ${a.primals}) => ft.mul(ft.mul(w, w), ${a.f})`, `[${a.primals}]`, `[${a.tangents}]`)}[1]`,
  },

  // Client state: a private value kept by its client is an allowed output (it never leaves it).
  keepOnClients: { slots: { x: "v" }, call: (name, a) => fn(name, a.x!), expect: { x: released } },

  // Aggregators that may release private data, and their options.
  dpSum: {
    slots: { x: "v", "options.clip": "ss", "options.noiseMultiplier": "ss", "options.key": "skey" },
    call: (name, a) => fn(name, a.x!, `{ clip: ${a["options.clip"]}, noiseMultiplier: ${a["options.noiseMultiplier"]}, key: ${a["options.key"]} }`),
    expect: { x: released, "options.clip": both("FT110"), "options.noiseMultiplier": both("FT110"), "options.key": both("FT110") },
  },
  distributedDpSum: {
    slots: { x: "v", "options.rotationKey": "skey", "options.clientKeys": "k" },
    // 12 bits keep the noise table small: the matrix checks placement, not calibration.
    call: (name, a) => fn(name, a.x!, `{ clip: 1, noiseMultiplier: 1, bits: 12, minClients: 1, maxClients: 4, rotationKey: ${a["options.rotationKey"]}, clientKeys: ${a["options.clientKeys"]} }`),
    // The clients' keys may be private: they feed only the released noise.
    expect: { x: released, "options.rotationKey": both("FT110"), "options.clientKeys": released },
  },
  secureSum: {
    slots: { x: "v", "options.key": "skey" },
    call: (name, a) => fn(name, a.x!, `{ bits: 20, key: ${a["options.key"]}, range: [-1, 1], scale: 1000 }`),
    expect: { x: released, "options.key": both("FT312") },
  },

  // dpSum and secureSum followed by a division: they release what their inner aggregator does.
  dpMean: {
    slots: { x: "v", "options.clip": "ss", "options.noiseMultiplier": "ss", "options.key": "skey", "options.expectedClients": "ss" },
    call: (name, a) =>
      fn(
        name,
        a.x!,
        `{ clip: ${a["options.clip"]}, noiseMultiplier: ${a["options.noiseMultiplier"]}, key: ${a["options.key"]}, expectedClients: ${a["options.expectedClients"]} }`,
      ),
    expect: { x: released, "options.clip": both("FT110"), "options.noiseMultiplier": both("FT110"), "options.key": both("FT110"), "options.expectedClients": both("FT110") },
  },
  secureMean: {
    slots: { x: "v", "options.key": "skey", "options.weights": "s" },
    call: (name, a) => fn(name, a.x!, `{ bits: 24, key: ${a["options.key"]}, range: [-1, 1], scale: 1000, weights: ${a["options.weights"]}, maxWeight: 10 }`),
    expect: { x: released, "options.key": both("FT312"), "options.weights": released },
  },

  // Robust aggregation and norm bounds.
  reduceMedian: reduction("v"),
  reduceTrimmedMean: { slots: { x: "v" }, call: (name, a) => fn(name, a.x!, "{ trim: 0.1 }") },
  krum: { slots: { x: "v" }, call: (name, a) => fn(name, a.x!, "{ byzantine: 1 }") },
  globalNorm: unary("v"),
  clipByNorm: { slots: { x: "v", maxNorm: "s" }, call: (name, a) => fn(name, a.x!, a.maxNorm!) },
  zeroAboveNorm: { slots: { x: "v", maxNorm: "s" }, call: (name, a) => fn(name, a.x!, a.maxNorm!) },
  stochasticQuantize: { slots: { x: "v", key: "k" }, call: (name, a) => fn(name, a.x!, a.key!, "{ bits: 4 }") },
  randomHadamard: { slots: { x: "x", key: "k" }, call: (name, a) => fn(name, a.x!, a.key!) },
  inverseRandomHadamard: { slots: { y: "v", key: "k" }, call: (name, a) => fn(name, `ft.concat([${a.y!}, ft.zeros([1])])`, a.key!, "[2, 2]") },
};
