/**
 * What SecAgg+ logs: every refused message, every dropout, every abort, each with the round,
 * the step, the client it concerns and its FT code. The transport passes a sink (a logger, the
 * run's metrics); the server also keeps them (SecAggServer.events).
 */
import type { ErrorCode } from "../../errors/catalogue.js";

export interface SecAggEvent {
  readonly level: "info" | "warn" | "error";
  readonly round: number;
  readonly step: string;
  readonly client?: string;
  readonly code?: ErrorCode;
  readonly message: string;
}

export type SecAggLog = (event: SecAggEvent) => void;
