/**
 * Quick fixes for FT errors whose fix is mechanical: move a value to where the operation needs
 * it (broadcast, a reduction), drop a reduction of a SERVER value, transpose a matmul operand,
 * add unit dims or a -1 with reshape, swap matmul's operands, one-hot or sparse labels for a
 * loss, cast a dtype, aggregate private data with dpSum, type a helper that takes private data
 * with the private aliases, start a loop's carry from a scalar tensor. These are candidates: each is proposed when the operand types read
 * through the checker suggest that it resolves the error, and verified-fixes.ts keeps those
 * whose fixed file type-checks without a new error. The edits add the import of the function
 * they call when the file lacks it.
 */
import type ts from "typescript";
import type { ErrorCode } from "../src/errors/catalogue.js";
import type { DimValue, Placement, ValueType } from "../src/ir/types.js";
import { messageParams, type FtMessage } from "./explain.js";
import { fedTensorCallee } from "./imports.js";
import { ftMessagesOf } from "./messages.js";
import { nodeWithSpan } from "./nodes.js";
import { hasKnownRank, leafType, typeTree } from "./value-types.js";

/** Where an FT error was reported: the argument the diagnostic points at, in its call. */
interface Site {
  readonly typescript: typeof ts;
  readonly checker: ts.TypeChecker;
  readonly file: ts.SourceFile;
  readonly message: FtMessage;
  readonly node: ts.Expression;
  readonly call: ts.CallExpression;
}

interface Fix {
  readonly name: string;
  readonly description: string;
  readonly changes: readonly ts.TextChange[];
}

const atServer = new Set<Placement>(["server"]);
const atClients = new Set<Placement>(["clients", "clients-equal"]);

/** The source text of a node for a fix's description, on one line and shortened when long. */
function label(site: Site, node: ts.Node): string {
  const text = node.getText(site.file).replace(/\s+/g, " ");
  return text.length <= 24 ? text : `${text.slice(0, 20)}…`;
}

/** Whether every leaf of the node's value is at one of the placements. */
function allAt(site: Site, node: ts.Expression, placements: ReadonlySet<Placement>): boolean {
  const tree = typeTree(site.checker, site.checker.getTypeAtLocation(node));
  return tree !== undefined && tree.leaves.every((leaf) => placements.has(leaf.placement));
}

function leafOf(site: Site, node: ts.Expression | undefined): ValueType | undefined {
  return node === undefined ? undefined : leafType(site.checker, site.checker.getTypeAtLocation(node));
}

const insert = (at: number, newText: string): ts.TextChange => ({ span: { start: at, length: 0 }, newText });
const replace = (node: ts.Node, file: ts.SourceFile, newText: string): ts.TextChange => ({
  span: { start: node.getStart(file), length: node.getEnd() - node.getStart(file) },
  newText,
});

/** `fn(target, ...extra)` in place of target, importing fn when needed. */
function wrapIn(site: Site, target: ts.Expression, fn: string, extra = ""): ts.TextChange[] {
  const callee = fedTensorCallee(site.typescript, site.checker, site.file, site.call, fn);
  const wrap = [insert(target.getStart(site.file), `${callee.text}(`), insert(target.getEnd(), `${extra})`)];
  return callee.importEdit === undefined ? wrap : [callee.importEdit, ...wrap];
}

function broadcastFix(site: Site, target: ts.Expression): Fix {
  const what = label(site, target);
  return { name: "broadcast", description: `Broadcast ${what} to the CLIENTS: broadcast(${what})`, changes: wrapIn(site, target, "broadcast") };
}

function reduceFixes(site: Site, target: ts.Expression): Fix[] {
  const what = label(site, target);
  return ["reduceMean", "reduceSum"].map((fn) => ({
    name: fn,
    description: `Reduce ${what} to the SERVER: ${fn}(${what})`,
    changes: wrapIn(site, target, fn),
  }));
}

/** FT101: a CLIENTS value reaches the SERVER through a reduction before it is broadcast. */
function reduceBeforeBroadcast(site: Site): Fix[] {
  return allAt(site, site.node, atClients) ? reduceFixes(site, site.node) : [];
}

/** FT102: a SERVER value is broadcast before map() reads it. */
function broadcastMapArgument(site: Site): Fix[] {
  return allAt(site, site.node, atServer) ? [broadcastFix(site, site.node)] : [];
}

