/**
 * FT362 in the editor and in `fedtensor check`: a `program(inputs, body, { budget })` whose
 * body's releases, read from the source where their numbers are literals, already spend more
 * than the budget's epsilon (docs/language.md "A program's budget"). Priced by the library's
 * PLD accountant (src/lib/privacy/program-epsilon.ts), as program.epsilon() prices the traced IR.
 *
 * Read from the source, a release counts only where it surely runs: dpSum and dpMean with a
 * literal noise multiplier, dpQuantile and dpMedian with a literal one (each of their `steps`
 * steps, 12 by default, is a dpSum), once each, or `count` times in the body of a
 * `fori(count, ...)` with a literal count. Releases under a condition (if, ?:, &&, ||, ??), in a
 * scan or in other nested functions, with options that are not literals, or inside the
 * library's functions are not counted. So what is priced is at most what the program spends:
 * a report is never a false alarm, and a budget the check passes may still be exceeded, which
 * program.epsilon() on the traced program settles.
 */
import type ts from "typescript";
import { formatMessage } from "../src/errors/error.js";
import { gaussianReleasesEpsilon, type GaussianRelease } from "../src/lib/privacy/program-epsilon.js";

/** The diagnostic code the budget check reports under (TypeScript's own codes are below 20,000). */
export const budgetDiagnosticCode = 90362;

/** The FedTensor function a call calls (declared in its src/front or src/lib), by name; undefined for other calls. */
function fedTensorFunction(typescript: typeof ts, checker: ts.TypeChecker, call: ts.CallExpression): string | undefined {
  const callee = typescript.isPropertyAccessExpression(call.expression) ? call.expression.name : call.expression;
  if (!typescript.isIdentifier(callee)) return undefined;
  let symbol = checker.getSymbolAtLocation(callee);
  if (symbol !== undefined && symbol.flags & typescript.SymbolFlags.Alias) symbol = checker.getAliasedSymbol(symbol);
  const file = symbol?.declarations?.[0]?.getSourceFile().fileName;
  return symbol !== undefined && file !== undefined && /[\\/]src[\\/](front|lib)[\\/]/.test(file) ? symbol.name : undefined;
}

/** The number literal (or negated one) of an expression; undefined for anything else. */
function literal(typescript: typeof ts, e: ts.Expression | undefined): number | undefined {
  if (e === undefined) return undefined;
  if (typescript.isNumericLiteral(e)) return Number(e.text);
  if (typescript.isPrefixUnaryExpression(e) && e.operator === typescript.SyntaxKind.MinusToken && typescript.isNumericLiteral(e.operand)) return -Number(e.operand.text);
  return undefined;
}

/** An object literal's properties by name: their initializers. */
function properties(typescript: typeof ts, e: ts.Expression | undefined): Map<string, ts.Expression> | undefined {
  if (e === undefined || !typescript.isObjectLiteralExpression(e)) return undefined;
  const found = new Map<string, ts.Expression>();
  for (const p of e.properties) if (typescript.isPropertyAssignment(p) && (typescript.isIdentifier(p.name) || typescript.isStringLiteral(p.name))) found.set(p.name.text, p.initializer);
  return found;
}

const releaseSteps: Readonly<Record<string, (options: Map<string, ts.Expression>, typescript: typeof ts) => number | undefined>> = {
  dpSum: () => 1,
  dpMean: () => 1,
  dpQuantile: (o, t) => (o.has("steps") ? literal(t, o.get("steps")) : 12),
  dpMedian: (o, t) => (o.has("steps") ? literal(t, o.get("steps")) : 12),
};

