/**
 * The kinds of `fedtensor run` option (integer, number, choice, text, switch) and what an
 * option may declare: its range in words, a validator, a default that depends on another
 * option, the options it applies with, and whether --resume may change it.
 */
/** An option that only means something for some values of a choice option, such as --mu for fedprox. */
export interface Condition {
  readonly key: string;
  /** The values it holds for, or (with `holds`) their description. */
  readonly values: readonly string[];
  /** Whether it holds for the key's value, when not one of `values` (an --aggregator chain with dp, say). */
  readonly holds?: (value: unknown) => boolean;
}

export interface OptionSpec<T> {
  readonly type: "integer" | "number" | "choice" | "text" | "switch";
  readonly default: T;
  /** What values are allowed, in words, for errors and the help table. */
  readonly range: string;
  readonly description: string;
  /** Whether a value (from a flag or a config file) is allowed. */
  readonly accepts: (value: unknown) => value is T;
  /** A different default when another option has one of some values (e.g. the adaptive optimisers' server learning rate). */
  readonly defaultWhen?: Condition & { readonly value: T };
  /**
   * Whether --resume may give the option a new value: true for options that do not change
   * what a round computes (how many rounds, how often to evaluate, where and on what to run).
   * Any other option given on resume must equal the checkpoint's (src/lib/run/resume-config.ts).
   */
  readonly mayChangeOnResume?: boolean;
}

interface Bounds {
  readonly min: number;
  readonly minExclusive?: boolean;
  readonly max?: number;
  readonly maxExclusive?: boolean;
}

function boundsText({ min, minExclusive, max, maxExclusive }: Bounds): string {
  if (max === undefined) return `${minExclusive ? ">" : ">="} ${min}`;
  return `${min} ${minExclusive ? "<" : "<="} x ${maxExclusive ? "<" : "<="} ${max}`;
}

function withinBounds(x: number, { min, minExclusive, max, maxExclusive }: Bounds): boolean {
  if (minExclusive ? x <= min : x < min) return false;
  return max === undefined || (maxExclusive ? x < max : x <= max);
}

/**
 * Whether `x` keeps its meaning in float32, the precision the programs compute in: finite there
 * (1e39 is Infinity) and not flushed to 0 (--lr 1e-320 would train nothing). Every real option
 * is held to it; the few computed on the host in float64 (deltas, epsilons) lose nothing real,
 * as a value below float32's smallest (1.4e-45) or above its largest (3.4e38) is no setting.
 */
export function float32Representable(x: number): boolean {
  const single = Math.fround(x);
  return Number.isFinite(single) && (single !== 0 || x === 0);
}

function numeric(type: "integer" | "number", description: string, fallback: number, bounds: Bounds): OptionSpec<number> {
  const isKind = type === "integer" ? Number.isSafeInteger : (x: unknown) => Number.isFinite(x) && float32Representable(x as number);
  return {
    type,
    default: fallback,
    range: `${type} ${boundsText(bounds)}`,
    description,
    accepts: (value): value is number => isKind(value) && withinBounds(value as number, bounds),
  };
}

export const integer = numeric.bind(undefined, "integer");
export const real = numeric.bind(undefined, "number");

export function choice<const V extends string>(description: string, values: readonly V[]): OptionSpec<V> {
  return {
    type: "choice",
    default: values[0]!,
    range: values.join(" | "),
    description,
    accepts: (value): value is V => (values as readonly unknown[]).includes(value),
  };
}

export function text(description: string, fallback: string): OptionSpec<string> {
  return {
    type: "text",
    default: fallback,
    range: "non-empty text",
    description,
    accepts: (value): value is string => typeof value === "string" && value.length > 0,
  };
}

export function switchOption(description: string): OptionSpec<boolean> {
  return {
    type: "switch",
    default: false,
    range: "true | false",
    description,
    accepts: (value): value is boolean => typeof value === "boolean",
  };
}

export function mayChangeOnResume<S extends OptionSpec<unknown>>(spec: S): S {
  return { ...spec, mayChangeOnResume: true };
}

export function onlyWhen<T>(condition: Condition, spec: OptionSpec<T>): OptionSpec<T> & { readonly onlyWhen: Condition } {
  return { ...spec, onlyWhen: condition };
}
