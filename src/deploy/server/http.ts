/**
 * The network side of `fedtensor serve`: one node:http (or node:https with --tls-cert and
 * --tls-key) server that upgrades /fedtensor to the clients' WebSocket (ws), and serves the
 * browser client: /client (the page), /client.js (its esbuild bundle in dist/page), /ort/*
 * (onnxruntime-web's ESM builds and wasm files, from its package: ort.wasm.min.mjs, and
 * ort.webgpu.min.mjs with the asyncify wasm it loads for a tab with WebGPU) and /demo-data (a demo client's partition,
 * for a valid token only: public data set examples going to a tab, never the other way), and
 * the operator's /healthz, /status and /metrics behind the admin token (admin.ts).
 */
import { readFileSync } from "node:fs";
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { WebSocketServer } from "ws";
import { ftError } from "../../errors/error.js";
import type { FederatedDataset } from "../../lib/data/federated.js";
import type { HostData } from "../../lib/data/host-tensor.js";
import { encodeFrame } from "../protocol/frame.js";
import type { RunInfo } from "../protocol/messages.js";
import { encodeRecord } from "../protocol/record.js";
import { adminPaths, adminRequest, type OperatorView, type Send } from "./admin.js";
import type { ClaimBounds } from "./claims.js";
import { ClientRegistry, type Member, type MemberMessage } from "./clients.js";
import { pageHtml } from "./page-html.js";

export interface ServerSettings {
  readonly host: string;
  readonly port: number;
  /** Token hashes to client ids (clients.ts readTokens). */
  readonly tokens: ReadonlyMap<string, string>;
  readonly tls?: { readonly cert: string; readonly key: string };
  readonly run: RunInfo;
  readonly bounds: ClaimBounds;
  /** The run's status and metrics for the admin endpoints. */
  readonly operator: OperatorView;
  /** The admin token's SHA-256 (--admin-token-file); the admin endpoints are off without it. */
  readonly adminToken?: Buffer;
  readonly maxUpdateBytes: number;
  readonly maxSecAggBytes: number;
  readonly demoData: FederatedDataset<HostData>;
  readonly log: (line: string) => void;
  readonly onMessage: (message: MemberMessage) => void;
  readonly onLeave: (member: Member) => void;
}

export interface RunningServer {
  /** ws://host:port/fedtensor or wss://... */
  readonly url: string;
  readonly registry: ClientRegistry;
  broadcast(members: readonly Member[], header: object): void;
  close(): Promise<void>;
}

export const socketPath = "/fedtensor";

/** dist/page/client.js, from dist/src/deploy/server. */
const pageBundle = join(dirname(fileURLToPath(import.meta.url)), "../../../page/client.js");
/** onnxruntime-web's dist folder (its wasm files and ESM builds). */
const ortDir = () => dirname(createRequire(import.meta.url).resolve("onnxruntime-web"));

function readTls(tls: { cert: string; key: string }): { cert: Buffer; key: Buffer } {
  const read = (option: string, path: string) => {
    try {
      return readFileSync(path);
    } catch (error) {
      throw ftError("FT305", { option, why: `cannot read ${path}: ${(error as Error).message}` });
    }
  };
  return { cert: read("--tls-cert", tls.cert), key: read("--tls-key", tls.key) };
}

