/**
 * The operator's view of `fedtensor serve` (docs/deployment.md, "Operating a server"): GET
 * /healthz, /status (JSON: the round, its step, the SecAgg+ step of a secure sum in progress
 * and whom it waits for, the connected and ready clients, the last round's result) and /metrics (Prometheus text from prom-client), each only for a request that
 * carries the admin token (--admin-token-file) as `Authorization: Bearer <token>`; without the
 * flag they are off. The token is kept as its SHA-256 and compared in constant time; refusals
 * are logged (FT352). Nothing here names a client token or a secret.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import { ftError } from "../../errors/error.js";
import { tokenLines, type ClientRegistry, type RefusalKind } from "./clients.js";

/** What the server is doing now. */
export type ServerStep = "starting" | "waiting for clients" | "training" | "evaluating" | "checkpointing" | "finished";

/** A secure sum in progress, as /status reports it: the SecAgg+ step it collects and the members it still waits for. */
export interface SecureSumStatus {
  readonly round: number;
  readonly step: string;
  readonly waitingFor: readonly string[];
}

/** A finished round, as /status reports it. */
export interface RoundResult {
  readonly round: number;
  readonly merged: boolean;
  readonly clients: number;
  readonly dropped: number;
  readonly trainLoss: number | null;
  readonly testAccuracy: number | null;
  readonly seconds: number;
  readonly bytesToClients: number;
  readonly bytesFromClients: number;
  /** Distributed-DP runs: the run's epsilon after the round. */
  readonly epsilon?: number | null;
}

/** The admin token from its file: the first line that is not blank or a # comment, at least 16 characters (FT305 otherwise). */
export function readAdminToken(path: string): Buffer {
  const token = tokenLines(path, "--admin-token-file")[0];
  if (token === undefined || token.length < 16) throw ftError("FT305", { option: "--admin-token-file", why: `${path} must hold one token of at least 16 characters (openssl rand -hex 16)` });
  return sha256(token);
}

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest();

/** The run's state for /status and its Prometheus metrics; the coordinator reports to it as the run goes. */
export class OperatorView {
  readonly registry = new Registry();
  private step: ServerStep = "starting";
  private round = 0;
  private last: RoundResult | undefined;
  private secure: () => SecureSumStatus | null = () => null;
  private clients: ClientRegistry | undefined;
  private readonly roundGauge: Gauge;
  private readonly finished: Counter<"outcome">;
  private readonly refusals: Counter<"reason">;
  private readonly bytes: Counter<"direction">;
  private readonly duration: Histogram;
  private readonly lastRound: Gauge<"value">;

