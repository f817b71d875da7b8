import { describe, expect, test } from "vitest";
import {
  add,
  atClients,
  atServer,
  broadcast,
  cast,
  f32,
  greater,
  i32,
  map,
  mean,
  mul,
  program,
  reduceMean,
  reduceSum,
  reduceWeightedMean,
  sub,
  sum,
} from "../../src/index.js";
import { fedAvgProgram } from "../../src/lib/algorithms/fedavg.js";
import { logistic } from "../../src/lib/models/dense.js";

describe("program.signature prints the TFF-style type (SPEC section 1)", () => {
  test("DrJAX/TFF temperature sensors: the fraction of readings above a threshold", () => {
    const sensors = program({ readings: atClients(f32([])), threshold: atServer(f32([])) }, ({ readings, threshold }) =>
      reduceMean(map((r, t) => cast(greater(r, t), "float32"), readings, broadcast(threshold))),
    );
    expect(sensors.signature).toBe("(<readings={f32[]}@CLIENTS,threshold=f32[]@SERVER> -> f32[]@SERVER)");
  });

  test("a FedAvg round of logistic regression", () => {
    expect(fedAvgProgram(logistic).signature).toBe(
      "(<params=<w=f32[784,10],b=f32[10]>@SERVER,x={f32[S,B,784]}@CLIENTS,y={i32[S,B]}@CLIENTS," +
        "mask={f32[S,B]}@CLIENTS,count={f32[]}@CLIENTS,lr=f32[]> -> <params=<w=f32[784,10],b=f32[10]>,loss=f32[]>@SERVER)",
    );
  });

  test("federated analytics: mean and count of client values", () => {
    const analytics = program({ x: atClients(f32(["N"])) }, ({ x }) => ({
      mean: reduceMean(map((v) => mean(v), x)),
      total: reduceSum(map((v) => sum(v), x)),
    }));
    expect(analytics.signature).toBe("(<x={f32[N]}@CLIENTS> -> <mean=f32[],total=f32[]>@SERVER)");
  });

  test("a program whose outputs sit at different placements, and an unknown dim", () => {
    const mixed = program({ w: atServer(f32([3])), x: atClients(f32([null, 3])), scale: f32([]) }, ({ w, x, scale }) => ({
      perClient: map((wm, xm) => mul(sum(mul(xm, wm)), scale), broadcast(w), x),
      server: mul(w, scale),
    }));
    expect(mixed.signature).toBe("(<w=f32[3]@SERVER,x={f32[?,3]}@CLIENTS,scale=f32[]> -> <perClient={f32[]}@CLIENTS,server=f32[3]@SERVER>)");
  });

  test("an all-equal CLIENTS output prints without braces", () => {
    const copy = program({ w: atServer(i32([2])) }, ({ w }) => broadcast(w));
    expect(copy.signature).toBe("(<w=i32[2]@SERVER> -> i32[2]@CLIENTS)");
  });

  test("weighted mean of per-client updates, arrays as inputs", () => {
    const averaging = program(
      { updates: atClients([f32([4]), f32([2])]), weight: atClients(f32([])) },
      ({ updates, weight }) => reduceWeightedMean(map((u) => [add(u[0], 1), sub(u[1], 1)], updates), weight),
    );
    expect(averaging.signature).toBe("(<updates={<f32[4],f32[2]>}@CLIENTS,weight={f32[]}@CLIENTS> -> <f32[4],f32[2]>@SERVER)");
  });
});