/** FT103: reducing a SERVER value does nothing it needs; use the value itself. */
function removeReduction(site: Site): Fix[] {
  if (site.call.arguments.length !== 1 || !allAt(site, site.node, atServer)) return [];
  const what = label(site, site.node);
  const reduction = site.call.expression.getText(site.file);
  return [
    {
      name: "remove-reduction",
      description: `Remove ${reduction}(): ${what} is already at the SERVER`,
      changes: [replace(site.call, site.file, site.node.getText(site.file))],
    },
  ];
}

/** FT104: broadcast the SERVER operand, or reduce the CLIENTS one. */
function moveOperands(site: Site): Fix[] {
  const operands = site.call.arguments;
  return [
    ...operands.filter((o) => allAt(site, o, atServer)).map((o) => broadcastFix(site, o)),
    ...operands.filter((o) => allAt(site, o, atClients)).flatMap((o) => reduceFixes(site, o)),
  ];
}

const dimsAgree = (a: DimValue | undefined, b: DimValue | undefined): boolean => a === b || a === null || b === null;

/** A shape as TypeScript source: names quoted, the one unknown dim as -1; undefined if it cannot be written. */
function shapeSource(shape: readonly DimValue[]): string | undefined {
  if (shape.filter((d) => d === null).length > 1) return undefined;
  return `[${shape.map((d) => (d === null ? "-1" : typeof d === "string" ? JSON.stringify(d) : String(d))).join(", ")}]`;
}

/** numpy broadcasting, aligned from the right. */
function broadcastable(a: readonly DimValue[], b: readonly DimValue[]): boolean {
  for (let i = 1; i <= Math.min(a.length, b.length); i++) {
    const da = a[a.length - i]!;
    const db = b[b.length - i]!;
    if (!dimsAgree(da, db) && da !== 1 && db !== 1) return false;
  }
  return true;
}

/** The call's first two arguments with their types, when both are tensors of known rank. */
function twoTensors(site: Site): { a: ts.Expression; ta: ValueType; b: ts.Expression; tb: ValueType } | undefined {
  const [a, b] = site.call.arguments;
  const ta = leafOf(site, a);
  const tb = leafOf(site, b);
  if (a === undefined || b === undefined || ta === undefined || tb === undefined) return undefined;
  return hasKnownRank(ta) && hasKnownRank(tb) ? { a, ta, b, tb } : undefined;
}

/** FT201: trailing unit dims on the lower-rank operand align it with the other's leading dims. */
function reshapeForBroadcast(site: Site): Fix[] {
  const operands = twoTensors(site);
  if (operands === undefined) return [];
  const { a, ta, b, tb } = operands;
  const [low, lowType, highType] = ta.shape.length < tb.shape.length ? [a, ta, tb] : [b, tb, ta];
  const padded = [...lowType.shape, ...Array<DimValue>(highType.shape.length - lowType.shape.length).fill(1)];
  const target = shapeSource(padded);
  if (padded.length === lowType.shape.length || target === undefined || !broadcastable(highType.shape, padded)) return [];
  const what = label(site, low);
  return [{ name: "reshape", description: `Reshape ${what} to ${target}: reshape(${what}, ${target})`, changes: wrapIn(site, low, "reshape", `, ${target}`) }];
}

/** FT202: swapping an operand's last two dims makes matmul's contracted dims agree. */
function transposeOperand(site: Site): Fix[] {
  const operands = twoTensors(site);
  if (messageParams(site.message)?.["op"] !== "matmul" || operands === undefined) return [];
  const { a, ta, b, tb } = operands;
  const [ra, rb] = [ta.shape.length, tb.shape.length];
  const innerA = ta.shape[ra - 1];
  const innerB = rb === 1 ? tb.shape[0] : tb.shape[rb - 2];
  const candidates: [ts.Expression, number][] = [];
  if (rb >= 2 && dimsAgree(innerA, tb.shape[rb - 1])) candidates.push([b, rb]);
  if (ra >= 2 && dimsAgree(ta.shape[ra - 2], innerB)) candidates.push([a, ra]);
  return candidates.map(([operand, rank]) => {
    // transpose() without a permutation reverses every axis, which swaps only a matrix's two.
    const perm = rank === 2 ? "" : `, [${[...Array(rank - 2).keys(), rank - 1, rank - 2].join(", ")}]`;
    const what = label(site, operand);
    return { name: "transpose", description: `Transpose ${what}: transpose(${what}${perm})`, changes: wrapIn(site, operand, "transpose", perm) };
  });
}

