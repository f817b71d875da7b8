/**
 * Per-round progress of a training run. On a terminal one bar line is redrawn in place
 * (rounds done / total, ETA, loss, accuracy, seconds per round); elsewhere (CI logs, files,
 * pipes) each round prints one plain line, because carriage returns make logs unreadable.
 */
import { redactCredentials } from "../../errors/redact.js";

/** The part of a Writable that the display needs, so tests can pass a fake. */
export interface ProgressStream {
  write(chunk: string): unknown;
  readonly isTTY?: boolean;
  readonly columns?: number;
}

export interface RoundReport {
  /** The round just completed, counted from 1. */
  readonly round: number;
  readonly loss?: number;
  /** A fraction in [0, 1]; absent on rounds without an evaluation. */
  readonly accuracy?: number;
  /** The privacy spent so far (DP runs). */
  readonly epsilon?: number;
  /** The clients' held-out accuracy at the latest federated evaluation: its mean over clients and 10th percentile. */
  readonly clients?: { readonly mean: number; readonly p10: number };
}

export interface ProgressOptions {
  readonly stream: ProgressStream;
  readonly totalRounds: number;
  /** Rounds already done before this process started (after --resume). */
  readonly startRound?: number;
  /** Milliseconds since some origin; injectable so tests control time. */
  readonly now?: () => number;
  /** Said first in every round line and on the bar, such as "not private (--dp-insecure-seed)". */
  readonly notice?: string;
}

const clearLine = "\r\x1b[2K";
const defaultColumns = 80;

export function formatDuration(seconds: number): string {
  const whole = Math.round(seconds);
  const h = Math.floor(whole / 3600);
  const m = Math.floor((whole % 3600) / 60);
  const s = whole % 60;
  const mmss = `${String(m).padStart(h > 0 ? 2 : 1, "0")}:${String(s).padStart(2, "0")}`;
  return h > 0 ? `${h}:${mmss}` : mmss;
}

export class RoundProgress {
  private readonly stream: ProgressStream;
  private readonly totalRounds: number;
  private readonly startRound: number;
  private readonly now: () => number;
  private readonly startedAt: number;
  private readonly notice: string | undefined;
  private round: number;
  private loss: number | undefined;
  private accuracy: number | undefined;
  private epsilon: number | undefined;
  private clients: RoundReport["clients"];
  /** Whether the bar is on screen and must be cleared before other text. */
  private barShown = false;

  constructor({ stream, totalRounds, startRound = 0, now = () => performance.now(), notice }: ProgressOptions) {
    this.stream = stream;
    this.notice = notice;
    this.totalRounds = totalRounds;
    this.startRound = startRound;
    this.round = startRound;
    this.now = now;
    this.startedAt = now();
    if (this.isTTY) this.drawBar();
  }

  private get isTTY(): boolean {
    return this.stream.isTTY === true;
  }

  /** Seconds per round, over the rounds this process ran (earlier ones' timing is unknown after a resume). */
  private secondsPerRound(): number | undefined {
    const rounds = this.round - this.startRound;
    return rounds === 0 ? undefined : (this.now() - this.startedAt) / 1000 / rounds;
  }

  /** Records a completed round and shows it. */
  update(report: RoundReport): void {
    this.round = report.round;
    if (report.loss !== undefined) this.loss = report.loss;
    if (report.accuracy !== undefined) this.accuracy = report.accuracy;
    if (report.epsilon !== undefined) this.epsilon = report.epsilon;
    if (report.clients !== undefined) this.clients = report.clients;
    if (this.isTTY) this.drawBar();
    else this.stream.write(`${this.roundLine(report)}\n`);
  }

  /** Prints a message (a checkpoint saved, a warning) without breaking the bar. */
  log(message: string): void {
    if (this.barShown) this.stream.write(clearLine);
    this.stream.write(`${redactCredentials(message)}\n`);
    if (this.isTTY) this.drawBar();
  }

  /** Leaves the final bar on its own line. */
  finish(): void {
    if (this.barShown) this.stream.write("\n");
    this.barShown = false;
  }

  private statusFields(loss: number | undefined, accuracy: number | undefined, epsilon: number | undefined, clients: RoundReport["clients"]): string[] {
    const fields: string[] = this.notice === undefined ? [] : [this.notice.toUpperCase()];
    if (loss !== undefined) fields.push(`loss ${loss.toFixed(4)}`);
    if (accuracy !== undefined) fields.push(`acc ${(accuracy * 100).toFixed(2)}%`);
    if (clients !== undefined) fields.push(`client acc ${(clients.mean * 100).toFixed(2)}% (p10 ${(clients.p10 * 100).toFixed(2)}%)`);
    if (epsilon !== undefined) fields.push(`eps ${epsilon.toFixed(2)}`);
    const perRound = this.secondsPerRound();
    if (perRound !== undefined) {
      fields.push(`${perRound.toFixed(2)} s/round`);
      fields.push(`eta ${formatDuration(perRound * (this.totalRounds - this.round))}`);
    }
    return fields;
  }

  private roundLine(report: RoundReport): string {
    const width = String(this.totalRounds).length;
    const head = `round ${String(report.round).padStart(width)}/${this.totalRounds}`;
    return [head, ...this.statusFields(report.loss, report.accuracy, report.epsilon, report.clients)].join("  ");
  }

  private drawBar(): void {
    const counter = `${this.round}/${this.totalRounds}`;
    const fields = this.statusFields(this.loss, this.accuracy, this.epsilon, this.clients);
    // Writing into the last column wraps on many terminals, so the line stays one short.
    const width = (this.stream.columns ?? defaultColumns) - 1;
    const statusLength = fields.reduce((sum, field) => sum + 2 + field.length, 0);
    const barWidth = Math.max(10, Math.min(40, width - counter.length - statusLength - 3));
    const filled = Math.round((barWidth * this.round) / this.totalRounds);
    let line = `[${"#".repeat(filled)}${"-".repeat(barWidth - filled)}] ${counter}`;
    // On a narrow terminal, whole fields that do not fit are left out rather than cut.
    for (const field of fields) if (line.length + 2 + field.length <= width) line += `  ${field}`;
    this.stream.write(`${clearLine}${line}`);
    this.barShown = true;
  }
}
