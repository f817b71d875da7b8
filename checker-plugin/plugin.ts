/**
 * The language-service plugin: a proxy over TypeScript's language service that explains FT
 * diagnostics (the whole file's and a visible region's), adds FedTensor types to hovers and
 * inlay hints, and offers verified FedTensor quick fixes, "fix all" among them. Its options
 * come from its tsconfig entry (options.ts).
 *
 * An editor's whole TypeScript support runs through this proxy, so a bug here must never cost
 * the user their editor: each hook first gets TypeScript's own result, then adds to it inside
 * a guard that logs a failure to the tsserver log and returns that plain result.
 */
import type ts from "typescript";
import { budgetDiagnostics } from "./budget.js";
import { explainDiagnostics } from "./diagnostics.js";
import { fedTensorInlayHints } from "./inlay-hints.js";
import { readOptions, pluginName, type PluginOptions } from "./options.js";
import { addFedTensorHover } from "./quickinfo.js";
import { fixAllId, VerifiedFixes } from "./verified-fixes.js";

type Hook<A extends unknown[], R> = (...args: A) => R;

/** tsserver's request for a visible region's diagnostics: internal in TypeScript 5.9, so absent from its declarations. */
interface RegionDiagnostics {
  getRegionSemanticDiagnostics?(fileName: string, ranges: ts.TextRange[]): { diagnostics: ts.Diagnostic[]; spans: ts.TextSpan[] } | undefined;
}

function decorate(typescript: typeof ts, info: ts.server.PluginCreateInfo, options: () => PluginOptions, log: (message: string) => void): ts.LanguageService {
  const base = info.languageService;

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
  const explain = (diagnostics: readonly ts.Diagnostic[]): ts.Diagnostic[] => explainDiagnostics(typescript, base.getProgram(), diagnostics, options());
  // A program's declared budget is checked here too (FT362; budget.ts): no type can price a release.
  proxy.getSemanticDiagnostics = extend("getSemanticDiagnostics", base.getSemanticDiagnostics.bind(base), (diagnostics, fileName) =>
    explain([...diagnostics, ...budgetDiagnostics(typescript, base.getProgram(), fileName)]),
  );
  // VS Code asks for the visible region of a long file first, and the whole file after.
  const region = (base as RegionDiagnostics).getRegionSemanticDiagnostics;
  if (region !== undefined) {
    (proxy as RegionDiagnostics).getRegionSemanticDiagnostics = extend("getRegionSemanticDiagnostics", region.bind(base), (result) =>
      result === undefined ? result : { ...result, diagnostics: explain(result.diagnostics) },
    );
  }
  proxy.getQuickInfoAtPosition = extend("getQuickInfoAtPosition", base.getQuickInfoAtPosition.bind(base), (quickInfo, fileName) =>
    addFedTensorHover(typescript, base.getProgram(), quickInfo, fileName),
  );
  proxy.provideInlayHints = extend("provideInlayHints", base.provideInlayHints.bind(base), (hints, fileName, span) =>
    options().inlayHints ? [...hints, ...fedTensorInlayHints(typescript, base.getProgram(), fileName, span)].sort((a, b) => a.position - b.position) : hints,
  );
  let verified: VerifiedFixes | undefined;
  const fixes = (): VerifiedFixes => (verified ??= new VerifiedFixes(typescript, info.languageServiceHost, options));
  proxy.getCodeFixesAtPosition = extend(
    "getCodeFixesAtPosition",
    base.getCodeFixesAtPosition.bind(base),
    (tsFixes, fileName, start, end, errorCodes) => {
      const program = base.getProgram();
      if (program === undefined) return tsFixes;
      return [...fixes().fixesAt(program, fileName, start, end, errorCodes, base.getSemanticDiagnostics(fileName)), ...tsFixes];
    },
  );
  const combined = base.getCombinedCodeFix.bind(base);
  // TypeScript knows no fix id of FedTensor's, so its result for ours is no changes at all.
  proxy.getCombinedCodeFix = extend("getCombinedCodeFix", (scope, fixId, ...rest) => (fixId === fixAllId ? { changes: [] } : combined(scope, fixId, ...rest)), (result, scope, fixId) =>
    fixId === fixAllId ? fixes().fixAll(scope.fileName) : result,
  );
  return proxy;
}

/** The plugin factory that tsserver calls with its own TypeScript module. */
export function createPlugin(modules: { typescript: typeof ts }): ts.server.PluginModule {
  // One entry per project the plugin runs in: its tsconfig entry, and where its options live.
  const projects: { config: object; log: (message: string) => void; set: (options: PluginOptions) => void }[] = [];
  const read = (config: object, log: (message: string) => void): PluginOptions => {
    const { options, problems } = readOptions(config);
    for (const { option, why } of problems) log(`FT305: option ${option}: ${why}; its default is used`);
    return options;
  };
  return {
    create(info) {
      const log = (message: string): void => info.project.projectService.logger.info(`[${pluginName}] ${message}`);
      try {
        const config = (info.config ?? {}) as object;
        let options = read(config, log);
        projects.push({ config, log, set: (o) => (options = o) });
        return decorate(modules.typescript, info, () => options, log);
      } catch (error) {
        log(`not enabled: ${String(error)}`);
        return info.languageService;
      }
    },
    // Editors can set options at run time too (tsserver's configurePlugin request); they apply
    // over each project's tsconfig entry.
    onConfigurationChanged(config: object) {
      for (const project of projects) project.set(read({ ...project.config, ...config }, project.log));
    },
  };
}
