/**
 * The runtime side of the error catalogue: FedTensorError carries an FT code and the message
 * filled from the same template the types use.
 */
import { catalogue, type ErrorCode } from "./catalogue.js";
import { redactCredentials } from "./redact.js";

export type MessageParams = { readonly [name: string]: string | number };

/**
 * Fills a catalogue template; throws if a placeholder is missing, so templates and callers stay
 * in step. A URL's password in a value never reaches the message (redact.ts).
 */
export function formatMessage(code: ErrorCode, params: MessageParams): string {
  const template: string = catalogue[code].message;
  const body = template.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined) throw new Error(`internal: ${code} message needs {${name}}`);
    return redactCredentials(String(value));
  });
  return `${code}: ${body}`;
}

/** Where in the user's code an error comes from (source-location.ts); set on FT errors thrown while program(...) traces. */
export interface SourceLocation {
  /** A path (a file: URL in the stack is turned into one). */
  readonly file: string;
  /** 1-based, as editors and tsc count. */
  readonly line: number;
  readonly column: number;
  /** "at file:line:col", then the source line with a caret under the column when the file can be read. */
  readonly text: string;
}

interface Advice {
  readonly explanation: string;
  readonly fix: string;
}

/**
 * The error every FedTensor check throws: its `code` (FT101...), the `params` its catalogue
 * message was filled with, the user's source line when thrown while tracing, and the catalogue's
 * `explanation` and `fix`.
 */
export class FedTensorError extends Error {
  readonly code: ErrorCode;
  readonly params: MessageParams;
  /** The user's line that caused it, for errors thrown while a program is traced; the CLI prints it. */
  declare readonly location?: SourceLocation;

  constructor(code: ErrorCode, params: MessageParams, options?: { cause?: unknown }) {
    super(formatMessage(code, params), options);
    this.name = "FedTensorError";
    this.code = code;
    this.params = params;
  }

  /**
   * The catalogue's explanation and fix, for people (the CLI and the plugin print these): the
   * ones for this error's option where the catalogue has them (FT305 for a reused --out).
   */
  get explanation(): string {
    return this.advice.explanation;
  }
  get fix(): string {
    return this.advice.fix;
  }
  private get advice(): Advice {
    const entry: Advice & { byOption?: Readonly<Record<string, Advice>> } = catalogue[this.code];
    const option = this.params["option"];
    return (typeof option === "string" ? entry.byOption?.[option] : undefined) ?? entry;
  }
}

export function ftError(code: ErrorCode, params: MessageParams): FedTensorError {
  return new FedTensorError(code, params);
}
