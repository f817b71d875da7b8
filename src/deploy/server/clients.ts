/**
 * The clients connected to `fedtensor serve`: each WebSocket must say hello with a valid token
 * (--client-tokens: one per line, one per client) within a few seconds, or it is refused,
 * logged and closed. Every message is parsed at the boundary (protocol/frame.ts, zod schemas,
 * size limits); a malformed one is refused and logged, its connection closed, and the server
 * goes on. A client that reconnects with its token replaces its old connection.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { readFileSync } from "node:fs";
import type { IncomingMessage } from "node:http";
import type { WebSocket } from "ws";
import { ftError } from "../../errors/error.js";
import { decodeFrame, encodeFrame, FrameError } from "../protocol/frame.js";
import { clientMessageSchema, helloSchema, WIRE_VERSION, type ClientMessage, type RunInfo } from "../protocol/messages.js";

/** How long a new connection has to say hello. */
const HELLO_TIMEOUT_MS = 10_000;

export interface Member {
  readonly id: string;
  /** Its number of examples, from its ready message; 0 until then (not sampled). */
  examples: number;
  readonly agent: "node" | "browser";
  readonly address: string;
  /** The hashes of the parts this connection holds: each is sent once per client. */
  readonly parts: Set<string>;
  send(bytes: Uint8Array): void;
  readonly socket: WebSocket;
}

/** What the round engine hears from a member: an update or a failure for one of its tasks. */
export type MemberMessage = { readonly member: Member; readonly message: Extract<ClientMessage, { type: "update" | "failed" | "trained" | "secagg" }>; readonly body: Uint8Array };

/** Tokens from a file, one per line (blank lines and # comments skipped); client i is the token on line i's order. */
export function readTokens(path: string): Map<string, string> {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw ftError("FT305", { option: "--client-tokens", why: `cannot read ${path}: ${(error as Error).message}` });
  }
  const tokens = text.split(/\r?\n/).map((l) => l.trim()).filter((l) => l !== "" && !l.startsWith("#"));
  if (tokens.length === 0) throw ftError("FT305", { option: "--client-tokens", why: `${path} holds no token (one per line, one per client)` });
  const short = tokens.find((t) => t.length < 16);
  if (short !== undefined) throw ftError("FT305", { option: "--client-tokens", why: `a token of ${short.length} characters in ${path}: tokens are secrets, at least 16 characters (openssl rand -hex 16)` });
  if (new Set(tokens).size !== tokens.length) throw ftError("FT305", { option: "--client-tokens", why: `${path} holds a token twice; each client needs its own` });
  // Kept as hashes, compared in constant time: the server's memory holds no usable token list.
  return new Map(tokens.map((t, i) => [digest(t).toString("hex"), `client-${String(i + 1).padStart(3, "0")}`]));
}

const digest = (token: string) => createHash("sha256").update(token, "utf8").digest();

export interface RegistrySettings {
  readonly tokens: ReadonlyMap<string, string>;
  readonly run: RunInfo;
  /** The largest update body the program's accumulator can need; anything larger is refused. */
  readonly maxUpdateBytes: number;
  /** The largest SecAgg+ message body (a masked accumulator: 4 bytes a word after its JSON; the protocol checks each step's exact limit). */
  readonly maxSecAggBytes: number;
  readonly log: (line: string) => void;
  readonly onMessage: (message: MemberMessage) => void;
  /** A member left (closed, replaced): its tasks in flight fail at once. */
  readonly onLeave: (member: Member) => void;
}

export class ClientRegistry {
  private readonly members = new Map<string, Member>();

  constructor(private readonly settings: RegistrySettings) {}

  /** The connected clients that are ready (said how many examples they hold), by id order. */
  connected(): Member[] {
    return [...this.members.values()].filter((m) => m.examples > 0).sort((a, b) => (a.id < b.id ? -1 : 1));
  }

  get size(): number {
    return this.members.size;
  }

