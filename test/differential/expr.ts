/**
 * Building a program and its source text at once. A generated program is written as calls of
 * the public API; each call is an Expr that knows both its TypeScript text and how to make the
 * traced value, so the code printed in a failure report is exactly what ran.
 */
import * as ft from "../../src/index.js";

/** Where a value lives, for choosing operands that may meet: members meet members, and so on. */
export type Side = "server" | "clients" | "member";

/** An expression of the public API: its source text and how to build it. */
export interface Expr {
  readonly code: string;
  /** Depends on the parameters being differentiated (gradient programs only). */
  readonly active: boolean;
  build(): unknown;
}

/** A named traced value of the program being generated. */
export interface Val extends Expr {
  readonly value: Traced;
  /** An upper bound on |entries|, so that generated steps keep float32 accurate. */
  readonly bound: number;
}

/** What the builder reads from a traced value (the public Tensor type carries the same). */
export interface Traced {
  readonly shape: readonly number[];
  readonly placement: string;
}

/** An options record (`{ exclusive: true }`) is written as JSON and passed as is. */
export type Arg = Expr | number | string | boolean | undefined | readonly number[] | readonly (readonly number[])[] | readonly Expr[] | Readonly<Record<string, boolean>>;

const isExpr = (x: unknown): x is Expr => typeof x === "object" && x !== null && "code" in x && "build" in x;

function codeOf(arg: Arg): string {
  if (isExpr(arg)) return arg.code;
  if (Array.isArray(arg)) return `[${arg.map((a: Arg) => codeOf(a)).join(", ")}]`;
  return arg === undefined ? "undefined" : JSON.stringify(arg);
}

function valueOf(arg: Arg): unknown {
  if (isExpr(arg)) return arg.build();
  if (Array.isArray(arg)) return arg.map((a: Arg) => valueOf(a));
  return arg;
}

const activeIn = (args: readonly Arg[]): boolean => args.some((arg) => (isExpr(arg) ? arg.active : Array.isArray(arg) && activeIn(arg as Arg[])));

type ApiFunction = { [K in keyof typeof ft]: (typeof ft)[K] extends (...args: never[]) => unknown ? K : never }[keyof typeof ft];

/** A call of the public API function `name`. */
export function call(name: ApiFunction, ...args: Arg[]): Expr {
  return {
    code: `${name}(${args.map(codeOf).join(", ")})`,
    active: activeIn(args),
    build: () => (ft[name] as (...xs: unknown[]) => unknown)(...args.map(valueOf)),
  };
}

/** A field of a record an expression returns (`topk(x, 2).values`). */
export function fieldOf(record: Expr, key: string): Expr {
  return { code: `${record.code}.${key}`, active: record.active, build: () => (record.build() as Record<string, unknown>)[key] };
}

/** Source text of the generated program, indented by nesting. */
export class Writer {
  readonly lines: string[] = [];
  private depth = 0;
  private nextName = 0;

  line(text: string): void {
    this.lines.push(`${"  ".repeat(this.depth)}${text}`);
  }

  /**
   * Writes `open`, then what `inner` writes one level deeper, then `close`. `open` is made after
   * `inner` has run, so that it can name what inner produced.
   */
  block<T>(open: (result: T) => string, inner: () => T, close: string): T {
    const at = this.lines.length;
    const indent = "  ".repeat(this.depth);
    this.lines.push("");
    this.depth++;
    const result = inner();
    this.depth--;
    this.lines[at] = `${indent}${open(result)}`;
    this.line(close);
    return result;
  }

  fresh(): string {
    return `v${this.nextName++}`;
  }

  toString(): string {
    return this.lines.join("\n");
  }
}

export const sideOf = (v: Val): Side =>
  v.value.placement === "server" ? "server" : v.value.placement.startsWith("clients") ? "clients" : "member";

export const sizeOf = (shape: readonly number[]): number => shape.reduce((n, d) => n * d, 1);

/** A value made outside any expression (a program input or a lambda parameter). */
export function named(name: string, value: unknown, bound: number, active: boolean): Val {
  return { code: name, build: () => value, value: value as Traced, bound, active };
}

/**
 * The values a generated function body can use, and the writer it writes to. `federated`
 * bodies (the program's and loops' at top level) may use placement primitives.
 */
export class Scope {
  /** How many values the scope started with (captures and parameters). */
  private readonly given: number;

  constructor(
    readonly writer: Writer,
    readonly pool: Val[],
    readonly federated: boolean,
    readonly clients: number,
    /** Inside a map whose members already differ: per-client values (clientIndex()) keep its result's type. */
    readonly membersDiffer = false,
  ) {
    this.given = pool.length;
  }

