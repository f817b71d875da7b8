/**
 * CSV as RFC 4180 defines it: records separated by line breaks (CRLF, or LF as most tools
 * write), fields by commas; a field in double quotes may hold commas, line breaks and quotes
 * written twice (""). Hand-written: no CSV parser is among the project's dependencies, and the
 * grammar is these few rules. Blank lines are skipped, and a byte order mark is dropped.
 */

/** A CSV syntax error, with the 1-based line where it is; the loader wraps it as FT304 with the file. */
export class CsvSyntaxError extends Error {}

export interface CsvRecord {
  readonly fields: string[];
  /** The 1-based line the record starts on, for error messages. */
  readonly line: number;
}

export function parseCsv(text: string): CsvRecord[] {
  const records: CsvRecord[] = [];
  let fields: string[] = [];
  let field = "";
  let line = 1;
  let recordLine = 1;
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  // Whether the current record has any content yet: a blank line is no record.
  let started = false;
  const endRecord = () => {
    if (started) records.push({ fields: [...fields, field], line: recordLine });
    fields = [];
    field = "";
    started = false;
  };
  while (i < text.length) {
    const char = text[i]!;
    if (char === '"') {
      if (field !== "") throw new CsvSyntaxError(`line ${line}: a quote inside an unquoted field (quote the whole field and write the quote twice)`);
      const quoteLine = line;
      // An empty quoted field ("") is a field, and makes a record, though it adds no text.
      started = true;
      i++;
      for (;;) {
        if (i >= text.length) throw new CsvSyntaxError(`line ${quoteLine}: a quoted field is never closed`);
        const inner = text[i]!;
        if (inner === '"') {
          if (text[i + 1] === '"') {
            field += '"';
            i += 2;
            continue;
          }
          i++;
          break;
        }
        if (inner === "\n") line++;
        field += inner;
        i++;
      }
      const next = text[i];
      if (next !== undefined && next !== "," && next !== "\n" && !(next === "\r" && text[i + 1] === "\n")) {
        throw new CsvSyntaxError(`line ${line}: text after a closing quote (a field is quoted whole, or not at all)`);
      }
      continue;
    }
    if (char === ",") {
      fields.push(field);
      field = "";
      started = true;
      i++;
      continue;
    }
    if (char === "\n" || (char === "\r" && text[i + 1] === "\n")) {
      endRecord();
      i += char === "\r" ? 2 : 1;
      line++;
      recordLine = line;
      continue;
    }
    field += char;
    started = true;
    i++;
  }
  endRecord();
  return records;
}
