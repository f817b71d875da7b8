/**
 * The clients connected to `fedtensor serve`: each WebSocket must say hello with a valid token
 * (--client-tokens: one per line, one per client) within a few seconds, or it is refused,
 * logged and closed. Every message is parsed at the boundary (protocol/frame.ts, zod schemas,
 * size limits); a malformed one is refused and logged, its connection closed, and the server
 * goes on. A client says ready once per connection, with an example count within the run's
 * bounds (claims.ts, FT350). A second connection with a token in use is refused (FT351) while
 * the first answers a ping; a dead first connection is replaced, so a client that reconnects
 * after a network fault gets back in. The tokens can be reloaded (SIGHUP): a client whose token
 * left the file is disconnected.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { readFileSync } from "node:fs";
import type { IncomingMessage } from "node:http";
import type { WebSocket } from "ws";
import { ftError } from "../../errors/error.js";
import { decodeFrame, encodeFrame, FrameError } from "../protocol/frame.js";
import { clientMessageSchema, helloSchema, WIRE_VERSION, type ClientMessage, type RunInfo } from "../protocol/messages.js";
import { examplesClaimProblem, printable, type ClaimBounds } from "./claims.js";
import { highestId, reloadTokens, type TokenReload } from "./tokens.js";

/** How long a new connection has to say hello. */
const HELLO_TIMEOUT_MS = 10_000;
/** How long a connected client has to answer the ping that decides whether a second connection with its token is refused. */
const LIVENESS_MS = 10_000;

/** Why a connection was refused, for the metrics (a fixed set: a label value each). */
export type RefusalKind = "token" | "in-use" | "revoked" | "claim" | "malformed" | "oversized" | "timeout";

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
  /** When it said hello (ms since the epoch). */
  readonly since: number;
}

/** What the round engine hears from a member: an update or a failure for one of its tasks. */
export type MemberMessage = { readonly member: Member; readonly message: Extract<ClientMessage, { type: "update" | "failed" | "trained" | "secagg" }>; readonly body: Uint8Array };

/** A token file's lines, trimmed, without blank lines and # comments (FT305 naming `option` when it does not read). */
export function tokenLines(path: string, option: string): string[] {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw ftError("FT305", { option, why: `cannot read ${path}: ${(error as Error).message}` });
  }
  return text.split(/\r?\n/).map((l) => l.trim()).filter((l) => l !== "" && !l.startsWith("#"));
}

/** Tokens from a file, one per line (blank lines and # comments skipped); client i is the token on line i's order. */
export function readTokens(path: string): Map<string, string> {
  const tokens = tokenLines(path, "--client-tokens");
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
  readonly bounds: ClaimBounds;
  /** The largest update body the program's accumulator can need; anything larger is refused. */
  readonly maxUpdateBytes: number;
  /** The largest SecAgg+ message body (a masked accumulator: 4 bytes a word after its JSON; the protocol checks each step's exact limit). */
  readonly maxSecAggBytes: number;
  readonly log: (line: string) => void;
  readonly onMessage: (message: MemberMessage) => void;
  /** A member left (closed, replaced): its tasks in flight fail at once. */
  readonly onLeave: (member: Member) => void;
  /** A connection was refused (for the metrics). */
  readonly onRefused?: (kind: RefusalKind) => void;
}

export class ClientRegistry {
  private readonly members = new Map<string, Member>();
  private tokens: ReadonlyMap<string, string>;
  /** The largest client number given in this process: ids are never reused. */
  private highest: number;

  constructor(private readonly settings: RegistrySettings) {
    this.tokens = settings.tokens;
    this.highest = highestId(settings.tokens);
  }

  /** Every connected client (ready or not), by id order. */
  all(): Member[] {
    return [...this.members.values()].sort((a, b) => (a.id < b.id ? -1 : 1));
  }

  /** Whether `token` is one of the tokens in force (for /demo-data). */
  knows(token: string): boolean {
    return this.tokens.has(digest(token).toString("hex")) && constantTimeKnown(token, this.tokens);
  }

