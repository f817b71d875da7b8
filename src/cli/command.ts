import { relative } from "node:path";

/**
 * What every `fedtensor` subcommand is, kept apart from main.ts so that the subcommands and
 * the dispatcher that lists them do not import each other.
 */
export interface Command {
  readonly name: string;
  readonly summary: string;
  readonly usage: string;
  run(args: readonly string[]): Promise<number>;
}

/** Bad usage (an unknown option, a missing argument): main prints the usage and exits 2. */
export class UsageError extends Error {}

/**
 * A command's own `--name value` (or `--name=value`) flags taken out of arguments that are
 * otherwise `fedtensor run`'s (serve, plan and audit take a run's options and a few of their
 * own); the rest keep their order. A flag given twice keeps its last value.
 */
export function takeFlags(args: readonly string[], names: ReadonlySet<string>): { flags: Record<string, string>; rest: string[] } {
  const flags: Record<string, string> = {};
  const rest: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const equals = arg.indexOf("=");
    const name = arg.startsWith("--") ? arg.slice(2, equals < 0 ? undefined : equals) : undefined;
    if (name === undefined || !names.has(name)) {
      rest.push(arg);
      continue;
    }
    const value = equals < 0 ? args[++i] : arg.slice(equals + 1);
    if (value === undefined) throw new UsageError(`--${name} needs a value`);
    flags[name] = value;
  }
  return { flags, rest };
}

/** A path as short as it can be: relative inside the current folder, absolute outside it. */
export function shown(path: string): string {
  const inside = relative(process.cwd(), path);
  return inside === "" || inside.startsWith("..") ? path : inside;
}
