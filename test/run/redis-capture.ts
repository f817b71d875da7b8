/**
 * Everything that reaches a Redis server while a run goes through it: its MONITOR stream (every
 * command any client sends, and those BullMQ's Lua scripts run, with their arguments: every key
 * written, every value, every job payload), read on a raw socket and unescaped to the bytes sent.
 */
import { connect, type Socket } from "node:net";

export interface RedisCapture {
  /** The arguments of every command seen so far, as the bytes the clients sent. */
  readonly args: Buffer[];
  stop(): Promise<void>;
}

/** The bytes of one quoted argument as MONITOR prints it (redis's sdscatrepr: \\xNN, \\n, \\", ...). */
function unescape(text: string): Buffer {
  const out: number[] = [];
  const simple: Record<string, number> = { n: 10, r: 13, t: 9, a: 7, b: 8, "\\": 92, '"': 34 };
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c !== "\\") {
      out.push(...Buffer.from(c, "latin1"));
      continue;
    }
    const next = text[++i]!;
    if (next === "x") {
      out.push(parseInt(text.slice(i + 1, i + 3), 16));
      i += 2;
    } else out.push(simple[next] ?? next.charCodeAt(0));
  }
  return Buffer.from(out);
}

/** The quoted arguments of one MONITOR line: `+time [db addr] "SET" "key" "value"`. */
function argumentsOf(line: string): Buffer[] {
  const args: Buffer[] = [];
  const quoted = /"((?:[^"\\]|\\.)*)"/g;
  for (let m = quoted.exec(line); m !== null; m = quoted.exec(line)) args.push(unescape(m[1]!));
  return args;
}

export async function captureRedis(port: number): Promise<RedisCapture> {
  const socket: Socket = connect(port, "127.0.0.1");
  const args: Buffer[] = [];
  let pending = "";
  await new Promise<void>((resolve, reject) => {
    socket.once("error", reject);
    socket.once("connect", () => {
      // MONITOR's lines are printable ASCII (sdscatrepr escapes the rest), so latin1 keeps them as they are.
      socket.setEncoding("latin1");
      socket.on("data", (chunk: string) => {
        pending += chunk;
        const lines = pending.split("\r\n");
        pending = lines.pop()!;
        for (const line of lines) {
          if (line === "+OK") resolve();
          else if (line.startsWith("+")) args.push(...argumentsOf(line));
        }
      });
      socket.write("MONITOR\r\n");
    });
  });
  return {
    args,
    stop: () => new Promise((resolve) => socket.end(() => resolve())),
  };
}

/** Whether any captured argument contains `needle`'s bytes. */
export const capturedHas = (capture: RedisCapture, needle: Buffer): boolean => capture.args.some((arg) => arg.includes(needle));
