/**
 * A minimal client of the real tsserver (node_modules/typescript/lib/tsserver.js) speaking its
 * protocol as editors do: JSON requests on stdin, `Content-Length`-framed responses and
 * events on stdout.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { join } from "node:path";
import type ts from "typescript";
import { repoRoot } from "./language-service.js";

interface Pending {
  resolve(body: unknown): void;
  reject(error: Error): void;
}

interface EventWaiter {
  readonly event: string;
  readonly matches: (body: unknown) => boolean;
  resolve(body: unknown): void;
}

export class TsServer {
  private readonly process: ChildProcessWithoutNullStreams;
  private readonly pending = new Map<number, Pending>();
  private readonly waiters: EventWaiter[] = [];
  private received = Buffer.alloc(0);
  private seq = 0;

  /** Starts tsserver (the repository's, or the one at `tsserverPath`); `args` are its command-line options. */
  constructor(args: readonly string[], tsserverPath = join(repoRoot, "node_modules/typescript/lib/tsserver.js")) {
    this.process = spawn(process.execPath, [tsserverPath, ...args], { cwd: repoRoot });
    this.process.stdout.on("data", (chunk: Buffer) => this.read(chunk));
    this.process.on("exit", (code) => {
      for (const p of this.pending.values()) p.reject(new Error(`tsserver exited with ${code}`));
      this.pending.clear();
    });
  }

  /** Sends a request and resolves with its response body (rejects on a failed response). */
  request<Body>(command: string, args: object): Promise<Body> {
    const seq = ++this.seq;
    return new Promise<Body>((resolve, reject) => {
      this.pending.set(seq, { resolve: resolve as (body: unknown) => void, reject });
      this.process.stdin.write(`${JSON.stringify({ seq, type: "request", command, arguments: args })}\n`);
    });
  }

  /** Sends a request that tsserver answers with events only (such as geterr). */
  notify(command: string, args: object): void {
    this.process.stdin.write(`${JSON.stringify({ seq: ++this.seq, type: "request", command, arguments: args })}\n`);
  }

  /** Resolves with the body of the next event named `event` whose body matches. */
  nextEvent<Body>(event: string, matches: (body: Body) => boolean = () => true): Promise<Body> {
    return new Promise<Body>((resolve) => {
      this.waiters.push({ event, matches: matches as (body: unknown) => boolean, resolve: resolve as (body: unknown) => void });
    });
  }

  /** Asks tsserver to exit, and ends it if it has not within a second. */
  async close(): Promise<void> {
    const exited = new Promise<void>((resolve) => this.process.once("exit", () => resolve()));
    this.process.stdin.end(`${JSON.stringify({ seq: ++this.seq, type: "request", command: "exit" })}\n`);
    const timer = setTimeout(() => this.process.kill(), 1000);
    await exited;
    clearTimeout(timer);
  }

  private read(chunk: Buffer): void {
    this.received = Buffer.concat([this.received, chunk]);
    for (;;) {
      const headerEnd = this.received.indexOf("\r\n\r\n");
      if (headerEnd < 0) return;
      const length = Number(/Content-Length: (\d+)/.exec(this.received.subarray(0, headerEnd).toString())?.[1]);
      const start = headerEnd + 4;
      if (this.received.length < start + length) return;
      const message = JSON.parse(this.received.subarray(start, start + length).toString()) as ts.server.protocol.Response | ts.server.protocol.Event;
      this.received = this.received.subarray(start + length);
      if (message.type === "event") {
        const { event, body } = message as ts.server.protocol.Event;
        const waiter = this.waiters.findIndex((w) => w.event === event && w.matches(body));
        if (waiter >= 0) this.waiters.splice(waiter, 1)[0]!.resolve(body);
        continue;
      }
      if (message.type !== "response") continue;
      const pending = this.pending.get(message.request_seq);
      this.pending.delete(message.request_seq);
      if (message.success) pending?.resolve(message.body);
      else pending?.reject(new Error(`tsserver ${message.command}: ${message.message}`));
    }
  }
}
