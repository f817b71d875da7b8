/**
 * The client tokens of a running `fedtensor serve`, reloaded from --client-tokens on SIGHUP
 * (docs/deployment.md, "Revoking a client"). A reload keeps each known token's client id, so
 * that a connected client stays who it was while the lines around its token change; a new
 * token gets the next number after the highest ever given in this process; a token no longer
 * in the file is revoked (the registry disconnects its client).
 */

/** Token hashes to client ids, as readTokens (clients.ts) makes them. */
export type TokenIds = ReadonlyMap<string, string>;

export interface TokenReload {
  /** The tokens now in force: known ones with their ids, new ones numbered on. */
  readonly tokens: Map<string, string>;
  /** The ids whose tokens left the file. */
  readonly revoked: readonly string[];
  /** The ids given to new tokens. */
  readonly added: readonly string[];
}

const idNumber = (id: string) => Number(/^client-(\d+)$/.exec(id)?.[1] ?? 0);

/**
 * The tokens of `fresh` (a reread file, ids by line order) with the ids of `current` kept;
 * `highest` is the largest client number given so far (ids are never reused in a process).
 */
export function reloadTokens(current: TokenIds, fresh: TokenIds, highest: number): TokenReload {
  const tokens = new Map<string, string>();
  const added: string[] = [];
  let next = Math.max(highest, ...[...current.values()].map(idNumber));
  for (const hash of fresh.keys()) {
    const known = current.get(hash);
    if (known !== undefined) tokens.set(hash, known);
    else {
      const id = `client-${String(++next).padStart(3, "0")}`;
      tokens.set(hash, id);
      added.push(id);
    }
  }
  const kept = new Set(tokens.values());
  const revoked = [...current.values()].filter((id) => !kept.has(id));
  return { tokens, revoked, added };
}

/** The largest client number in `tokens`. */
export const highestId = (tokens: TokenIds): number => Math.max(0, ...[...tokens.values()].map(idNumber));