  /** Takes a new WebSocket: hello first, then the member's messages. */
  attach(socket: WebSocket, request: IncomingMessage): void {
    const address = `${request.socket.remoteAddress ?? "?"}:${request.socket.remotePort ?? "?"}`;
    let member: Member | undefined;
    const refuse = (why: string) => {
      this.settings.log(`refused ${member?.id ?? "a client"} at ${address}: ${why}`);
      if (socket.readyState === socket.OPEN) socket.send(encodeFrame({ v: WIRE_VERSION, type: "refused", reason: why }));
      socket.close(1008, "refused");
    };
    const helloTimer = setTimeout(() => refuse(`no hello within ${HELLO_TIMEOUT_MS / 1000} s`), HELLO_TIMEOUT_MS);
    socket.on("error", (error: Error & { code?: string }) => {
      // ws stops reading a message over maxPayload before buffering it whole, and closes with 1009.
      if (error.code === "WS_ERR_UNSUPPORTED_MESSAGE_LENGTH") {
        this.settings.log(`refused ${member?.id ?? "a client"} at ${address}: a message over the size limit (${error.message})`);
      } else this.settings.log(`connection ${member?.id ?? address}: ${error.message}`);
    });
    socket.on("close", () => {
      clearTimeout(helloTimer);
      if (member !== undefined && this.members.get(member.id) === member) {
        this.members.delete(member.id);
        this.settings.log(`${member.id} left (${this.members.size} connected)`);
        this.settings.onLeave(member);
      }
    });
    socket.on("message", (data, isBinary) => {
      if (!isBinary) return refuse("a text frame; the protocol's frames are binary");
      const bytes = toBytes(data);
      try {
        if (member === undefined) {
          const { header } = decodeFrame(bytes, helloSchema, {}, 70_000);
          clearTimeout(helloTimer);
          const id = this.settings.tokens.get(digest(header.token).toString("hex"));
          if (id === undefined || !constantTimeKnown(header.token, this.settings.tokens)) return refuse("invalid token");
          member = this.join(id, header.agent, address, socket);
          return;
        }
        const { maxUpdateBytes, maxSecAggBytes } = this.settings;
        const { header, body } = decodeFrame(bytes, clientMessageSchema, { update: maxUpdateBytes, secagg: maxSecAggBytes }, Math.max(maxUpdateBytes, maxSecAggBytes) + 70_000);
        if (header.type === "hello") return refuse("a second hello");
        if (header.type === "ready") {
          member.examples = header.examples;
          this.settings.log(`${member.id} ready (${member.agent}, ${header.examples} examples; ${this.connected().length} ready)`);
          return;
        }
        this.settings.onMessage({ member, message: header, body });
      } catch (error) {
        if (error instanceof FrameError) return refuse(error.message);
        throw error;
      }
    });
  }

  private join(id: string, agent: "node" | "browser", address: string, socket: WebSocket): Member {
    const old = this.members.get(id);
    const member: Member = { id, examples: 0, agent, address, parts: new Set(), socket, send: (bytes) => socket.readyState === socket.OPEN && socket.send(bytes) };
    this.members.set(id, member);
    if (old !== undefined) {
      this.settings.log(`${id} reconnected from ${address}; its old connection is closed`);
      this.settings.onLeave(old);
      old.socket.close(1000, "replaced");
    }
    this.settings.log(`${id} joined from ${address} (${agent}; ${this.members.size} connected)`);
    member.send(encodeFrame({ v: WIRE_VERSION, type: "welcome", clientId: id, run: this.settings.run }));
    return member;
  }

  /** Closes every connection (the server is stopping). */
  closeAll(): void {
    for (const member of this.members.values()) member.socket.close(1001, "server stopping");
  }
}

/** The token's hash compared in constant time with the known one (the map lookup found it by hash already). */
function constantTimeKnown(token: string, tokens: ReadonlyMap<string, string>): boolean {
  const mine = digest(token);
  let found = false;
  for (const known of tokens.keys()) found = timingSafeEqual(mine, Buffer.from(known, "hex")) || found;
  return found;
}

function toBytes(data: Buffer | ArrayBuffer | Buffer[]): Uint8Array {
  if (Array.isArray(data)) return Buffer.concat(data);
  return data instanceof ArrayBuffer ? new Uint8Array(data) : data;
}