export async function startServer(settings: ServerSettings): Promise<RunningServer> {
  const registry = new ClientRegistry({
    tokens: settings.tokens,
    run: settings.run,
    bounds: settings.bounds,
    maxUpdateBytes: settings.maxUpdateBytes,
    maxSecAggBytes: settings.maxSecAggBytes,
    log: settings.log,
    onMessage: settings.onMessage,
    onLeave: settings.onLeave,
    onRefused: (kind) => settings.operator.refused(kind),
  });
  settings.operator.attach(registry);
  const handler = (request: IncomingMessage, response: ServerResponse) => route(request, response, settings, registry);
  const http = settings.tls === undefined ? createHttpServer(handler) : createHttpsServer(readTls(settings.tls), handler);
  // maxPayload: ws refuses (closes with 1009) a message larger than any update, before buffering it whole.
  const sockets = new WebSocketServer({ server: http, path: socketPath, maxPayload: Math.max(settings.maxUpdateBytes, settings.maxSecAggBytes) + 70_000 });
  sockets.on("connection", (socket, request) => registry.attach(socket, request));
  sockets.on("error", (error) => settings.log(`websocket server: ${error.message}`));
  await new Promise<void>((resolve, reject) => {
    http.once("error", (error: NodeJS.ErrnoException) => reject(ftError("FT305", { option: "--port", why: `cannot listen on ${settings.host}:${settings.port}: ${error.code ?? error.message}` })));
    http.listen(settings.port, settings.host, resolve);
  });
  const { port } = http.address() as AddressInfo;
  const scheme = settings.tls === undefined ? "ws" : "wss";
  return {
    url: `${scheme}://${settings.host.includes(":") ? `[${settings.host}]` : settings.host}:${port}${socketPath}`,
    registry,
    broadcast: (members, header) => members.forEach((m) => m.send(encodeFrame(header))),
    close: async () => {
      registry.closeAll();
      await new Promise<void>((resolve) => sockets.close(() => resolve()));
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

function route(request: IncomingMessage, response: ServerResponse, settings: ServerSettings, registry: ClientRegistry): void {
  const url = new URL(request.url ?? "/", "http://localhost");
  const send: Send = (status, type, body, headers = {}) => {
    response.writeHead(status, { "content-type": type, "cache-control": "no-store", "x-content-type-options": "nosniff", ...headers });
    response.end(body);
  };
  const failed = (error: unknown) => {
    settings.log(`GET ${url.pathname}: ${(error as Error).message}`);
    send((error as NodeJS.ErrnoException).code === "ENOENT" ? 404 : 500, "text/plain", "not available\n");
  };
  try {
    if (request.method !== "GET") return send(405, "text/plain", "GET only\n");
    if (adminPaths.has(url.pathname)) return void adminRequest(url.pathname, request, send, settings.operator, settings.adminToken, settings.log).catch(failed);
    if (url.pathname === "/client") return send(200, "text/html; charset=utf-8", pageHtml(settings.run));
    if (url.pathname === "/client.js") return send(200, "text/javascript", readFileSync(pageBundle));
    const ort = /^\/ort\/(ort[\w.-]*\.(?:mjs|wasm))$/.exec(url.pathname);
    if (ort !== null) return send(200, ort[1]!.endsWith(".wasm") ? "application/wasm" : "text/javascript", readFileSync(join(ortDir(), ort[1]!)));
    if (url.pathname === "/demo-data") return demoData(url, settings, registry, send);
    send(404, "text/plain", "not found\n");
  } catch (error) {
    failed(error);
  }
}

/** A demo client's examples of the run's partition as a record (x, y): only for a request with a valid token. */
function demoData(url: URL, settings: ServerSettings, registry: ClientRegistry, send: Send): void {
  const token = url.searchParams.get("token") ?? "";
  if (!registry.knows(token)) {
    settings.log("refused a demo-data request: invalid token");
    return send(403, "text/plain", "invalid token\n");
  }
  const client = Number(url.searchParams.get("client"));
  const data = settings.demoData;
  if (!Number.isInteger(client) || client < 0 || client >= data.clientIndices.length) return send(400, "text/plain", `client must be a whole number in [0, ${data.clientIndices.length})\n`);
  const indices = data.clientIndices[client]!;
  const size = data.train.featureShape.reduce((a, b) => a * b, 1);
  const x = new (data.train.x instanceof Int32Array ? Int32Array : Float32Array)(indices.length * size);
  indices.forEach((example, i) => x.set(data.train.x.subarray(example * size, (example + 1) * size), i * size));
  const y = Int32Array.from(indices, (example) => data.train.y[example]!);
  const record = encodeRecord(new Map([
    ["x", { dtype: x instanceof Int32Array ? "int32" : "float32", shape: [indices.length, ...settings.run.featureShape], data: x }],
    ["y", { dtype: "int32", shape: [indices.length], data: y }],
  ] as const));
  send(200, "application/octet-stream", record);
}
