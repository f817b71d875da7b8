/** A round with too few valid updates, or whose secure sum aborted: it changes nothing, and the run goes on. */
export class RoundAborted extends Error {}

/** A secure round whose unmasked sum lies outside the range honest inputs allow (FT355): discarded, and counted in the metrics. */
export class SumDiscarded extends RoundAborted {}
