/**
 * A project that depends on the packed checkout, installed as a registry install would be, but
 * offline: its package-lock.json is cut from the checkout's own lock (the packages the project
 * needs, at the versions `npm ci` here already put in the npm cache), so `npm install --offline`
 * takes every tarball from the cache and the one for fedtensor from the packed file.
 *
 * Why a lock: without one npm asks the registry for each package's metadata, which the cache of
 * a lock-driven `npm ci` does not hold; with one it needs only the tarballs, by integrity.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";

interface LockEntry {
  readonly version?: string;
  readonly dependencies?: Record<string, string>;
  readonly optionalDependencies?: Record<string, string>;
  readonly peerDependencies?: Record<string, string>;
  readonly [field: string]: unknown;
}

interface Lock {
  readonly packages: Record<string, LockEntry>;
}

/** Where node would find `name` from the package at `from` ("" for the root), in `packages`. */
function resolveIn(packages: Record<string, LockEntry>, from: string, name: string): string | undefined {
  let base = from;
  for (;;) {
    const candidate = base === "" ? `node_modules/${name}` : `${base}/node_modules/${name}`;
    if (packages[candidate] !== undefined) return candidate;
    if (base === "") return undefined;
    const cut = base.lastIndexOf("/node_modules/");
    base = cut < 0 ? "" : base.slice(0, cut);
  }
}

/**
 * The lock of a project at `projectDir` whose package.json names `dependencies` (with fedtensor
 * as `fedtensorSpec`, a file: tarball relative to the project), taken from `checkout`'s lock.
 */
export function lockForProject(checkout: string, dependencies: Record<string, string>, fedtensorSpec: string): object {
  const source = JSON.parse(readFileSync(join(checkout, "package-lock.json"), "utf8")) as Lock;
  const manifest = JSON.parse(readFileSync(join(checkout, "package.json"), "utf8")) as Record<string, unknown>;
  const packages: Record<string, LockEntry> = {};
  const pending: [string, string, boolean][] = [];
  const want = (from: string, deps: Record<string, string> | undefined, optional: boolean): void => {
    for (const name of Object.keys(deps ?? {})) pending.push([from, name, optional]);
  };
  // fedtensor itself sits at the top, as npm would put it; its dependencies resolve beside it.
  const fedtensorDeps = {
    ...(manifest.dependencies as Record<string, string>),
    ...(manifest.optionalDependencies as Record<string, string>),
  };
  want("", fedtensorDeps, false);
  want("", Object.fromEntries(Object.entries(dependencies).filter(([name]) => name !== "fedtensor")), false);
  while (pending.length > 0) {
    const [from, name, optional] = pending.pop()!;
    const at = resolveIn(source.packages, from, name);
    if (at === undefined) {
      if (optional) continue;
      throw new Error(`packed install: ${name} (needed by ${from || "the project"}) is not in the checkout's package-lock.json`);
    }
    if (packages[at] !== undefined) continue;
    const { dev: _dev, devOptional: _devOptional, peer: _peer, ...entry } = source.packages[at]!;
    packages[at] = entry;
    want(at, entry.dependencies, false);
    want(at, entry.optionalDependencies, true);
    want(at, entry.peerDependencies, true);
  }
  packages["node_modules/fedtensor"] = {
    version: manifest.version as string,
    resolved: fedtensorSpec,
    license: manifest.license,
    dependencies: manifest.dependencies as Record<string, string>,
    optionalDependencies: manifest.optionalDependencies as Record<string, string>,
    peerDependencies: manifest.peerDependencies as Record<string, string>,
    peerDependenciesMeta: manifest.peerDependenciesMeta,
    bin: manifest.bin,
    engines: manifest.engines,
  };
  return {
    lockfileVersion: 3,
    requires: true,
    packages: { "": { dependencies }, ...packages },
  };
}

/** `npm pack` of `checkout` (built already) into `destination`; returns the tarball's path. */
export function packCheckout(checkout: string, destination: string): string {
  const out = execFileSync("npm", ["pack", "--json", "--ignore-scripts", "--pack-destination", destination], {
    cwd: checkout,
    encoding: "utf8",
  });
  const [{ filename }] = JSON.parse(out) as [{ filename: string }];
  return join(destination, filename);
}