/** FT202: `matmul(w, x)` for `matmul(x, w)`, when the other order contracts agreeing dims. */
function swapOperands(site: Site): Fix[] {
  const operands = twoTensors(site);
  if (messageParams(site.message)?.["op"] !== "matmul" || operands === undefined) return [];
  const { a, ta, b, tb } = operands;
  if (ta.shape.length < 2 || tb.shape.length < 2 || !dimsAgree(tb.shape[tb.shape.length - 1], ta.shape[ta.shape.length - 2])) return [];
  const [first, second] = [b.getText(site.file), a.getText(site.file)];
  const callee = site.call.expression.getText(site.file);
  return [
    {
      name: "swap-operands",
      description: `Swap the operands: ${callee}(${label(site, b)}, ${label(site, a)})`,
      changes: [replace(a, site.file, first), replace(b, site.file, second)],
    },
  ];
}

/** A known-rank shape's element count as a literal product and a list of named factors; undefined if unknown. */
function elementCount(shape: readonly DimValue[]): { literal: bigint; names: string[] } | undefined {
  let literal = 1n;
  const names: string[] = [];
  for (const d of shape) {
    if (d === null) return undefined;
    if (typeof d === "string") names.push(d);
    else literal *= BigInt(d);
  }
  return { literal, names };
}

/** Whether every name of part occurs in whole, counting repeats. */
function namesDivide(whole: readonly string[], part: readonly string[]): boolean {
  const left = [...whole];
  return part.every((name) => left.includes(name) && left.splice(left.indexOf(name), 1).length === 1);
}

/** FT203: -1 in place of one target dim, where the other dims divide the element count. */
function inferOneDim(site: Site): Fix[] {
  const source = leafOf(site, site.call.arguments[0]);
  const { typescript } = site;
  const target = site.node;
  if (source === undefined || !hasKnownRank(source) || !typescript.isArrayLiteralExpression(target)) return [];
  const sourceCount = elementCount(source.shape);
  const dims = target.elements.map((e): DimValue | undefined =>
    typescript.isNumericLiteral(e) ? Number(e.text) : typescript.isStringLiteral(e) ? e.text : undefined,
  );
  if (sourceCount === undefined || dims.some((d) => d === undefined)) return [];
  return dims.flatMap((_, i) => {
    const rest = elementCount(dims.filter((__, j) => j !== i) as DimValue[]);
    if (rest === undefined || rest.literal === 0n || sourceCount.literal % rest.literal !== 0n) return [];
    if (!namesDivide(sourceCount.names, rest.names)) return [];
    const shown = `[${dims.map((d, j) => (j === i ? "-1" : JSON.stringify(d))).join(", ")}]`;
    return [{ name: "reshape-infer", description: `Let reshape() infer dim ${i}: ${shown}`, changes: [replace(target.elements[i]!, site.file, "-1")] }];
  });
}

const dtypeNames = { f32: "float32", i32: "int32", bool: "bool" } as const;

/** Whether FT205 is about int32 class labels given to softmaxCrossEntropy(), which wants one-hot rows. */
function isIntegerLabels(site: Site): boolean {
  const params = messageParams(site.message);
  return params?.["op"] === "softmaxCrossEntropy" && params["got"] === "i32" && site.call.arguments[1] === site.node;
}

/**
 * FT205 on int32 labels: casting class ids to float32 type-checks only to compute a nonsense
 * loss, so the fixes are the loss over class ids, sparseSoftmaxCrossEntropy(logits, y), and
 * one-hot rows, oneHot(y, classes) with the class count read from the logits.
 */
function labelFixes(site: Site): Fix[] {
  if (!isIntegerLabels(site)) return [];
  const what = label(site, site.node);
  const sparse = fedTensorCallee(site.typescript, site.checker, site.file, site.call, "sparseSoftmaxCrossEntropy");
  const fixes: Fix[] = [
    {
      name: "sparse-loss",
      description: `Use the loss over class ids: sparseSoftmaxCrossEntropy(…, ${what})`,
      changes: [...(sparse.importEdit === undefined ? [] : [sparse.importEdit]), replace(site.call.expression, site.file, sparse.text)],
    },
  ];
  const classes = leafOf(site, site.call.arguments[0])?.shape.at(-1);
  if (typeof classes === "number") {
    fixes.push({ name: "one-hot", description: `One-hot encode ${what}: oneHot(${what}, ${classes})`, changes: wrapIn(site, site.node, "oneHot", `, ${classes}`) });
  }
  return fixes;
}

