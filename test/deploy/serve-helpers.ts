/** `fedtensor serve` and `fedtensor client` as real child processes on 127.0.0.1, as a user runs them. */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { encodeRecord } from "../../src/deploy/protocol/record.js";
import { cli } from "../run/cli.js";
import { deadline } from "../helpers/deadline.js";

export interface Process {
  readonly child: ChildProcess;
  /** Everything it printed so far (stdout and stderr). */
  output(): string;
  /** Resolves with the first match of `pattern` in its output, when it appears. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Resolves with its exit code. */
  exited(): Promise<number | null>;
}

export function startProcess(args: readonly string[]): Process {
  const child = spawn(process.execPath, [cli, ...args], { stdio: ["ignore", "pipe", "pipe"] });
  let text = "";
  const listeners = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    text += chunk.toString();
    listeners.forEach((l) => l());
  };
  child.stdout!.on("data", onData);
  child.stderr!.on("data", onData);
  const exit = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return {
    child,
    output: () => text,
    waitFor: (pattern, timeoutMs = 60_000) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const match = text.match(pattern);
          if (match === null) return;
          listeners.delete(check);
          clearTimeout(timer);
          resolve(match);
        };
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(new Error(`no ${pattern} within ${timeoutMs} ms in:\n${text.slice(-3000)}`));
        }, deadline(timeoutMs));
        listeners.add(check);
        check();
      }),
    exited: () => exit,
  };
}

/** A tokens file of `count` fresh tokens, and the tokens. */
export function writeTokens(dir: string, count: number): { path: string; tokens: string[] } {
  const tokens = Array.from({ length: count }, () => randomBytes(16).toString("hex"));
  const path = join(dir, "tokens.txt");
  writeFileSync(path, `# one token per client\n${tokens.join("\n")}\n`);
  return { path, tokens };
}

/** A small MNIST run for the tests: the 2NN on 20 IID clients. */
export const smallServe = (tokens: string, out: string, ...extra: string[]): string[] => [
  "serve", "fedavg-mnist", "--client-tokens", tokens, "--port", "0", "--clients", "20", "--batch-size", "20",
  "--eval-every", "1", "--checkpoint-every", "1", "--join-wait", "1", "--out", out, "--overwrite", ...extra,
];

/** The server's WebSocket URL from its log. */
export async function serverUrl(server: Process): Promise<string> {
  return (await server.waitFor(/at (ws:\/\/127\.0\.0\.1:\d+\/fedtensor)/))[1]!;
}

export const startClient = (url: string, token: string, index: number, ...extra: string[]) =>
  startProcess(["client", "--server", url, "--token", token, "--dataset", "mnist", "--client-index", String(index), "--max-backoff", "1", ...extra]);

/**
 * Client `index`'s examples, a record file in `dir`: 4 copies of one synthetic 28x28 image,
 * labelled `index`, so that the client's CSPRNG shuffle cannot change what it computes.
 */
export function honestData(dir: string, index: number): string {
  const image = Float32Array.from({ length: 784 }, (_, i) => ((i * (index + 3)) % 17) / 17);
  const x = new Float32Array(4 * 784);
  for (let copy = 0; copy < 4; copy++) x.set(image, copy * 784);
  const path = join(dir, `client-${index}.rec`);
  writeFileSync(path, encodeRecord(new Map([
    ["x", { dtype: "float32", shape: [4, 784], data: x }],
    ["y", { dtype: "int32", shape: [4], data: Int32Array.of(index, index, index, index) }],
  ] as const)));
  return path;
}

/** A served run that a fuzzer joins: the server, its honest file clients, and every token (the fuzzer's is the last). */
export interface FuzzedRun {
  readonly out: string;
  readonly url: string;
  readonly server: Process;
  readonly tokens: string[];
  readonly honest: Process[];
}

/**
 * `fedtensor serve` with the arguments `serveArgs(tokensPath, out)` and `adminToken`, beside
 * `honest` file clients (honestData) and one token more for the fuzzer; resolves once every
 * honest client is ready. `track` records each process for the test file's cleanup.
 */
export async function startFuzzedRun(dir: string, honest: number, serveArgs: (tokens: string, out: string) => string[], adminToken: string, track: (p: Process) => Process): Promise<FuzzedRun> {
  const out = join(dir, "run");
  const { path, tokens } = writeTokens(dir, honest + 1);
  writeFileSync(join(dir, "admin.token"), adminToken);
  const server = track(startProcess([...serveArgs(path, out), "--admin-token-file", join(dir, "admin.token")]));
  const url = await serverUrl(server);
  const clients = Array.from({ length: honest }, (_, i) => track(startProcess(["client", "--server", url, "--token", tokens[i]!, "--data", honestData(dir, i), "--max-backoff", "1"])));
  await server.waitFor(new RegExp(`(client-\\d+ ready[^]*){${honest}}`), deadline(60_000));
  return { out, url, server, tokens, honest: clients };
}
