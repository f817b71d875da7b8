/**
 * Killing `fedtensor client` processes with SIGKILL at a chosen SecAgg+ step, deterministically.
 * A victim connects through a TCP relay in the test process; when the relay sees the server's
 * request for that step of that round on its way to the victim, it kills the victim with
 * SIGKILL and drops the connection before the request reaches it. The server sends the unmask
 * request only once every member's masked input is in (or the step's deadline passed), so a
 * victim trapped at "unmask" has sent its masked input; one trapped at "masked-input" has not.
 * A kill on the server's log line instead would race with the victim's answer, which takes
 * milliseconds.
 */
import { once } from "node:events";
import { afterAll } from "vitest";
import { writeFileSync } from "node:fs";
import { createServer, connect, type AddressInfo, type Socket } from "node:net";
import { join } from "node:path";
import { encodeRecord } from "../../src/deploy/protocol/record.js";
import { federatedData } from "../../src/lib/run/setup.js";
import { startProcess, type Process } from "./serve-helpers.js";

/**
 * What a test file starts: `track` a process to have it killed after the file's tests, push a
 * trap on `traps` to have it closed then.
 */
export function killedAfterAll(): { track: (p: Process) => Process; traps: StepTrap[] } {
  const started: Process[] = [];
  const traps: StepTrap[] = [];
  afterAll(() => {
    started.forEach((p) => p.child.exitCode === null && p.child.signalCode === null && p.child.kill("SIGKILL"));
    traps.forEach((t) => t.close());
  });
  return { track: (p) => (started.push(p), p), traps };
}

/**
 * Record files (--data) of clients 0..count-1 of the 20-client IID MNIST partition that
 * smallServe's runs use: each client process then holds its own examples only, not MNIST whole.
 */
export function partitionFiles(dir: string, count: number): string[] {
  const data = federatedData({ dataset: "mnist", partition: "iid", clients: 20, seed: 0, clientHoldout: 0 } as never);
  return Array.from({ length: count }, (_, i) => {
    const indices = data.clientIndices[i]!;
    const x = new Float32Array(indices.length * 784);
    indices.forEach((e, k) => x.set(data.train.x.subarray(e * 784, (e + 1) * 784) as Float32Array, k * 784));
    const y = Int32Array.from(indices, (e) => data.train.y[e]!);
    const path = join(dir, `client-${i}.rec`);
    writeFileSync(path, encodeRecord(new Map([["x", { dtype: "float32", shape: [indices.length, 784], data: x }], ["y", { dtype: "int32", shape: [indices.length], data: y }]] as const)));
    return path;
  });
}

export const startFileClient = (url: string, token: string, file: string) => startProcess(["client", "--server", url, "--token", token, "--data", file, "--max-backoff", "1"]);

/** A relay to the server at `url` that kills whoever connects through it once round `round`'s request for `step` comes for it. */
export interface StepTrap {
  /** The URL to give the victim's --server. */
  readonly url: string;
  /** Resolves when the trap has killed its victim. */
  readonly sprung: Promise<void>;
  close(): void;
}

export async function stepTrap(url: string, round: number, step: "masked-input" | "unmask", victim: () => Process): Promise<StepTrap> {
  const target = new URL(url);
  // The request's JSON as the server writes it (src/deploy/secagg/server.ts); WebSocket frames from the server are not masked.
  const marker = Buffer.from(`"round":${round},"step":"${step}"`);
  const sockets = new Set<Socket>();
  let spring = () => {};
  const sprung = new Promise<void>((resolve) => (spring = resolve));
  const relay = createServer((down) => {
    const up = connect(Number(target.port), target.hostname);
    for (const s of [down, up]) {
      sockets.add(s);
      s.on("error", () => {});
    }
    down.on("data", (chunk) => up.write(chunk));
    down.on("close", () => up.destroy());
    up.on("close", () => down.destroy());
    let tail = Buffer.alloc(0);
    up.on("data", (chunk: Buffer) => {
      const seen = Buffer.concat([tail, chunk]);
      if (seen.includes(marker)) {
        victim().child.kill("SIGKILL");
        down.destroy();
        up.destroy();
        spring();
        return;
      }
      tail = seen.subarray(Math.max(0, seen.length - marker.length));
      down.write(chunk);
    });
  });
  relay.listen(0, "127.0.0.1");
  await once(relay, "listening");
  const port = (relay.address() as AddressInfo).port;
  return {
    url: `ws://127.0.0.1:${port}${target.pathname}`,
    sprung,
    close: () => {
      sockets.forEach((s) => s.destroy());
      relay.close();
    },
  };
}
