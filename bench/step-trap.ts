/**
 * A TCP relay in front of `fedtensor serve` that kills the `fedtensor client` behind it with
 * SIGKILL at a chosen SecAgg+ step, deterministically. The victim connects through the relay;
 * when the relay sees the server's request for that step of that round on its way to the victim,
 * it kills the victim and drops the connection before the request reaches it. The server sends
 * the unmask request only once every member's masked input is in (or the step's deadline
 * passed), so a victim trapped at "unmask" has sent its masked input; one trapped at
 * "masked-input" has not. A kill on the server's log line instead races with the victim's
 * answer, which takes milliseconds (the serve demo lost that race).
 *
 * Used by the served-dropout tests (test/deploy) and bench/serve-demo.ts. The relay outlives
 * server restarts: a client reconnecting through it reaches the new server.
 */
import { once } from "node:events";
import { createServer, connect, type AddressInfo, type Socket } from "node:net";

export interface StepTrap {
  /** The URL to give the victim's --server. */
  readonly url: string;
  /** Resolves when the trap has killed its victim. */
  readonly sprung: Promise<void>;
  close(): void;
}

/** What the trap kills: `victim()` at the step, or nobody (the request passes) when it gives undefined. */
export type Victim = () => { kill(signal: NodeJS.Signals): unknown } | undefined;

export async function stepTrap(url: string, round: number, step: "setup" | "share-keys" | "masked-input" | "consistency-check" | "unmask", victim: Victim): Promise<StepTrap> {
  const target = new URL(url);
  // The request's JSON as the server writes it (src/deploy/secagg/server.ts); WebSocket frames from the server are not masked.
  const marker = Buffer.from(`"round":${round},"step":"${step}"`);
  const sockets = new Set<Socket>();
  let armed = true;
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
      // Sprung or passed: the relay is a plain pipe from then on, with no copy or search per chunk.
      if (!armed) return down.write(chunk);
      const seen = Buffer.concat([tail, chunk]);
      if (seen.includes(marker)) {
        armed = false;
        const process = victim();
        if (process !== undefined) {
          process.kill("SIGKILL");
          down.destroy();
          up.destroy();
          spring();
          return;
        }
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
