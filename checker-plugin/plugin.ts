/**
 * The language-service plugin: a proxy over TypeScript's language service that explains FT
 * diagnostics, adds FedTensor types to hovers and offers FedTensor quick fixes.
 *
 * An editor's whole TypeScript support runs through this proxy, so a bug here must never cost
 * the user their editor: each hook first gets TypeScript's own result, then adds to it inside
 * a guard that logs a failure to the tsserver log and returns that plain result.
 */
import type ts from "typescript";
import { fedTensorCodeFixes } from "./codefixes.js";
import { explainDiagnostics } from "./diagnostics.js";
import { addFedTensorHover } from "./quickinfo.js";

type Hook<A extends unknown[], R> = (...args: A) => R;

function decorate(typescript: typeof ts, info: ts.server.PluginCreateInfo): ts.LanguageService {
  const base = info.languageService;
  const log = (message: string): void => info.project.projectService.logger.info(`[fedtensor/checker-plugin] ${message}`);

  /** The hook TypeScript runs, with `extend` applied to its result when that succeeds. */
  const extend = <A extends unknown[], R>(name: string, original: Hook<A, R>, extension: NoInfer<(result: R, ...args: A) => R>): Hook<A, R> => {
    return (...args) => {
      const result = original(...args);
      try {
        return extension(result, ...args);
      } catch (error) {
        // A cancelled request is tsserver's own control flow, not a failure.
        if (error instanceof typescript.OperationCanceledException) throw error;
        log(`${name} failed, TypeScript's result returned instead: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
        return result;
      }
    };
  };

  const proxy: ts.LanguageService = Object.create(null);
  for (const key of Object.keys(base) as (keyof ts.LanguageService)[]) {
    const method = base[key] as (...args: unknown[]) => unknown;
    (proxy as unknown as Record<string, unknown>)[key] = (...args: unknown[]) => method.apply(base, args);
  }
  proxy.getSemanticDiagnostics = extend("getSemanticDiagnostics", base.getSemanticDiagnostics.bind(base), explainDiagnostics);
  proxy.getQuickInfoAtPosition = extend("getQuickInfoAtPosition", base.getQuickInfoAtPosition.bind(base), (quickInfo, fileName) =>
    addFedTensorHover(typescript, base.getProgram(), quickInfo, fileName),
  );
  proxy.getCodeFixesAtPosition = extend(
    "getCodeFixesAtPosition",
    base.getCodeFixesAtPosition.bind(base),
    (fixes, fileName, start, end, errorCodes) => [
      ...fedTensorCodeFixes(typescript, base.getProgram(), base.getSemanticDiagnostics(fileName), fileName, start, end, errorCodes),
      ...fixes,
    ],
  );
  return proxy;
}

/** The plugin factory that tsserver calls with its own TypeScript module. */
export function createPlugin(modules: { typescript: typeof ts }): ts.server.PluginModule {
  return {
    create(info) {
      try {
        return decorate(modules.typescript, info);
      } catch (error) {
        info.project.projectService.logger.info(`[fedtensor/checker-plugin] not enabled: ${String(error)}`);
        return info.languageService;
      }
    },
  };
}
