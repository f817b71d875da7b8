/** A hand-driven WebSocket to `fedtensor serve`: sends whatever frames a test makes, and records the server's messages and the close. */
import { WebSocket } from "ws";
import { decodeFrame } from "../../src/deploy/protocol/frame.js";
import { serverMessageSchema, type ServerMessage } from "../../src/deploy/protocol/messages.js";

export interface RawClient {
  readonly socket: WebSocket;
  /** The server's messages so far (headers; bodies dropped). */
  readonly received: ServerMessage[];
  /** Resolves once open. */
  readonly opened: Promise<void>;
  /** Resolves with the close code. */
  readonly closed: Promise<number>;
  /** Resolves with the first message of `type` (one already received included). */
  next<T extends ServerMessage["type"]>(type: T): Promise<Extract<ServerMessage, { type: T }>>;
  send(bytes: Uint8Array | string): void;
}

export function rawClient(url: string): RawClient {
  const socket = new WebSocket(url);
  const received: ServerMessage[] = [];
  const waiters = new Set<() => void>();
  socket.on("message", (data: Buffer) => {
    received.push(decodeFrame(new Uint8Array(data), serverMessageSchema, { part: 1e9, task: 1e9, secagg: 1e9 }, 2e9).header);
    waiters.forEach((w) => w());
  });
  socket.on("error", () => {});
  const opened = new Promise<void>((resolve) => socket.once("open", () => resolve()));
  const closed = new Promise<number>((resolve) => socket.once("close", (code) => resolve(code)));
  return {
    socket,
    received,
    opened,
    closed,
    next: (type) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const found = received.find((m) => m.type === type);
          if (found !== undefined) {
            waiters.delete(check);
            resolve(found as never);
          }
        };
        waiters.add(check);
        void closed.then(() => {
          check();
          if (waiters.has(check)) reject(new Error(`closed before a ${type} message; received ${received.map((m) => m.type).join(", ")}`));
        });
        check();
      }),
    send: (bytes) => {
      if (socket.readyState === socket.OPEN) socket.send(bytes);
    },
  };
}
