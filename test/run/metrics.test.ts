import { appendFileSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { FedTensorError } from "../../src/errors/error.js";
import { csvLine, metricsFiles, MetricsWriter, readMetrics } from "../../src/lib/run/metrics.js";
import { tempDir } from "./temp-dir.js";

const runDir = (): string => tempDir("ft-metrics-");

const read = (dir: string, name: string): string => readFileSync(join(dir, name), "utf8");

describe("MetricsWriter", () => {
  it("writes each row to metrics.jsonl and metrics.csv before append returns", () => {
    const dir = runDir();
    const writer = MetricsWriter.create(dir);
    writer.append({ round: 1, loss: 2.5, accuracy: null, algorithm: "fedavg" });
    // Read while the writer is still open: a run killed now keeps round 1.
    expect(read(dir, metricsFiles.jsonl)).toBe('{"round":1,"loss":2.5,"accuracy":null,"algorithm":"fedavg"}\n');
    expect(read(dir, metricsFiles.csv)).toBe("round,loss,accuracy,algorithm\r\n1,2.5,,fedavg\r\n");
    // Columns come out in the header's order whatever order a later row lists them in.
    writer.append({ accuracy: 0.91, round: 2, algorithm: "fedavg", loss: 1.25 });
    writer.close();
    expect(readMetrics(join(dir, metricsFiles.jsonl))).toEqual([
      { round: 1, loss: 2.5, accuracy: null, algorithm: "fedavg" },
      { round: 2, loss: 1.25, accuracy: 0.91, algorithm: "fedavg" },
    ]);
    expect(read(dir, metricsFiles.csv)).toBe("round,loss,accuracy,algorithm\r\n1,2.5,,fedavg\r\n2,1.25,0.91,fedavg\r\n");
  });

  it("quotes CSV fields with commas, quotes and line breaks", () => {
    expect(csvLine(["plain", 'say "hi"', "a,b", "two\nlines", true, 1e-7, null])).toBe(
      'plain,"say ""hi""","a,b","two\nlines",true,1e-7,\r\n',
    );
  });

  it("starts fresh files, replacing an earlier run's", () => {
    const dir = runDir();
    writeFileSync(join(dir, metricsFiles.jsonl), '{"round":9}\n');
    writeFileSync(join(dir, metricsFiles.csv), "round\r\n9\r\n");
    MetricsWriter.create(dir).close();
    expect(read(dir, metricsFiles.jsonl)).toBe("");
    expect(read(dir, metricsFiles.csv)).toBe("");
  });

  it("rejects rows whose columns differ from the first row's, writing nothing", () => {
    const dir = runDir();
    const writer = MetricsWriter.create(dir);
    writer.append({ round: 1, loss: 1 });
    expect(() => writer.append({ round: 2, loss: 1, accuracy: 0.5 })).toThrow(
      "metrics row for round 2 does not match the columns round, loss: new columns accuracy",
    );
    expect(() => writer.append({ round: 2 })).toThrow(
      "metrics row for round 2 does not match the columns round, loss: missing columns loss (write null for a value a round lacks)",
    );
    expect(() => writer.append({ round: 2, loss: Number.NaN })).toThrow(
      "FT303: round 2: the metrics value loss (NaN) is not finite; the server state was left unchanged",
    );
    writer.close();
    expect(readMetrics(join(dir, metricsFiles.jsonl))).toEqual([{ round: 1, loss: 1 }]);
    expect(read(dir, metricsFiles.csv)).toBe("round,loss\r\n1,1\r\n");

    const fresh = runDir();
    const first = MetricsWriter.create(fresh);
    expect(() => first.append({ round: 1, loss: Number.POSITIVE_INFINITY })).toThrow("FT303: round 1: the metrics value loss (Infinity) is not finite");
    first.close();
    expect(read(fresh, metricsFiles.csv)).toBe("");
  });
});

describe("resuming metrics", () => {
  function writeRounds(dir: string, rounds: number): void {
    const writer = MetricsWriter.create(dir);
    for (let round = 1; round <= rounds; round++) writer.append({ round, loss: 1 / round, note: `r${round}` });
    writer.close();
  }

  it("sets rows after the resumed round aside, never deleting them, and continues both files", () => {
    const dir = runDir();
    writeRounds(dir, 5);
    const rows = read(dir, metricsFiles.jsonl).split("\n");
    const writer = MetricsWriter.resume(dir, 3);
    expect(writer.setAside).toEqual({ path: join(dir, "metrics.jsonl.superseded-1"), rounds: [4, 5] });
    expect(read(dir, "metrics.jsonl.superseded-1")).toBe(`${rows[3]}\n${rows[4]}\n`);
    expect(writer.lastRow).toEqual({ round: 3, loss: 1 / 3, note: "r3" });
    writer.append({ round: 4, loss: 0.2, note: "again" });
    writer.close();
    // A second resume before round 4 puts its row in a file of its own: none is overwritten.
    const again = MetricsWriter.resume(dir, 3);
    expect(again.setAside?.path).toBe(join(dir, "metrics.jsonl.superseded-2"));
    again.append({ round: 4, loss: 0.2, note: "again" });
    again.close();
    expect(readMetrics(join(dir, metricsFiles.jsonl)).map((row) => [row.round, row.note])).toEqual([
      [1, "r1"],
      [2, "r2"],
      [3, "r3"],
      [4, "again"],
    ]);
    expect(read(dir, metricsFiles.csv)).toBe(
      "round,loss,note\r\n1,1,r1\r\n2,0.5,r2\r\n3,0.3333333333333333,r3\r\n4,0.2,again\r\n",
    );
  });

  it("keeps the columns of the resumed run", () => {
    const dir = runDir();
    writeRounds(dir, 2);
    const writer = MetricsWriter.resume(dir, 2);
    expect(() => writer.append({ round: 3, loss: 1 })).toThrow("missing columns note");
    writer.close();
  });

  it("rebuilds the files after a kill left a torn last row", () => {
    const dir = runDir();
    writeRounds(dir, 2);
    appendFileSync(join(dir, metricsFiles.jsonl), '{"round":3,"lo');
    appendFileSync(join(dir, metricsFiles.csv), "3,0.3");
    expect(readMetrics(join(dir, metricsFiles.jsonl)).map((row) => row.round)).toEqual([1, 2]);
    MetricsWriter.resume(dir, 2).close();
    expect(read(dir, metricsFiles.jsonl)).toBe('{"round":1,"loss":1,"note":"r1"}\n{"round":2,"loss":0.5,"note":"r2"}\n');
    expect(read(dir, metricsFiles.csv)).toBe("round,loss,note\r\n1,1,r1\r\n2,0.5,r2\r\n");
  });

  it("starts empty files when resuming from round 0 or without metrics", () => {
    const dir = runDir();
    const writer = MetricsWriter.resume(dir, 0);
    writer.append({ round: 1, accuracy: 0.5 });
    writer.close();
    expect(read(dir, metricsFiles.csv)).toBe("round,accuracy\r\n1,0.5\r\n");
  });
});

describe("readMetrics", () => {
  function readError(content: string): FedTensorError {
    const path = join(runDir(), metricsFiles.jsonl);
    writeFileSync(path, content);
    try {
      readMetrics(path);
    } catch (error) {
      expect(error).toBeInstanceOf(FedTensorError);
      return error as FedTensorError;
    }
    throw new Error("readMetrics accepted a malformed file");
  }

  it("reports a malformed line that is not the torn last one as FT304", () => {
    const broken = readError('{"round":1}\n{"round":\n{"round":3}\n');
    expect([broken.code, broken.params.why]).toEqual(["FT304", "line 2 is not valid JSON"]);
    const roundless = readError('{"round":1}\n{"loss":2}\n');
    expect(roundless.params.why).toBe("line 2 is not a metrics row with an integer round");
    const missing = join(runDir(), "none.jsonl");
    expect(() => readMetrics(missing)).toThrow(`FT304: ${missing}: cannot read metrics`);
  });
});