  /** The values made in this scope. */
  made(): Val[] {
    return this.pool.slice(this.given);
  }

  /** Writes `const vN = expr;`, builds it and adds it to the pool. */
  emit(expr: Expr, bound: number): Val {
    const name = this.writer.fresh();
    this.writer.line(`const ${name} = ${expr.code};`);
    const val = named(name, expr.build(), bound, expr.active);
    this.pool.push(val);
    return val;
  }

  /** A scope for a nested function: its own parameters after the outer values it may capture. */
  child(params: readonly Val[], captures: readonly Val[], federated: boolean, membersDiffer = false): Scope {
    return new Scope(this.writer, [...captures, ...params], federated, this.clients, membersDiffer);
  }

  /**
   * The value `pick` selects among those that pass `filter`, counting back from the newest
   * (so that small picks, where shrinking goes, build chains).
   */
  choose(pick: number, filter: (v: Val) => boolean = () => true): Val | undefined {
    const candidates = this.pool.filter(filter);
    if (candidates.length === 0) return undefined;
    // Even picks take one of the three newest, odd picks any: chains, with some fan-in.
    const back = pick % 2 === 0 ? (pick >> 1) % Math.min(3, candidates.length) : (pick >> 1) % candidates.length;
    return candidates[candidates.length - 1 - back];
  }

  /** v scaled by a power of two (exact in float32) or squashed, so that |entries| <= limit. */
  tame(v: Val, limit: number): Val {
    if (v.bound <= limit) return v;
    if (!Number.isFinite(v.bound)) return this.emit(call("tanh", v), 1);
    const factor = 2 ** -Math.ceil(Math.log2(v.bound / limit));
    return this.emit(call("mul", v, factor), v.bound * factor);
  }
}

/** Values in a list, nested: what a generated function returns. */
export type ValTree = Val | readonly ValTree[] | { readonly [key: string]: ValTree };

const isVal = (t: ValTree): t is Val => "code" in t && "value" in t;

export function codeOfTree(tree: ValTree): string {
  if (isVal(tree)) return tree.code;
  if (Array.isArray(tree)) return `[${tree.map(codeOfTree).join(", ")}]`;
  return `{ ${Object.entries(tree).map(([k, v]) => `${k}: ${codeOfTree(v)}`).join(", ")} }`;
}

export function valueOfTree(tree: ValTree): unknown {
  if (isVal(tree)) return tree.value;
  if (Array.isArray(tree)) return tree.map(valueOfTree);
  return Object.fromEntries(Object.entries(tree).map(([k, v]) => [k, valueOfTree(v)]));
}

/** Source text of a call that takes a function literal, split around it. */
interface CallSite {
  /** Text before the function literal, e.g. `scan(v3, v4, `. */
  readonly before: string;
  /** The function's parameter list, e.g. `v7, v8` or `[v7, v8]`. */
  readonly params: string;
  /** Text after the function literal's closing brace, e.g. `)(v5)`. */
  readonly after: string;
}

/** Names the parts of `value` after `template` (values whose bounds and activity they take) and adds them to the pool; returns the destructuring pattern. */
function bindResult(scope: Scope, template: ValTree, value: unknown): string {
  if (isVal(template)) {
    const name = scope.writer.fresh();
    scope.pool.push(named(name, value, template.bound, template.active));
    return name;
  }
  return `[${(template as readonly ValTree[]).map((t, i) => bindResult(scope, t, (value as unknown[])[i])).join(", ")}]`;
}

/**
 * Writes `const <names> = <before>(<params>) => { ... return <body's result>; }<after>;` around
 * `invoke`, which calls the API with the function made of `body`. The API's result, shaped as
 * `resultOf(what body returned)`, goes into the pool.
 */
export function withFunction(
  scope: Scope,
  site: CallSite,
  body: (...args: unknown[]) => ValTree,
  invoke: (fn: (...args: unknown[]) => unknown) => unknown,
  resultOf: (returned: ValTree) => ValTree = (returned) => returned,
): void {
  let returned: ValTree | undefined;
  scope.writer.block(
    (result) => `const ${bindResult(scope, resultOf(returned!), result)} = ${site.before}(${site.params}) => {`,
    () =>
      invoke((...args) => {
        returned = body(...args);
        scope.writer.line(`return ${codeOfTree(returned)};`);
        return valueOfTree(returned);
      }),
    `}${site.after};`,
  );
}
