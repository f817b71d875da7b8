/**
 * How a code fix calls a FedTensor function: through the same namespace or import as the call
 * it fixes, adding the name to that import (or a new `import ... from "fedtensor"`) when the
 * file does not import it yet.
 */
import type ts from "typescript";

/** The text that calls the function, and the import edit it needs, if any. */
export interface Callee {
  readonly text: string;
  readonly importEdit?: ts.TextChange;
}

/** The import declaration that brought the callee of `call` into the file, if it was imported. */
function importOfCallee(typescript: typeof ts, checker: ts.TypeChecker, call: ts.CallExpression): ts.ImportDeclaration | undefined {
  if (!typescript.isIdentifier(call.expression)) return undefined;
  const declaration = checker.getSymbolAtLocation(call.expression)?.declarations?.[0];
  const statement = declaration !== undefined && typescript.isImportSpecifier(declaration) ? declaration.parent.parent.parent : undefined;
  return statement !== undefined && typescript.isImportDeclaration(statement) ? statement : undefined;
}

function isFedTensorImport(typescript: typeof ts, statement: ts.Statement): statement is ts.ImportDeclaration {
  return (
    typescript.isImportDeclaration(statement) &&
    typescript.isStringLiteral(statement.moduleSpecifier) &&
    statement.moduleSpecifier.text === "fedtensor" &&
    statement.importClause?.isTypeOnly !== true
  );
}

/**
 * The callee text for the FedTensor function `name` at the call being fixed: `ft.name` when
 * that call goes through a namespace `ft`, else the local name of an existing import, else
 * `name` with an edit that imports it next to the call's own import.
 */
export function fedTensorCallee(
  typescript: typeof ts,
  checker: ts.TypeChecker,
  file: ts.SourceFile,
  call: ts.CallExpression,
  name: string,
): Callee {
  if (typescript.isPropertyAccessExpression(call.expression) && typescript.isIdentifier(call.expression.expression)) {
    return { text: `${call.expression.expression.text}.${name}` };
  }
  const declaration = importOfCallee(typescript, checker, call) ?? file.statements.find((s) => isFedTensorImport(typescript, s));
  const bindings = declaration?.importClause?.namedBindings;
  if (bindings !== undefined && typescript.isNamedImports(bindings)) {
    const existing = bindings.elements.find((e) => (e.propertyName ?? e.name).text === name);
    if (existing !== undefined) return { text: existing.name.text };
    const last = bindings.elements[bindings.elements.length - 1];
    const at = last === undefined ? bindings.getStart(file) + 1 : last.getEnd();
    return { text: name, importEdit: { span: { start: at, length: 0 }, newText: last === undefined ? ` ${name} ` : `, ${name}` } };
  }
  const imports = file.statements.filter((s) => typescript.isImportDeclaration(s));
  const after = imports[imports.length - 1];
  return after === undefined
    ? { text: name, importEdit: { span: { start: 0, length: 0 }, newText: `import { ${name} } from "fedtensor";\n` } }
    : { text: name, importEdit: { span: { start: after.getEnd(), length: 0 }, newText: `\nimport { ${name} } from "fedtensor";` } };
}
