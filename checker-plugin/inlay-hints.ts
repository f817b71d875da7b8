/**
 * Inlay hints: the placement and shape, in FedTensor's notation, after the name of each `const`
 * binding that holds a FedTensor value and each parameter of the function given to map()
 * (`const updates: {<w=f32[784,10]>}@CLIENTS`, `(xs: f32[B,784]) => ...`). Only names without
 * a type annotation get one, as TypeScript's own type hints do.
 */
import type ts from "typescript";
import { printTypeTree, typeTree } from "./value-types.js";

function calleeName(typescript: typeof ts, call: ts.CallExpression): string | undefined {
  const callee = call.expression;
  if (typescript.isIdentifier(callee)) return callee.text;
  return typescript.isPropertyAccessExpression(callee) ? callee.name.text : undefined;
}

export function fedTensorInlayHints(typescript: typeof ts, program: ts.Program | undefined, fileName: string, span: ts.TextSpan): ts.InlayHint[] {
  const file = program?.getSourceFile(fileName);
  if (program === undefined || file === undefined) return [];
  const checker = program.getTypeChecker();
  const hints: ts.InlayHint[] = [];
  const hint = (name: ts.Identifier): void => {
    const tree = typeTree(checker, checker.getTypeAtLocation(name));
    if (tree !== undefined) hints.push({ text: `: ${printTypeTree(tree)}`, position: name.getEnd(), kind: typescript.InlayHintKind.Type, whitespaceBefore: false });
  };
  const isMapFunction = (node: ts.Node): boolean =>
    typescript.isCallExpression(node.parent) && node.parent.arguments[0] === node && calleeName(typescript, node.parent) === "map";
  const visit = (node: ts.Node): void => {
    if (node.getEnd() < span.start || node.getStart(file) > span.start + span.length) return;
    if (
      typescript.isVariableDeclaration(node) &&
      node.type === undefined &&
      typescript.isIdentifier(node.name) &&
      (typescript.getCombinedNodeFlags(node) & typescript.NodeFlags.Const) !== 0
    ) {
      hint(node.name);
    }
    if ((typescript.isArrowFunction(node) || typescript.isFunctionExpression(node)) && isMapFunction(node)) {
      for (const parameter of node.parameters) if (parameter.type === undefined && typescript.isIdentifier(parameter.name)) hint(parameter.name);
    }
    typescript.forEachChild(node, visit);
  };
  visit(file);
  return hints;
}
