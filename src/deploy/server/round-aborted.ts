/** A round with too few valid updates, or whose secure sum aborted: it changes nothing, and the run goes on. */
export class RoundAborted extends Error {}