/** The Gaussian releases of a program body that surely run, with literal noise (see the header). */
function releasesIn(typescript: typeof ts, checker: ts.TypeChecker, body: ts.Node): GaussianRelease[] {
  const found: GaussianRelease[] = [];
  const visit = (node: ts.Node, times: number): void => {
    if (typescript.isIfStatement(node) || typescript.isConditionalExpression(node) || typescript.isSwitchStatement(node)) return;
    if (typescript.isBinaryExpression(node) && [typescript.SyntaxKind.AmpersandAmpersandToken, typescript.SyntaxKind.BarBarToken, typescript.SyntaxKind.QuestionQuestionToken].includes(node.operatorToken.kind)) return;
    if (typescript.isFunctionLike(node)) return;
    if (typescript.isCallExpression(node)) {
      const name = fedTensorFunction(typescript, checker, node);
      const options = properties(typescript, node.arguments[1]);
      const steps = name !== undefined && options !== undefined ? releaseSteps[name]?.(options, typescript) : undefined;
      const z = options === undefined ? undefined : literal(typescript, options.get("noiseMultiplier"));
      if (steps !== undefined && z !== undefined && z > 0 && Number.isInteger(steps) && steps > 0) found.push({ noiseMultiplier: z, calls: times * steps, draws: 0 });
      const count = name === "fori" ? literal(typescript, node.arguments[0]) : undefined;
      const loopBody = node.arguments[2];
      if (count !== undefined && Number.isInteger(count) && count > 0 && loopBody !== undefined && (typescript.isArrowFunction(loopBody) || typescript.isFunctionExpression(loopBody))) {
        visit(node.arguments[1]!, times);
        typescript.forEachChild(loopBody.body, (child) => visit(child, times * count));
        return;
      }
    }
    typescript.forEachChild(node, (child) => visit(child, times));
  };
  if (typescript.isArrowFunction(body) || typescript.isFunctionExpression(body)) typescript.forEachChild(body.body, (child) => visit(child, 1));
  return found;
}

/** The budget of a program() call when its options give one with literal numbers: its property and its numbers. */
function literalBudget(typescript: typeof ts, call: ts.CallExpression): { at: ts.Node; epsilon: number; delta: number; rounds: number; samplingRate: number } | undefined {
  const options = call.arguments[2];
  if (options === undefined || !typescript.isObjectLiteralExpression(options)) return undefined;
  const property = options.properties.find((p) => typescript.isPropertyAssignment(p) && typescript.isIdentifier(p.name) && p.name.text === "budget");
  const budget = property !== undefined && typescript.isPropertyAssignment(property) ? properties(typescript, property.initializer) : undefined;
  if (property === undefined || budget === undefined) return undefined;
  const [epsilon, delta] = [literal(typescript, budget.get("epsilon")), literal(typescript, budget.get("delta"))];
  const rounds = budget.has("rounds") ? literal(typescript, budget.get("rounds")) : 1;
  const samplingRate = budget.has("samplingRate") ? literal(typescript, budget.get("samplingRate")) : 1;
  // Values out of range are FT363 when the program is traced; the check reads valid ones only.
  if (epsilon === undefined || delta === undefined || rounds === undefined || samplingRate === undefined) return undefined;
  if (!(epsilon > 0 && delta > 0 && delta < 1 && Number.isInteger(rounds) && rounds >= 1 && samplingRate > 0 && samplingRate <= 1)) return undefined;
  return { at: property, epsilon, delta, rounds, samplingRate };
}

const significant = (x: number): string => String(Number(x.toPrecision(4)));

/** FT362 for each program() in the file whose literal releases exceed its literal budget. */
export function budgetDiagnostics(typescript: typeof ts, program: ts.Program | undefined, fileName: string): ts.Diagnostic[] {
  const file = program?.getSourceFile(fileName);
  if (program === undefined || file === undefined || file.isDeclarationFile) return [];
  const checker = program.getTypeChecker();
  const diagnostics: ts.Diagnostic[] = [];
  const visit = (node: ts.Node): void => {
    if (typescript.isCallExpression(node) && node.arguments.length >= 3 && fedTensorFunction(typescript, checker, node) === "program") {
      const budget = literalBudget(typescript, node);
      const releases = budget === undefined ? [] : releasesIn(typescript, checker, node.arguments[1]!);
      if (budget !== undefined && releases.length > 0) {
        const spent = gaussianReleasesEpsilon(releases, budget.samplingRate, budget.rounds, budget.delta);
        if (spent > budget.epsilon) {
          const message = formatMessage("FT362", { spent: significant(spent), rounds: budget.rounds, samplingRate: budget.samplingRate, epsilon: budget.epsilon, delta: budget.delta, accountant: "PLD" });
          diagnostics.push({
            file,
            start: budget.at.getStart(file),
            length: budget.at.getWidth(file),
            category: typescript.DiagnosticCategory.Error,
            code: budgetDiagnosticCode,
            messageText: `Privacy budget exceeded: "${message}"`,
          });
        }
      }
    }
    typescript.forEachChild(node, visit);
  };
  visit(file);
  return diagnostics;
}
