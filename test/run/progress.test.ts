import { describe, expect, it } from "vitest";
import { formatDuration, RoundProgress } from "../../src/lib/run/progress.js";

/** A stream that records what is written, as a terminal (isTTY) or a CI log would receive it. */
function fakeStream(isTTY: boolean, columns?: number) {
  const chunks: string[] = [];
  return { chunks, stream: { isTTY, columns, write: (chunk: string) => chunks.push(chunk) } };
}

/** A clock the test advances by hand, in milliseconds. */
function fakeClock() {
  let ms = 0;
  return { now: () => ms, advance: (seconds: number) => (ms += seconds * 1000) };
}

describe("progress without a terminal", () => {
  it("prints one plain line per round with loss, accuracy, speed and ETA", () => {
    const { chunks, stream } = fakeStream(false);
    const clock = fakeClock();
    const progress = new RoundProgress({ stream, totalRounds: 20, now: clock.now });
    clock.advance(2);
    progress.update({ round: 1, loss: 0.5, accuracy: 0.8 });
    clock.advance(4);
    progress.update({ round: 2, loss: 0.41234 });
    progress.finish();
    expect(chunks).toEqual([
      "round  1/20  loss 0.5000  acc 80.00%  2.00 s/round  eta 0:38\n",
      "round  2/20  loss 0.4123  3.00 s/round  eta 0:54\n",
    ]);
  });

  it("shows the clients' held-out accuracy, mean and p10, after central accuracy", () => {
    const { chunks, stream } = fakeStream(false);
    const clock = fakeClock();
    const progress = new RoundProgress({ stream, totalRounds: 2, now: clock.now });
    clock.advance(1);
    progress.update({ round: 1, loss: 0.5, accuracy: 0.8, clients: { mean: 0.7512, p10: 0.5 } });
    expect(chunks).toEqual(["round 1/2  loss 0.5000  acc 80.00%  client acc 75.12% (p10 50.00%)  1.00 s/round  eta 0:01\n"]);
  });

  it("times only the rounds run since a resume", () => {
    const { chunks, stream } = fakeStream(false);
    const clock = fakeClock();
    const progress = new RoundProgress({ stream, totalRounds: 100, startRound: 40, now: clock.now });
    clock.advance(90);
    progress.update({ round: 41, accuracy: 0.9 });
    expect(chunks).toEqual(["round  41/100  acc 90.00%  90.00 s/round  eta 1:28:30\n"]);
  });

  it("prints messages as plain lines", () => {
    const { chunks, stream } = fakeStream(false);
    const progress = new RoundProgress({ stream, totalRounds: 3, now: () => 0 });
    progress.log("checkpoint written");
    progress.finish();
    expect(chunks).toEqual(["checkpoint written\n"]);
  });
});

describe("progress on a terminal", () => {
  it("redraws one bar line in place and ends it with a newline", () => {
    const { chunks, stream } = fakeStream(true, 100);
    const clock = fakeClock();
    const progress = new RoundProgress({ stream, totalRounds: 4, now: clock.now });
    clock.advance(1.5);
    progress.update({ round: 1, loss: 1.25, accuracy: 0.5 });
    clock.advance(1.5);
    progress.update({ round: 2, loss: 0.75 });
    progress.finish();
    const bar = (filled: number) => `[${"#".repeat(filled)}${"-".repeat(40 - filled)}]`;
    expect(chunks).toEqual([
      `\r\x1b[2K${bar(0)} 0/4`,
      `\r\x1b[2K${bar(10)} 1/4  loss 1.2500  acc 50.00%  1.50 s/round  eta 0:05`,
      // Accuracy stays on the bar until the next evaluation replaces it.
      `\r\x1b[2K${bar(20)} 2/4  loss 0.7500  acc 50.00%  1.50 s/round  eta 0:03`,
      "\n",
    ]);
    expect(chunks.slice(0, -1).every((chunk) => !chunk.includes("\n"))).toBe(true);
  });

  it("leaves out whole fields that do not fit a narrow terminal", () => {
    const { chunks, stream } = fakeStream(true, 50);
    const clock = fakeClock();
    const progress = new RoundProgress({ stream, totalRounds: 1000, now: clock.now });
    clock.advance(3);
    progress.update({ round: 500, loss: 0.123456, accuracy: 0.987 });
    // Speed and ETA would pass column 49; writing into the last column wraps on many terminals.
    expect(chunks.at(-1)).toBe("\r\x1b[2K[#####-----] 500/1000  loss 0.1235  acc 98.70%");
  });

  it("clears the bar for a message and draws it again below", () => {
    const { chunks, stream } = fakeStream(true, 80);
    const progress = new RoundProgress({ stream, totalRounds: 2, now: () => 0 });
    progress.log("resumed from round 0");
    expect(chunks.slice(1)).toEqual(["\r\x1b[2K", "resumed from round 0\n", `\r\x1b[2K[${"-".repeat(40)}] 0/2`]);
  });
});

describe("formatDuration", () => {
  it("writes m:ss, or h:mm:ss from an hour", () => {
    expect([0, 9.6, 61, 3599, 3600, 36_061].map(formatDuration)).toEqual(["0:00", "0:10", "1:01", "59:59", "1:00:00", "10:01:01"]);
  });
});