/** FT205: cast the operand whose dtype the message names to the dtype it asks for. */
function castOperand(site: Site): Fix[] {
  const params = messageParams(site.message);
  const leaf = leafOf(site, site.node);
  const [want, got] = [params?.["want"], params?.["got"]];
  if (want === undefined || got === undefined || leaf === undefined || dtypeNames[got as keyof typeof dtypeNames] !== leaf.dtype) return [];
  if (isIntegerLabels(site)) return [];
  // "f32 or i32" (a bool given where numbers belong) casts to float32, the default numeric dtype.
  const dtype = want in dtypeNames ? dtypeNames[want as keyof typeof dtypeNames] : "float32";
  const what = label(site, site.node);
  return [{ name: "cast", description: `Cast ${what} to ${dtype}: cast(${what}, "${dtype}")`, changes: wrapIn(site, site.node, "cast", `, "${dtype}"`) }];
}

/**
 * FT109: reduceSum() of private data becomes dpSum() with a random key in scope (a SERVER or
 * local i32[2] value: the program's key input); clip and noise multiplier are placeholders
 * that the description asks the user to set. The other reductions have no drop-in DP form
 * (a mean divides by a count the DP sum must not reveal), nor has a private output.
 */
function dpSumInstead(site: Site): Fix[] {
  if (site.call.expression.getText(site.file).replace(/^.*\./, "") !== "reduceSum" || site.call.arguments.length !== 1) return [];
  const key = randomKeyInScope(site);
  if (key === undefined) return [];
  const dpSum = fedTensorCallee(site.typescript, site.checker, site.file, site.call, "dpSum");
  const what = label(site, site.node);
  const options = `{ clip: 1, noiseMultiplier: 1, ${key === "key" ? key : `key: ${key}`} }`;
  return [
    {
      name: "dp-sum",
      description: `Aggregate ${what} with differential privacy: dpSum(${what}, ${options}) (set the clip norm and noise multiplier)`,
      changes: [...(dpSum.importEdit === undefined ? [] : [dpSum.importEdit]), replace(site.call.expression, site.file, dpSum.text), insert(site.node.getEnd(), `, ${options}`)],
    },
  ];
}

/** The name of a variable in scope at the call that holds a random key at the SERVER or local. */
function randomKeyInScope(site: Site): string | undefined {
  const { typescript, checker, call } = site;
  const isKey = (t: ValueType | undefined) =>
    t !== undefined && t.dtype === "int32" && t.shape.length === 1 && t.shape[0] === 2 && (t.placement === "server" || t.placement === "local") && t.private !== true;
  return checker
    .getSymbolsInScope(call, typescript.SymbolFlags.Variable)
    .find((symbol) => isKey(leafType(checker, checker.getTypeOfSymbolAtLocation(symbol, call))))?.name;
}

/**
 * FT109 for private data given to a helper typed with the public aliases: the helper's
 * signature (in this file) typed with the private ones instead, every AtClients and Member in
 * it, so that its result is private too. A private learning rate has no such fix.
 */
