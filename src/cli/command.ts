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

/** A path as short as it can be: relative inside the current folder, absolute outside it. */
export function shown(path: string): string {
  const inside = relative(process.cwd(), path);
  return inside === "" || inside.startsWith("..") ? path : inside;
}
