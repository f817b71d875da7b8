/**
 * Shape rules at run time, mirroring types/shape.ts and types/reshape.ts rule for rule, so a
 * program checked by tsc and one built from JavaScript (or with dims known only at run time)
 * fail with the same code and text. Element counts use BigInt, exact like the digit
 * arithmetic of the types.
 */
import { ftError } from "../errors/error.js";
import { printDim, printShape } from "./print.js";
import type { DimValue } from "./types.js";

export type Shape = readonly DimValue[];

/** The operation and its operands as messages print them. */
export interface ShapeContext {
  readonly op: string;
  readonly a: string;
  readonly b: string;
}

const isUnknown = (d: DimValue): d is null => d === null;

export function dimsAgree(a: DimValue, b: DimValue): boolean {
  return isUnknown(a) || isUnknown(b) || a === b;
}

const knownDim = (a: DimValue, b: DimValue): DimValue => (isUnknown(a) ? b : a);

function broadcastDim(a: DimValue, b: DimValue): DimValue | undefined {
  if (dimsAgree(a, b)) return knownDim(a, b);
  if (a === 1) return b;
  if (b === 1) return a;
  return undefined;
}

export function broadcastShapes(a: Shape, b: Shape, ctx: ShapeContext): DimValue[] {
  const out: DimValue[] = [];
  for (let i = 1; i <= Math.max(a.length, b.length); i++) {
    const da = i <= a.length ? a[a.length - i]! : undefined;
    const db = i <= b.length ? b[b.length - i]! : undefined;
    if (da === undefined) out.unshift(db!);
    else if (db === undefined) out.unshift(da);
    else {
      const d = broadcastDim(da, db);
      if (d === undefined) throw ftError("FT201", { ...ctx, da: printDim(da), db: printDim(db) });
      out.unshift(d);
    }
  }
  return out;
}

export function matmulShape(a: Shape, b: Shape, ctx: ShapeContext): DimValue[] {
  if (a.length === 0 || b.length === 0) throw ftError("FT204", { op: ctx.op, axis: -1, a: ctx.a, rank: 0 });
  const contract = (ka: DimValue, kb: DimValue, result: DimValue[]): DimValue[] => {
    if (!dimsAgree(ka, kb)) throw ftError("FT202", { ...ctx, ka: printDim(ka), kb: printDim(kb) });
    return result;
  };
  if (a.length === 1) {
    if (b.length === 1) return contract(a[0]!, b[0]!, []);
    return contract(a[0]!, b[b.length - 2]!, [...b.slice(0, -2), b[b.length - 1]!]);
  }
  const n = a[a.length - 2]!;
  const k = a[a.length - 1]!;
  if (b.length === 1) return contract(k, b[0]!, [...a.slice(0, -2), n]);
  const batch = broadcastShapes(a.slice(0, -2), b.slice(0, -2), ctx);
  return contract(k, b[b.length - 2]!, [...batch, n, b[b.length - 1]!]);
}

/** An axis as 0..rank-1, or FT204. */
export function normalizeAxis(axis: number, rank: number, op: string, a: string): number {
  if (!Number.isInteger(axis) || axis < -rank || axis >= rank) throw ftError("FT204", { op, axis, a, rank });
  return axis < 0 ? axis + rank : axis;
}

export function normalizeAxes(axes: readonly number[], rank: number, op: string, a: string): number[] {
  return axes.map((axis) => normalizeAxis(axis, rank, op, a));
}

export function reduceShape(shape: Shape, axes: readonly number[] | undefined, keepDims: boolean, op: string, a: string): DimValue[] {
  const drop = new Set(axes === undefined ? shape.map((_, i) => i) : normalizeAxes(axes, shape.length, op, a));
  const out: DimValue[] = [];
  shape.forEach((d, i) => {
    if (!drop.has(i)) out.push(d);
    else if (keepDims) out.push(1);
  });
  return out;
}

export function transposeShape(shape: Shape, perm: readonly number[] | undefined, op: string, a: string): DimValue[] {
  if (perm === undefined) return [...shape].reverse();
  if (perm.length !== shape.length) throw ftError("FT204", { op, axis: perm.length, a, rank: shape.length });
  const axes = normalizeAxes(perm, shape.length, op, a);
  const seen = new Set<number>();
  for (const [i, axis] of axes.entries()) {
    if (seen.has(axis)) throw ftError("FT204", { op, axis, a, rank: shape.length });
    seen.add(axis);
  }
  return axes.map((axis) => shape[axis]!);
}

export function addDims(a: DimValue, b: DimValue): DimValue {
  return typeof a === "number" && typeof b === "number" ? a + b : null;
}

/** Dim-wise join: at `axis` dims add (concat), elsewhere they must agree; undefined when they don't. */
function joinShapes(a: Shape, b: Shape, axis: number | undefined): DimValue[] | undefined {
  if (a.length !== b.length) return undefined;
  const out: DimValue[] = [];
  for (let i = 0; i < a.length; i++) {
    if (i === axis) out.push(addDims(a[i]!, b[i]!));
    else if (dimsAgree(a[i]!, b[i]!)) out.push(knownDim(a[i]!, b[i]!));
    else return undefined;
  }
  return out;
}

