/**
 * The `fedtensor` command line: one subcommand per file in this folder.
 * Exit status: 0 success, 1 the command found errors (type errors, a failed run), 2 bad usage,
 * 70 an internal error (a bug: the message says so and where to report it).
 */
import { FedTensorError } from "../errors/error.js";
import { redactCredentials } from "../errors/redact.js";
import { fileFault } from "../lib/run/file-faults.js";
import { auditCommand } from "./audit.js";
import { checkCommand } from "./check.js";
import { clientCommand } from "./client.js";
import { UsageError, type Command } from "./command.js";
import { execCommand } from "./exec.js";
import { exportCommand } from "./export.js";
import { initCommand } from "./init.js";
import { irCommand } from "./ir.js";
import { planCommand } from "./plan.js";
import { runCommand } from "./run.js";
import { serveCommand } from "./serve.js";
import { workerCommand } from "./worker.js";

const commands: readonly Command[] = [
  initCommand,
  execCommand,
  runCommand,
  workerCommand,
  serveCommand,
  clientCommand,
  checkCommand,
  irCommand,
  exportCommand,
  planCommand,
  auditCommand,
];

function help(): string {
  const width = Math.max(...commands.map((c) => c.name.length));
  return [
    "usage: fedtensor <command> [options]",
    "",
    "commands:",
    ...commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    "",
    "`fedtensor <command> --help` describes a command.",
  ].join("\n");
}

export async function main(argv: readonly string[]): Promise<number> {
  const [name, ...args] = argv;
  if (name === undefined || name === "--help" || name === "-h" || name === "help") {
    console.log(help());
    return name === undefined ? 2 : 0;
  }
  const command = commands.find((c) => c.name === name);
  if (command === undefined) {
    console.error(`fedtensor: unknown command '${name}'\n\n${help()}`);
    return 2;
  }
  if (args.includes("--help") || args.includes("-h")) {
    console.log(command.usage);
    return 0;
  }
  try {
    return await command.run(args);
  } catch (thrown) {
    return reportFailure(command, argv, thrown);
  }
}

/** Prints why `command` failed, as its user needs it, and returns the exit status. */
export function reportFailure(command: Pick<Command, "name" | "usage">, argv: readonly string[], thrown: unknown): number {
  const { name } = command;
  if (thrown instanceof UsageError) {
    console.error(redactCredentials(`fedtensor ${name}: ${thrown.message}\n\n${command.usage}`));
    return 2;
  }
  // A file-system error that no caller named is still a fault of the disk, not a bug.
  const error = fileFault(thrown, (thrown as NodeJS.ErrnoException).path ?? "a file", "complete the command");
  if (error instanceof FedTensorError) {
    // A mistake in the user's program shows the user's line, never FedTensor's stack.
    const where = error.location === undefined ? "" : `\n${error.location.text.replace(/^/gm, "  ")}`;
    console.error(`fedtensor ${name}: ${error.message}${where}\n  why: ${error.explanation}\n  fix: ${error.fix}`);
    // An unknown or invalid option is bad usage; other FT errors are failures of the work.
    return error.code === "FT305" ? 2 : 1;
  }
  // The report repeats the command line and a stack: a password in an --engine URL stays out.
  console.error(redactCredentials(internalErrorReport(name, argv, error)));
  return internalErrorStatus;
}

/** sysexits.h EX_SOFTWARE: an internal software error, told apart from a failed run (1) and bad usage (2). */
export const internalErrorStatus = 70;

/** What an unexpected error prints: that it is a bug, where to report it, and what to include. */
function internalErrorReport(name: string, argv: readonly string[], error: unknown): string {
  const detail = error instanceof Error ? (error.stack ?? `${error.name}: ${error.message}`) : String(error);
  return [
    `fedtensor ${name}: internal error. This is a bug in FedTensor, not a mistake in your command or data.`,
    "Please report it on the FedTensor issue tracker (README.md, \"Reporting a bug\") with everything below:",
    `  command: fedtensor ${argv.join(" ")}`,
    `  node ${process.version} on ${process.platform}-${process.arch}`,
    detail,
  ].join("\n");
}
