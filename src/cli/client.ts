/**
 * `fedtensor client --server URL --token T (--data FILE | --dataset NAME --client-index i)`:
 * one client of `fedtensor serve`, training locally with onnxruntime-node (docs/deployment.md).
 */
import { parseArgs } from "node:util";
import { ftError } from "../errors/error.js";
import { UsageError, type Command } from "./command.js";

export const clientCommand: Command = {
  name: "client",
  summary: "take part in a `fedtensor serve` run as a client, training on local data",
  usage: [
    "usage: fedtensor client --server ws://host:port/fedtensor --token T (--data FILE | --dataset mnist --client-index i)",
    "                        [--token-file FILE] [--ca cert.pem] [--max-backoff 30] [--exit-when-done] [--identity-key FILE]",
    "                        [--state-dir DIR] [--threads N]",
    "",
    "Connects to the server, trains the client part it ships on this machine's examples, and sends",
    "only the update. Reconnects with backoff when the connection drops (a server restart); stops when",
    "the run finishes (0), when refused (a bad, revoked or in-use token: FT340) or when the server's",
    "certificate is not trusted (FT353).",
    "",
    "  --server URL          ws:// or wss:// (the server's --tls-cert) address; /fedtensor is the path",
    "  --token T             this client's token (one line of the server's --client-tokens file)",
    "  --token-file FILE     read the token from a file instead (keeps it out of the process list)",
    "  --data FILE           the examples: a record file with x [n, ...] and y [n] (docs/deployment.md)",
    "  --dataset NAME --client-index i   client i of the run's partition of NAME (demos and tests)",
    "  --ca FILE             PEM certificate(s) to trust, for a server with a self-signed certificate",
    "  --max-backoff S       the longest wait between reconnections (default 30)",
    "  --exit-when-done      exit (0) when the server goes away (stopped, killed) instead of waiting for it to",
    "                        come back with --resume; a run that finishes always ends the client (0)",
    "  --identity-key FILE   this client's SecAgg+ identity (an Ed25519 key, made there on first use, mode 0600):",
    "                        a restarted client keeps the identity its peers pinned (docs/deployment.md)",
    "  --state-dir DIR       where a stateful run (fedper, ditto, scaffold) keeps this client's state, one file",
    "                        per run and client, mode 0600, never sent (default ~/.fedtensor/client-state)",
    "  --threads N           at most N onnxruntime threads for local training (default: one per core), to",
    "                        leave the machine's other cores to its owner's work (1 where many clients share a machine)",
  ].join("\n"),
  async run(args) {
    let values: Record<string, string | boolean | undefined>;
    try {
      ({ values } = parseArgs({
        args: [...args],
        options: {
          server: { type: "string" },
          token: { type: "string" },
          "token-file": { type: "string" },
          data: { type: "string" },
          dataset: { type: "string" },
          "client-index": { type: "string" },
          ca: { type: "string" },
          "max-backoff": { type: "string" },
          "exit-when-done": { type: "boolean" },
          "identity-key": { type: "string" },
          "state-dir": { type: "string" },
          threads: { type: "string" },
        },
        strict: true,
        allowPositionals: false,
      }) as { values: Record<string, string | boolean | undefined> });
    } catch (error) {
      throw new UsageError((error as Error).message);
    }
    const server = values.server as string | undefined;
    if (server === undefined || !/^wss?:\/\//.test(server)) throw new UsageError("--server ws://host:port/fedtensor (or wss://) is required");
    const { readFileSync } = await import("node:fs");
    const token = (values.token as string | undefined) ?? (values["token-file"] === undefined ? undefined : readFileSync(values["token-file"] as string, "utf8").trim());
    if (token === undefined || token === "") throw new UsageError("--token T or --token-file FILE is required");
    const file = values.data as string | undefined;
    const dataset = values.dataset as string | undefined;
    if ((file === undefined) === (dataset === undefined)) throw new UsageError("give --data FILE or --dataset NAME --client-index i");
    const index = Number(values["client-index"]);
    if (dataset !== undefined && !(Number.isInteger(index) && index >= 0)) throw new UsageError("--dataset needs --client-index i, a whole number from 0");
    const backoff = Number(values["max-backoff"] ?? 30);
    if (!(backoff > 0 && backoff <= 3600)) throw ftError("FT305", { option: "--max-backoff", why: `expected seconds in (0, 3600], got ${String(values["max-backoff"])}` });
    const threads = values.threads === undefined ? undefined : Number(values.threads);
    if (threads !== undefined && !(Number.isInteger(threads) && threads >= 1 && threads <= 1024)) throw ftError("FT305", { option: "--threads", why: `expected a whole number of threads from 1 to 1024, got ${String(values.threads)}` });
    const { runNodeClient } = await import("../deploy/client/node.js");
    const log = (line: string) => console.log(`${new Date().toISOString()} ${line}`);
    return runNodeClient({
      server,
      token,
      data: file !== undefined ? { file } : { dataset: dataset!, clientIndex: index },
      ...(values.ca === undefined ? {} : { ca: values.ca as string }),
      maxBackoffMs: backoff * 1000,
      exitWhenServerStops: values["exit-when-done"] === true,
      ...(values["identity-key"] === undefined ? {} : { identityKeyFile: values["identity-key"] as string }),
      ...(values["state-dir"] === undefined ? {} : { stateDir: values["state-dir"] as string }),
      ...(threads === undefined ? {} : { threads }),
      log,
    });
  },
};