const privateAliases: { readonly [name: string]: string } = { AtClients: "PrivateAtClients", Member: "PrivateMember" };
function privateHelperTypes(site: Site): Fix[] {
  const { typescript, checker, file } = site;
  const declaration = checker.getResolvedSignature(site.call)?.getDeclaration();
  if (declaration === undefined || declaration.getSourceFile() !== file || !typescript.isFunctionLike(declaration)) return [];
  const references: ts.TypeReferenceNode[] = [];
  const visit = (node: ts.Node): void => {
    if (typescript.isTypeReferenceNode(node) && publicAliasName(typescript, node.typeName) !== undefined) references.push(node);
    typescript.forEachChild(node, visit);
  };
  for (const parameter of declaration.parameters) if (parameter.type !== undefined) visit(parameter.type);
  if (declaration.type !== undefined) visit(declaration.type);
  if (references.length === 0) return [];
  const changes: ts.TextChange[] = [];
  const imported = new Set<string>();
  for (const reference of references) {
    const name = publicAliasName(typescript, reference.typeName)!;
    const identifier = typescript.isIdentifier(reference.typeName) ? reference.typeName : reference.typeName.right;
    changes.push(replace(identifier, file, privateAliases[name]!));
    const specifier = checker.getSymbolAtLocation(identifier)?.declarations?.[0];
    if (typescript.isIdentifier(reference.typeName) && specifier !== undefined && typescript.isImportSpecifier(specifier) && !imported.has(name)) {
      imported.add(name);
      const alreadyImported = specifier.parent.elements.some((e) => (e.propertyName ?? e.name).text === privateAliases[name]);
      if (!alreadyImported) changes.push(insert(specifier.getEnd(), `, ${specifier.isTypeOnly ? "type " : ""}${privateAliases[name]}`));
    }
  }
  const helper = declaration.name?.getText(file) ?? "the helper";
  return [{ name: "private-helper-types", description: `Type ${helper}'s values with ${[...new Set(references.map((r) => privateAliases[publicAliasName(typescript, r.typeName)!]))].join(" and ")}: it takes private data`, changes }];
}
const publicAliasName = (typescript: typeof ts, name: ts.EntityName): string | undefined => {
  const text = typescript.isIdentifier(name) ? name.text : name.right.text;
  return text in privateAliases ? text : undefined;
};

/** FT302 for a number as a loop's initial carry: the scalar tensor it stands for. */
function scalarCarry(site: Site): Fix[] {
  const { typescript, file, node } = site;
  if (!/ initial carry: /.test(site.message.text) || !typescript.isNumericLiteral(node)) return [];
  const zero = Number(node.text) === 0;
  const callee = fedTensorCallee(typescript, site.checker, file, site.call, zero ? "zeros" : "full");
  const text = zero ? `${callee.text}([])` : `${callee.text}([], ${node.text})`;
  return [{ name: "scalar-carry", description: `Start the carry from a scalar tensor: ${text}`, changes: [...(callee.importEdit === undefined ? [] : [callee.importEdit]), replace(node, file, text)] }];
}

const fixesByCode: { readonly [C in ErrorCode]?: (site: Site) => Fix[] } = {
  FT101: reduceBeforeBroadcast,
  FT102: broadcastMapArgument,
  FT103: removeReduction,
  FT104: moveOperands,
  FT201: reshapeForBroadcast,
  FT202: (site) => [...swapOperands(site), ...transposeOperand(site)],
  FT203: inferOneDim,
  FT205: (site) => [...labelFixes(site), ...castOperand(site)],
  FT109: (site) => [...dpSumInstead(site), ...privateHelperTypes(site)],
  FT302: scalarCarry,
};

/**
 * The candidate FedTensor fixes for the FT diagnostics (as TypeScript reported them, before
 * they were explained) that overlap [start, end] and have one of errorCodes, each once: a
 * diagnostic with two messages that call for the same fix offers it once.
 */
export function candidateFixes(
  typescript: typeof ts,
  program: ts.Program,
  diagnostics: readonly ts.Diagnostic[],
  fileName: string,
  start: number,
  end: number,
  errorCodes: readonly number[],
): ts.CodeFixAction[] {
  const file = program.getSourceFile(fileName);
  if (file === undefined) return [];
  const checker = program.getTypeChecker();
  const actions = new Map<string, ts.CodeFixAction>();
  for (const diagnostic of diagnostics) {
    const { start: at, length } = diagnostic;
    if (at === undefined || length === undefined || at > end || at + length < start || !errorCodes.includes(diagnostic.code)) continue;
    const node = nodeWithSpan(typescript, file, at, length);
    const call = node?.parent;
    if (node === undefined || call === undefined || !typescript.isCallExpression(call) || !call.arguments.some((a) => a === node)) continue;
    for (const message of ftMessagesOf(typescript, program, diagnostic)) {
      const site: Site = { typescript, checker, file, message, node: node as ts.Expression, call };
      for (const fix of fixesByCode[message.code]?.(site) ?? []) {
        const textChanges = [...fix.changes].sort((x, y) => x.span.start - y.span.start);
        const key = JSON.stringify([fix.description, textChanges]);
        if (!actions.has(key)) actions.set(key, { fixName: `fedtensor-${fix.name}`, description: fix.description, changes: [{ fileName, textChanges }] });
      }
    }
  }
  return [...actions.values()];
}
