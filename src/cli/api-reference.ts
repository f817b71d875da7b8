/**
 * The API reference of the package's entry points (`fedtensor`, `fedtensor/lib`), read from the
 * sources with the TypeScript compiler API: every export with its signature as written, its doc
 * comment, its placement rule (the `@placement` tag) and one example (its `@example` tag, or
 * else the first use in docs/guide.md's code or in examples/). TypeDoc would do the reading, but
 * it is not a dependency; this reads declarations only, so it never type-checks the sources
 * and one parse of the files the entry points import serves the whole reference.
 *
 * `npm run docs:api` writes docs/api.md (src/cli/api-render.ts); test/docs-api.test.ts fails when an export has no doc
 * comment or no example, and when docs/api.md differs from what this renders.
 */
import { join, relative, sep } from "node:path";
import ts from "typescript";
import { exampleSources, firstUse, type CodeExample, type CodeSource } from "./api-examples.js";

/** A package entry point: its import name and its source file. */
export interface EntryPoint {
  name: string;
  file: string;
}

export const entryPoints: readonly EntryPoint[] = [
  { name: "fedtensor", file: "src/index.ts" },
  { name: "fedtensor/lib", file: "src/lib/index.ts" },
];

/** One export of an entry point, as the reference shows it. */
export interface ApiExport {
  name: string;
  kind: "function" | "constant" | "class" | "interface" | "type";
  /** The declaring file, relative to the package root, and its 1-based line. */
  file: string;
  line: number;
  signature: string;
  /** The doc comment's text, without its tags; empty when the export has none. */
  doc: string;
  placement?: string;
  example?: CodeExample;
  /** The entry point listed before this one that exports the same declaration. */
  alsoIn?: string;
}

export interface ApiModule {
  entry: EntryPoint;
  summary: string;
  exports: ApiExport[];
}

const posix = (path: string): string => path.split(sep).join("/");

/**
 * One program over the entry points and the package files they import: the reference reads
 * declarations and their comments, so imports of other packages are left unresolved (untyped),
 * which spares parsing their declarations.
 */
export function referenceProgram(root: string): ts.Program {
  const options: ts.CompilerOptions = {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    noEmit: true,
    noLib: true,
    types: [],
  };
  const host = ts.createCompilerHost(options);
  host.resolveModuleNameLiterals = (literals, containingFile, redirected, compilerOptions, file) =>
    literals.map((literal) =>
      literal.text.startsWith(".")
        ? ts.resolveModuleName(literal.text, containingFile, compilerOptions, host, undefined, redirected, ts.getModeForUsageLocation(file, literal, compilerOptions))
        : { resolvedModule: undefined },
    );
  return ts.createProgram(entryPoints.map((entry) => join(root, entry.file)), options, host);
}

/** The longest inferred type a constant's signature shows; a longer one is shown by its source. */
const MAX_INFERRED_TYPE = 300;

const withoutExport = (text: string): string => text.replace(/^export\s+(default\s+)?(declare\s+)?/, "");

/** The text of a declaration up to its body: a signature as its author wrote it. */
function headOf(node: ts.Node, body: ts.Node | undefined): string {
  const source = node.getSourceFile().text;
  return withoutExport(source.slice(node.getStart(), body === undefined ? node.getEnd() : body.getStart()).trim());
}

const isHidden = (member: ts.ClassElement): boolean =>
  (member.name !== undefined && ts.isPrivateIdentifier(member.name)) ||
  (ts.getCombinedModifierFlags(member as ts.Declaration) & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected)) !== 0;