  constructor(private readonly run: { readonly name: string; readonly algorithm: string; readonly rounds: number; readonly aggregator: string }) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, prefix: "fedtensor_" });
    new Gauge({ name: "fedtensor_rounds", help: "The run's number of rounds (--rounds).", registers }).set(run.rounds);
    this.roundGauge = new Gauge({ name: "fedtensor_round", help: "The round in progress (the last one once the run finished).", registers });
    const view = this;
    new Gauge({ name: "fedtensor_clients_connected", help: "Clients connected (said hello with a valid token).", registers, collect() { this.set(view.clients?.all().length ?? 0); } });
    new Gauge({ name: "fedtensor_clients_ready", help: "Connected clients that said how many examples they hold (may be sampled).", registers, collect() { this.set(view.clients?.connected().length ?? 0); } });
    this.finished = new Counter({ name: "fedtensor_rounds_finished_total", help: "Rounds finished, by outcome: merged (the model changed) or skipped (too few valid updates).", labelNames: ["outcome"], registers });
    this.refusals = new Counter({ name: "fedtensor_refused_connections_total", help: "Connections refused, by reason.", labelNames: ["reason"], registers });
    this.bytes = new Counter({ name: "fedtensor_bytes_total", help: "Bytes of protocol messages, to or from the clients.", labelNames: ["direction"], registers });
    this.duration = new Histogram({ name: "fedtensor_round_duration_seconds", help: "How long each round took, waiting for clients included.", buckets: [1, 2, 5, 10, 30, 60, 120, 300, 600], registers });
    this.lastRound = new Gauge({ name: "fedtensor_last_round", help: "The last finished round: clients merged and dropped, train loss, test accuracy, epsilon (distributed DP).", labelNames: ["value"], registers });
  }

  /** The client registry, once the server listens (for the connected clients). */
  attach(clients: ClientRegistry): void {
    this.clients = clients;
  }

  setStep(step: ServerStep, round?: number): void {
    this.step = step;
    if (round !== undefined) {
      this.round = round;
      this.roundGauge.set(round);
    }
  }

  /** Where /status reads the secure sum in progress (null when there is none). */
  watchSecureSum(progress: () => SecureSumStatus | null): void {
    this.secure = progress;
  }

  refused(kind: RefusalKind): void {
    this.refusals.inc({ reason: kind });
  }

  roundFinished(result: RoundResult): void {
    this.last = result;
    this.finished.inc({ outcome: result.merged ? "merged" : "skipped" });
    this.bytes.inc({ direction: "to_clients" }, result.bytesToClients);
    this.bytes.inc({ direction: "from_clients" }, result.bytesFromClients);
    this.duration.observe(result.seconds);
    this.lastRound.set({ value: "clients_merged" }, result.clients);
    this.lastRound.set({ value: "clients_dropped" }, result.dropped);
    if (result.trainLoss !== null) this.lastRound.set({ value: "train_loss" }, result.trainLoss);
    if (result.testAccuracy !== null) this.lastRound.set({ value: "test_accuracy" }, result.testAccuracy);
    if (result.epsilon !== undefined && result.epsilon !== null) this.lastRound.set({ value: "epsilon" }, result.epsilon);
  }

  /** /status's body. */
  status(): object {
    const all = this.clients?.all() ?? [];
    return {
      run: this.run,
      round: this.round,
      step: this.step,
      secureSum: this.secure(),
      connected: all.length,
      ready: all.filter((m) => m.examples > 0).length,
      clients: all.map((m) => ({ id: m.id, agent: m.agent, address: m.address, ready: m.examples > 0, examples: m.examples, since: new Date(m.since).toISOString() })),
      lastRound: this.last ?? null,
    };
  }
}

export type Send = (status: number, type: string, body: string | Uint8Array, headers?: Record<string, string>) => void;

/** The admin paths. */
export const adminPaths: ReadonlySet<string> = new Set(["/healthz", "/status", "/metrics"]);

/** Answers an admin request: with the token, the endpoint; without it, 401 (404 when the endpoints are off), logged as FT352. */
export async function adminRequest(path: string, request: IncomingMessage, send: Send, view: OperatorView, tokenHash: Buffer | undefined, log: (line: string) => void): Promise<void> {
  const refuse = (status: number, why: string) => {
    log(`${ftError("FT352", { path, why }).message} (from ${request.socket.remoteAddress ?? "?"})`);
    send(status, "text/plain", `${why}\n`, status === 401 ? { "www-authenticate": 'Bearer realm="fedtensor serve"' } : {});
  };
  if (tokenHash === undefined) return refuse(404, "the operator endpoints are off: start the server with --admin-token-file FILE");
  const match = /^Bearer (\S+)$/.exec(request.headers.authorization ?? "");
  if (match === null) return refuse(401, "no admin token (send Authorization: Bearer <token>)");
  if (!timingSafeEqual(sha256(match[1]!), tokenHash)) return refuse(401, "wrong admin token");
  if (path === "/healthz") return send(200, "application/json", `${JSON.stringify({ status: "ok" })}\n`);
  if (path === "/status") return send(200, "application/json", `${JSON.stringify(view.status(), null, 2)}\n`);
  send(200, view.registry.contentType, await view.registry.metrics());
}