  /**
   * Puts a reread tokens file in force: known tokens keep their ids, new ones get new ids, and
   * the clients whose tokens left it are refused (told so) and disconnected.
   */
  reload(fresh: ReadonlyMap<string, string>): TokenReload {
    const reload = reloadTokens(this.tokens, fresh, this.highest);
    this.tokens = reload.tokens;
    this.highest = Math.max(this.highest, highestId(reload.tokens));
    for (const id of reload.revoked) {
      const member = this.members.get(id);
      if (member === undefined) continue;
      this.settings.log(`refused ${id} at ${member.address}: its token was revoked (removed from --client-tokens); disconnected`);
      this.settings.onRefused?.("revoked");
      member.send(encodeFrame({ v: WIRE_VERSION, type: "refused", reason: "this client's token was revoked (removed from the server's --client-tokens)" }));
      member.socket.close(1008, "revoked");
    }
    return reload;
  }

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
    /** Set while a hello waits for the liveness check of its token's connected client. */
    let checking = false;
    const refuse = (why: string, kind: RefusalKind = "malformed") => {
      this.settings.log(`refused ${member?.id ?? "a client"} at ${address}: ${printable(why)}`);
      this.settings.onRefused?.(kind);
      if (socket.readyState === socket.OPEN) socket.send(encodeFrame({ v: WIRE_VERSION, type: "refused", reason: why }));
      socket.close(1008, "refused");
    };
    const helloTimer = setTimeout(() => refuse(`no hello within ${HELLO_TIMEOUT_MS / 1000} s`, "timeout"), HELLO_TIMEOUT_MS);
    socket.on("error", (error: Error & { code?: string }) => {
      // ws stops reading a message over maxPayload before buffering it whole, and closes with 1009.
      if (error.code === "WS_ERR_UNSUPPORTED_MESSAGE_LENGTH") {
        this.settings.log(`refused ${member?.id ?? "a client"} at ${address}: a message over the size limit (${error.message})`);
        this.settings.onRefused?.("oversized");
      } else this.settings.log(`connection ${member?.id ?? address}: ${printable(error.message)}`);
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
        if (checking) return refuse("a message before the welcome");
        if (member === undefined) {
          const { header } = decodeFrame(bytes, helloSchema, {}, 70_000);
          clearTimeout(helloTimer);
          const id = this.tokens.get(digest(header.token).toString("hex"));
          if (id === undefined || !constantTimeKnown(header.token, this.tokens)) return refuse("invalid token", "token");
          const old = this.members.get(id);
          if (old === undefined) {
            member = this.join(id, header.agent, address, socket);
            return;
          }
          checking = true;
          void alive(old.socket, LIVENESS_MS).then((live) => {
            checking = false;
            if (socket.readyState !== socket.OPEN) return;
            // The token may have been revoked, or the old connection closed, while the ping was out.
            if (this.tokens.get(digest(header.token).toString("hex")) !== id) return refuse("invalid token", "token");
            if (live && this.members.get(id) === old) return refuse(ftError("FT351", { client: id, address: old.address }).message, "in-use");
            member = this.join(id, header.agent, address, socket);
          });
          return;
        }
        const { maxUpdateBytes, maxSecAggBytes } = this.settings;
        const { header, body } = decodeFrame(bytes, clientMessageSchema, { update: maxUpdateBytes, secagg: maxSecAggBytes }, Math.max(maxUpdateBytes, maxSecAggBytes) + 70_000);
        if (header.type === "hello") return refuse("a second hello");
        if (header.type === "ready") {
          if (member.examples > 0) return refuse("a second ready on one connection (the example count is said once)");
          const problem = examplesClaimProblem(member.id, header.examples, this.settings.bounds);
          if (problem !== undefined) return refuse(problem, "claim");
          member.examples = header.examples;
          this.settings.log(`${member.id} ready (${member.agent}, ${header.examples} examples; ${this.connected().length} ready)`);
          return;
        }
        // A failure's reason is the client's own text, and reaches the log.
        this.settings.onMessage({ member, message: header.type === "failed" ? { ...header, reason: printable(header.reason) } : header, body });
      } catch (error) {
        if (error instanceof FrameError) return refuse(error.message);
        throw error;
      }
    });
  }

  private join(id: string, agent: "node" | "browser", address: string, socket: WebSocket): Member {
    const old = this.members.get(id);
    const member: Member = { id, examples: 0, agent, address, parts: new Set(), socket, since: Date.now(), send: (bytes) => socket.readyState === socket.OPEN && socket.send(bytes) };
    this.members.set(id, member);
    if (old !== undefined) {
      // Only a connection that did not answer its ping is replaced (attach).
      this.settings.log(`${id} reconnected from ${address}; its old connection from ${old.address} did not answer a ping and is closed`);
      this.settings.onLeave(old);
      old.socket.terminate();
    }
    this.settings.log(`${id} joined from ${address} (${agent}; ${this.members.size} connected)`);
    member.send(encodeFrame({ v: WIRE_VERSION, type: "welcome", clientId: id, run: this.settings.run }));
    return member;
  }

  /** Tells every client that the run is over (they stop, not reconnect), then closes their connections. */
  finish(rounds: number): void {
    for (const member of this.members.values()) {
      member.send(encodeFrame({ v: WIRE_VERSION, type: "finished", rounds }));
      member.socket.close(1000, "run finished");
    }
  }

  /** Closes every connection (the server is stopping). */
  closeAll(): void {
    for (const member of this.members.values()) member.socket.close(1001, "server stopping");
  }
}

/** Whether `socket` answers a ping within `ms` (ws answers pings by itself, in Node and in browsers). */
function alive(socket: WebSocket, ms: number): Promise<boolean> {
  if (socket.readyState !== socket.OPEN) return Promise.resolve(false);
  return new Promise((resolve) => {
    const done = (live: boolean) => {
      clearTimeout(timer);
      socket.off("pong", onPong);
      socket.off("close", onClose);
      resolve(live);
    };
    const onPong = () => done(true);
    const onClose = () => done(false);
    const timer = setTimeout(() => done(false), ms);
    socket.on("pong", onPong);
    socket.on("close", onClose);
    socket.ping();
  });
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
