/**
 * The programs of the agreement test (test/privacy/agreement.test.ts), generated from the
 * exported API as the taint matrix's are (test/privacy/taint-cases.ts gives, for every export of
 * src/index.ts, how to call it and the kind of each tensor-valued operand): for every operation
 * and every operand, one program per variant of that operand, the others as the table gives
 * them: the operand at each placement (SERVER, CLIENTS, private CLIENTS, local) with its own
 * dtype, and at its own placement with another dtype.
 */
import { inputKinds, type Entry, type Kind, type OpCase } from "./taint-cases.js";

export const variants = ["server", "clients", "private", "local", "dtype"] as const;
export type Variant = (typeof variants)[number];

export interface AgreementCase {
  readonly op: string;
  /** The varied slot and how, or null for the op as the table calls it. */
  readonly slot: string | null;
  readonly variant: Variant | null;
  readonly exportName: string;
  readonly line: number;
}

/** The spec of a kind with another dtype: f32 <-> i32, bool -> f32. */
const otherDType = (spec: string): string =>
  spec.startsWith("ft.f32(") ? spec.replace("ft.f32(", "ft.i32(") : spec.startsWith("ft.i32(") ? spec.replace("ft.i32(", "ft.f32(") : spec.replace("ft.bool(", "ft.f32(");

/** The input declaration of a kind's variant. */
function variantSpec(kind: Kind, variant: Variant): string {
  const { spec, at } = inputKinds[kind];
  switch (variant) {
    case "server":
      return `ft.atServer(${spec})`;
    case "clients":
      return `ft.atClients(${spec})`;
    case "private":
      return `ft.atClients(${spec}, { private: true })`;
    case "local":
      return spec;
    case "dtype":
      return at === "server" ? `ft.atServer(${otherDType(spec)})` : at === "clients" ? `ft.atClients(${otherDType(spec)})` : otherDType(spec);
  }
}

/** Whether a variant is the slot's own input (which the case without a variant already has). */
function isDefault(kind: Kind, variant: Variant): boolean {
  const at = inputKinds[kind].at;
  return (variant === "server" && at === "server") || (variant === "clients" && at === "clients") || (variant === "local" && at === "local");
}

const isOp = (entry: Entry): entry is OpCase => !("notAnOp" in entry);
const defaultValue = (kind: Kind): string => {
  const k = inputKinds[kind];
  return "value" in k ? k.value : `i.${kind}`;
};

/** One module: the inputs, then one exported program builder per case, one line each. */
export function generateAgreement(table: Readonly<Record<string, Entry>>, importPath: string): { source: string; cases: AgreementCase[] } {
  const inputs = new Map<string, string>();
  for (const [kind, { spec, at }] of Object.entries(inputKinds)) {
    if (at === "clients") inputs.set(kind, `ft.atClients(${spec})`);
    if (at === "server") inputs.set(kind, `ft.atServer(${spec})`);
  }
  const body: string[] = [];
  const cases: AgreementCase[] = [];
  const header = 3;
  for (const [op, entry] of Object.entries(table)) {
    if (!isOp(entry)) continue;
    const slots = Object.entries(entry.slots) as [string, Kind][];
    const runs: [string | null, Variant | null][] = [[null, null]];
    for (const [slot, kind] of slots) for (const variant of variants) if (!isDefault(kind, variant)) runs.push([slot, variant]);
    for (const [slot, variant] of runs) {
      const args = Object.fromEntries(
        slots.map(([s, kind]) => {
          if (s !== slot || variant === null) return [s, defaultValue(kind)];
          const name = `${kind}__${variant}`;
          inputs.set(name, variantSpec(kind, variant));
          return [s, `i.${name}`];
        }),
      );
      const exportName = `case${cases.length}`;
      body.push(`export const ${exportName} = () => ft.program(inputs, (i) => ${entry.call(op, args)});`);
      cases.push({ op, slot, variant, exportName, line: header + body.length });
    }
  }
  const lines = [
    `import * as ft from ${JSON.stringify(importPath)};`,
    `const inputs = { ${[...inputs].map(([name, spec]) => `${name}: ${spec}`).join(", ")} };`,
    `// ${cases.length} cases`,
    ...body,
  ];
  return { source: `${lines.join("\n")}\n`, cases };
}
