/**
 * The annotations of the mistake fixtures (test/fixtures/type-errors/): a comment
 *
 *     // error: FT101: broadcast() takes a SERVER value, got {f32[B,784]}@CLIENTS
 *
 * above the line where tsc must report that message, and where the same mistake made from
 * JavaScript fails while tracing with the same text. Where tracing knows more than the types
 * can (a reduction called inside map()'s function looks to tsc like a captured SERVER value),
 * a `// trace error: FT105: ...` comment in the same export gives what tracing throws instead.
 */

export interface ExpectedError {
  /** 1-based line the diagnostic must start on: the first after the annotation lines. */
  readonly line: number;
  readonly code: string;
  /** The message as the catalogue fills it, after "FTxxx: ". */
  readonly message: string;
  /** Whether tsc reports it (and tracing too, unless a trace error is annotated), or tracing only. */
  readonly by: "tsc" | "trace";
}

const annotation = /^\s*\/\/ (trace )?error: (FT\d{3}): (.*)$/;

/** Annotations with the line they apply to: the next line that is not an annotation. */
export function annotationsOf(text: string): ExpectedError[] {
  const expected: ExpectedError[] = [];
  let pending: Omit<ExpectedError, "line">[] = [];
  text.split("\n").forEach((line, index) => {
    const match = annotation.exec(line);
    if (match !== null) {
      pending.push({ by: match[1] === undefined ? "tsc" : "trace", code: match[2]!, message: match[3]! });
    } else {
      expected.push(...pending.map((p) => ({ ...p, line: index + 1 })));
      pending = [];
    }
  });
  return expected;
}