/** A class's header and its public members, each with the first sentence of its comment. */
function classSignature(node: ts.ClassDeclaration): string {
  const text = node.getSourceFile().text;
  const header = withoutExport(text.slice(node.getStart(), node.members.pos).trim().replace(/\{$/, "").trim());
  const members = node.members.filter((member) => !isHidden(member) && !ts.isClassStaticBlockDeclaration(member) && !ts.isSemicolonClassElement(member));
  const lines = members.flatMap((member) => {
    const summary = ts
      .getJSDocCommentsAndTags(member)
      .filter(ts.isJSDoc)
      .map((doc) => ts.getTextOfJSDocComment(doc.comment) ?? "")
      .join(" ");
    const sentence = /^[\s\S]*?[.:](\s|$)/.exec(summary.replace(/\s+/g, " ").trim())?.[0].trim() ?? summary.trim();
    const body = "body" in member ? (member.body as ts.Node | undefined) : undefined;
    const head = headOf(member, body).replace(/\s*\n\s*/g, " ");
    return [...(sentence === "" ? [] : [`  /** ${sentence} */`]), `  ${head}${head.endsWith(";") ? "" : ";"}`];
  });
  return `${header} {\n${lines.join("\n")}\n}`;
}

/** The signature of a declaration: functions and classes without bodies, types in full. */
function signatureOf(declarations: readonly ts.Declaration[], checker: ts.TypeChecker): string {
  const functions = declarations.filter(ts.isFunctionDeclaration);
  if (functions.length > 0) {
    // Overloads hide the implementation's signature, as tsc does.
    const shown = functions.length > 1 ? functions.filter((fn) => fn.body === undefined) : functions;
    return shown.map((fn) => `${headOf(fn, fn.body)}${fn.body === undefined ? "" : ";"}`).join("\n");
  }
  const first = declarations[0]!;
  if (ts.isClassDeclaration(first)) return classSignature(first);
  if (ts.isVariableDeclaration(first)) {
    const keyword = first.parent.flags & ts.NodeFlags.Const ? "const" : "let";
    const name = first.name.getText();
    if (first.type !== undefined) return `${keyword} ${name}: ${first.type.getText()};`;
    const init = first.initializer;
    if (init !== undefined && (ts.isArrowFunction(init) || ts.isFunctionExpression(init))) return `${keyword} ${name} = ${headOf(init, init.body)}`;
    // A constant typed by inference: an operator a factory made has the type the factory returns;
    // a literal (a table such as the error catalogue) is shown by its first line.
    const type = checker.typeToString(checker.getTypeAtLocation(first.name), first, ts.TypeFormatFlags.NoTruncation | ts.TypeFormatFlags.UseAliasDefinedOutsideCurrentScope);
    if (type.length <= MAX_INFERRED_TYPE) return `${keyword} ${name}: ${type};`;
    return `${keyword} ${name} = ${init?.getText().split("\n")[0] ?? ""} /* ... (see the source) */`;
  }
  return declarations.map((declaration) => headOf(declaration, undefined)).join("\n");
}

function kindOf(declaration: ts.Declaration): ApiExport["kind"] {
  if (ts.isFunctionDeclaration(declaration)) return "function";
  if (ts.isClassDeclaration(declaration)) return "class";
  if (ts.isInterfaceDeclaration(declaration)) return "interface";
  if (ts.isVariableDeclaration(declaration)) return "constant";
  return "type";
}

const tagText = (tag: ts.JSDocTagInfo): string => ts.displayPartsToString(tag.text).trim();

/** The code of an `@example` tag, without a fence its author may have written around it. */
const exampleCode = (text: string): string => text.replace(/^```\w*\n/, "").replace(/\n```$/, "").trim();

/** The exports of one entry point, in the order of its export statements. */
function exportsOf(program: ts.Program, root: string, entry: EntryPoint, uses: readonly CodeSource[]): ApiExport[] {
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(join(root, entry.file));
  const moduleSymbol = source === undefined ? undefined : checker.getSymbolAtLocation(source);
  if (moduleSymbol === undefined) throw new Error(`api reference: ${entry.file} is not a module of the package`);
  return checker.getExportsOfModule(moduleSymbol).map((exported) => {
    const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
    const declarations = symbol.declarations ?? [];
    const first = declarations[0];
    if (first === undefined) throw new Error(`api reference: ${entry.name} exports ${exported.name}, whose declaration is not in src/ or types/`);
    const file = first.getSourceFile();
    const tags = symbol.getJsDocTags(checker);
    const placement = tags.find((tag) => tag.name === "placement");
    const example = tags.find((tag) => tag.name === "example");
    const own = example === undefined ? undefined : { code: exampleCode(tagText(example)), from: "" };
    const found = own ?? firstUse(uses, exported.name);
    return {
      name: exported.name,
      kind: kindOf(first),
      file: posix(relative(root, file.fileName)),
      line: file.getLineAndCharacterOfPosition(first.getStart()).line + 1,
      signature: signatureOf(declarations, checker),
      doc: ts.displayPartsToString(symbol.getDocumentationComment(checker)).trim(),
      ...(placement === undefined ? {} : { placement: tagText(placement) }),
      ...(found === undefined ? {} : { example: found }),
    };
  });
}

/** The reference's content: each entry point's summary and exports. */
export function collectApiReference(root: string, program: ts.Program = referenceProgram(root)): ApiModule[] {
  const uses = exampleSources(root);
  const modules = entryPoints.map((entry) => {
    const source = program.getSourceFile(join(root, entry.file))!;
    const summary = ts
      .getLeadingCommentRanges(source.text, 0)
      ?.map((range) => source.text.slice(range.pos, range.end))
      .find((comment) => comment.startsWith("/**"));
    return { entry, summary: (summary ?? "").replace(/^\/\*\*|\*\/$/g, "").replace(/^\s*\* ?/gm, "").trim(), exports: exportsOf(program, root, entry, uses) };
  });
  // An export both entry points share is described once, where it is first listed.
  const seen = new Map<string, string>();
  for (const module of modules) {
    for (const item of module.exports) {
      const key = `${item.file}:${item.line}:${item.name}`;
      const earlier = seen.get(key);
      if (earlier === undefined) seen.set(key, module.entry.name);
      else item.alsoIn = earlier;
    }
  }
  return modules;
}

/** The exports with no doc comment, or no example: what the reference test refuses. */
export function undocumented(modules: readonly ApiModule[]): { noComment: string[]; noExample: string[] } {
  const all = modules.flatMap((module) => module.exports.filter((item) => item.alsoIn === undefined).map((item) => ({ ...item, where: `${module.entry.name}: ${item.name} (${item.file}:${item.line})` })));
  return {
    noComment: all.filter((item) => item.doc === "").map((item) => item.where),
    noExample: all.filter((item) => item.example === undefined).map((item) => item.where),
  };
}
