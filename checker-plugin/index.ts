/**
 * Entry point of the checker plugin, enabled in a project's tsconfig.json by
 * `"plugins": [{ "name": "fedtensor/checker-plugin" }]`.
 *
 * tsserver loads a plugin with require() and calls the module itself as the factory, so this
 * file is compiled to CommonJS (checker-plugin/tsconfig.build.json, into dist/cjs) and replaces
 * its exports with the factory. tsserver resolves `fedtensor/checker-plugin` the way Node did
 * before package "exports": through the "main" of checker-plugin/package.json, which points
 * at the compiled file; Node's own require() takes the package's "exports" entry to it.
 */
import { createPlugin } from "./plugin.js";

module.exports = createPlugin;
