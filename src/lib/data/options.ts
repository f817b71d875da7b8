/** Range checks for the data layer's numeric options: a bad value is FT305 naming the option. */
import { ftError } from "../../errors/error.js";

export function checkInteger(option: string, value: number, min: number): void {
  if (!Number.isInteger(value) || value < min) {
    throw ftError("FT305", { option, why: `must be an integer >= ${min}, got ${value}` });
  }
}

export function checkPositive(option: string, value: number): void {
  if (!(Number.isFinite(value) && value > 0)) {
    throw ftError("FT305", { option, why: `must be a finite number > 0, got ${value}` });
  }
}
