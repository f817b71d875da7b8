/**
 * The `fedtensor` command line: one subcommand per file in this folder.
 * Exit status: 0 success, 1 the command found errors (type errors, a failed run), 2 bad usage.
 */
import { FedTensorError } from "../errors/error.js";
import { checkCommand } from "./check.js";
import { UsageError, type Command } from "./command.js";
import { exportCommand } from "./export.js";
import { irCommand } from "./ir.js";
import { runCommand } from "./run.js";

const commands: readonly Command[] = [runCommand, checkCommand, irCommand, exportCommand];

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
  } catch (error) {
    if (error instanceof UsageError) {
      console.error(`fedtensor ${name}: ${error.message}\n\n${command.usage}`);
      return 2;
    }
    if (error instanceof FedTensorError) {
      console.error(`fedtensor ${name}: ${error.message}\n  why: ${error.explanation}\n  fix: ${error.fix}`);
      // An unknown or invalid option is bad usage; other FT errors are failures of the work.
      return error.code === "FT305" ? 2 : 1;
    }
    throw error;
  }
}