export function concatShape(shapes: readonly Shape[], axis: number, op: string, a: string): DimValue[] {
  const first = shapes[0]!;
  const at = normalizeAxis(axis, first.length, op, a);
  let acc: DimValue[] = [...first];
  for (const next of shapes.slice(1)) {
    const joined = joinShapes(acc, next, at);
    if (joined === undefined) throw ftError("FT206", { op, want: `equal dims outside axis ${at}`, a: printShape(acc), b: printShape(next) });
    acc = joined;
  }
  return acc;
}

export function stackShape(shapes: readonly Shape[], axis: number, op: string, a: string): DimValue[] {
  let acc: DimValue[] = [...shapes[0]!];
  for (const next of shapes.slice(1)) {
    const joined = joinShapes(acc, next, undefined);
    if (joined === undefined) throw ftError("FT206", { op, want: "equal shapes", a: printShape(acc), b: printShape(next) });
    acc = joined;
  }
  const at = normalizeAxis(axis, acc.length + 1, op, a);
  return [...acc.slice(0, at), shapes.length, ...acc.slice(at)];
}

export function expandDimsShape(shape: Shape, axis: number, op: string, a: string): DimValue[] {
  const at = normalizeAxis(axis, shape.length + 1, op, a);
  return [...shape.slice(0, at), 1, ...shape.slice(at)];
}

export function sliceShape(shape: Shape, begin: readonly number[], size: readonly number[], op: string, a: string): DimValue[] {
  if (begin.length !== shape.length) throw ftError("FT204", { op, axis: begin.length, a, rank: shape.length });
  if (size.length !== shape.length) throw ftError("FT204", { op, axis: size.length, a, rank: shape.length });
  return shape.map((d, i) => {
    const b = begin[i]!;
    const s = size[i]!;
    const known = typeof d === "number";
    if (b < 0 || (known && b > d) || s < -1 || (known && s >= 0 && b + s > d)) {
      throw ftError("FT204", { op, axis: i, a, rank: shape.length });
    }
    if (s !== -1) return s;
    // All of an unknown dim is that dim (a named one keeps its name); part of it is unknown.
    return known ? d - b : b === 0 ? d : null;
  });
}

/** The element count as literal product and named factors; undefined when a dim is unknown. */
function elementCount(shape: Shape): { literal: bigint; names: string[]; holes: number } | undefined {
  let literal = 1n;
  const names: string[] = [];
  let holes = 0;
  for (const d of shape) {
    if (d === null) return undefined;
    if (d === -1) holes++;
    else if (typeof d === "string") names.push(d);
    else literal *= BigInt(d);
  }
  return { literal, names, holes };
}

/** Names of `from` left after removing each name of `to` once, or undefined when `to` has extra names. */
function leftoverNames(from: readonly string[], to: readonly string[]): string[] | undefined {
  const left = [...from];
  for (const name of to) {
    const at = left.indexOf(name);
    if (at < 0) return undefined;
    left.splice(at, 1);
  }
  return left;
}

const printCount = (c: { literal: bigint; names: string[] }): string =>
  c.names.length === 0 ? String(c.literal) : [...(c.literal === 1n ? [] : [String(c.literal)]), ...c.names].join("*");

/**
 * reshape's target shape, with a -1 resolved where evident (see types/reshape.ts); a -1 that
 * is not evident stays null and is resolved when the run binds the dims.
 */
export function reshapeShape(from: Shape, to: Shape, a: string): DimValue[] {
  const b = printShape(to);
  const source = elementCount(from);
  const target = elementCount(to);
  const unknownHoles = () => to.map((d) => (d === -1 ? null : d));
  if (source === undefined || target === undefined || target.holes > 1) return unknownHoles();
  if (target.holes === 0) {
    const left = leftoverNames(source.names, target.names);
    if (source.literal !== target.literal || left === undefined || left.length > 0) {
      throw ftError("FT203", { a, b, na: printCount(source), nb: printCount(target) });
    }
    return [...to];
  }
  const left = leftoverNames(source.names, target.names);
  if (left !== undefined && left.length === 0 && source.names.length === target.names.length) {
    // All factors known (or the same names on both sides): the -1 is a quotient, or an error.
    if (target.literal === 0n || source.literal % target.literal !== 0n) {
      throw ftError("FT203", { a, b, na: printCount(source), nb: printCount(target) });
    }
    const hole = Number(source.literal / target.literal);
    return to.map((d) => (d === -1 ? hole : d));
  }
  if (source.literal !== target.literal || left === undefined || left.length > 1) return unknownHoles();
  return to.map((d) => (d === -1 ? (left[0] ?? 1) : d));
}

/** Output size along one spatial dim of a convolution or pooling window. */
export function windowDim(d: DimValue, k: number, stride: number, padding: "same" | "valid"): DimValue {
  if (typeof d !== "number") return null;
  if (padding === "same") return Math.ceil(d / stride);
  return d < k ? null : Math.ceil((d - k + 1) / stride);
}
