/**
 * A project that depends on the packed checkout, installed as a registry install would be, but
 * offline: its package-lock.json is cut from the checkout's own lock (the packages the project
 * needs, at the versions `npm ci` here already put in the npm cache), so `npm install --offline`
 * takes every tarball from the cache and the one for fedtensor from the packed file.
 *
 * Why a lock: without one npm asks the registry for each package's metadata, which the cache of
 * a lock-driven `npm ci` does not hold; with one it needs only the tarballs, by integrity.
 */
import { execFile, execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { promisify } from "node:util";

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
 * The lock's packages for a project whose package.json names `dependencies` (fedtensor among
 * them, as `fedtensorSpec`, a file: tarball relative to the project), from `checkout`'s lock.
 */
function lockedPackages(checkout: string, dependencies: Record<string, string>, fedtensorSpec: string): Record<string, LockEntry> {
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
  return packages;
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

/**
 * The environment of npm as a user's shell gives it: without the npm_* variables of the `npm
 * test` that runs these tests (npm_config_local_prefix would point npm at the checkout), and
 * without ONNXRUNTIME_NODE_INSTALL, which the install must not need.
 */
export function userEnvironment(): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name) && name !== "ONNXRUNTIME_NODE_INSTALL" && name !== "ONNXRUNTIME_NODE_INSTALL_CUDA"),
  );
}

/**
 * Installs the project at `projectDir` as `npm install` would from the registry, offline: its
 * fedtensor dependency becomes the packed `tarball`, and a lock cut from the checkout's names
 * every other package at a version in the npm cache. Returns npm's output.
 */
export async function installOffline(checkout: string, projectDir: string, tarball: string, timeout: number): Promise<string> {
  const manifestPath = join(projectDir, "package.json");
  const manifest = JSON.parse(readFileSync(manifestPath, "utf8")) as { name: string; version: string; dependencies: Record<string, string>; devDependencies?: Record<string, string> };
  const fedtensorSpec = `file:${relative(projectDir, tarball)}`;
  manifest.dependencies = { ...manifest.dependencies, fedtensor: fedtensorSpec };
  writeFileSync(manifestPath, `${JSON.stringify(manifest, null, 2)}\n`);
  const packages = lockedPackages(checkout, { ...manifest.dependencies, ...manifest.devDependencies }, fedtensorSpec);
  const root = { name: manifest.name, version: manifest.version, dependencies: manifest.dependencies, devDependencies: manifest.devDependencies };
  const lock = { name: manifest.name, version: manifest.version, lockfileVersion: 3, requires: true, packages: { "": root, ...packages } };
  writeFileSync(join(projectDir, "package-lock.json"), `${JSON.stringify(lock, null, 2)}\n`);
  const { stdout, stderr } = await promisify(execFile)("npm", ["install", "--offline", "--no-audit", "--no-fund"], {
    cwd: projectDir,
    env: userEnvironment(),
    timeout,
  });
  return stdout + stderr;
}
