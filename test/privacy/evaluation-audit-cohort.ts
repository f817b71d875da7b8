/**
 * The cohort the private evaluation's audits (audit-evaluation, audit-ddp-evaluation) release
 * histograms of: a fixed logistic model and six clients' held-out examples, and a canary client
 * whose presence the audit tries to detect.
 */
import { host } from "../lib/helpers.js";

// Class 1 when the first feature is larger: w = [[0, 1], [0, -1]] scores x0 - x1 for class 1.
export const params = { w: host([2, 2], [0, 1, 0, -1]), b: host([2], [0, 0]) };
/** Each client's two held-out examples (x0, x1, label): accuracies 0, 0.5, 0.5, 1, 0, 1. */
export const others = [
  [0.9, 0.1, 0, 0.2, 0.8, 1],
  [0.9, 0.1, 1, 0.2, 0.8, 1],
  [0.7, 0.3, 0, 0.1, 0.6, 0],
  [0.6, 0.4, 1, 0.3, 0.9, 0],
  [0.2, 0.5, 1, 0.8, 0.4, 0],
  [0.5, 0.1, 1, 0.1, 0.5, 0],
];
/** Both its examples right: accuracy 1, the top bin. */
export const canary = [0.8, 0.2, 1, 0.3, 0.7, 0];
