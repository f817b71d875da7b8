/**
 * How a checkpoint is laid out in a file: a safetensors file (safetensors.ts) that PyTorch,
 * JAX and NumPy users can open as it is.
 *
 * - Each tensor of the state is an F32 tensor named by its tree path, array indices as dotted
 *   numbers as in a PyTorch state dict: `params.w1`, `server.m.b2`, `clients.7.w1`.
 * - `__metadata__` holds strings: `format` ("fedtensor-checkpoint"), `format_version` ("1"),
 *   `round`, and as JSON `rng_state`, `config` and `tree` (the state's structure, so that
 *   empty records and arrays come back as they were), `metrics_row` (the round's row of
 *   metrics.jsonl, when there is one), `client_states` (the companion file of the clients'
 *   states, client-state-file.ts: its name, size and SHA-256, when clients keep state) and `sha256`.
 * - `sha256` is the hex SHA-256 of the other metadata (as JSON of its sorted entries), each
 *   tensor's name, dtype and shape (JSON, in tree order) and the data bytes: a truncated
 *   copy or a flipped bit anywhere is FT304, not a model quietly trained from damaged values.
 *
 * Files of the first format (FTCKPT01) still load, through legacy-checkpoint.ts.
 */
import { createHash, type Hash } from "node:crypto";
import { ftError } from "../../errors/error.js";
import { flatten, leafPaths, unflatten } from "../../front/tree.js";
import type { TreeDef } from "../../ir/types.js";
import { elementCount } from "../data/host-tensor.js";
import { isStoredTensor, type Checkpoint, type ClientStatesRef, type TensorTree } from "./checkpoint-types.js";
import { decodeLegacyCheckpoint, isLegacyCheckpoint } from "./legacy-checkpoint.js";
import { decodeSafetensors, encodeSafetensors, SafetensorsFormatError, type SafetensorsTensor } from "./safetensors.js";

const formatName = "fedtensor-checkpoint";
const formatVersion = "1";

/** A leaf's tensor name: its tree path with array indices dotted (`layers[0].w` is `layers.0.w`); "tensor" for a lone root. */
function tensorNames(def: TreeDef): string[] {
  return leafPaths(def).map((path) => path.replace(/\[(\d+)\]/g, (_, i: string) => `.${i}`).replace(/^\./, "") || "tensor");
}

/** The digest of what the file says besides the digest itself; the writer and the reader compute it alike. */
function integrityDigest(metadata: Readonly<Record<string, string>>, tensors: readonly (readonly [string, SafetensorsTensor])[]): string {
  const hash: Hash = createHash("sha256");
  const described = Object.entries(metadata).filter(([key]) => key !== "sha256").sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  hash.update(JSON.stringify(described));
  hash.update(JSON.stringify(tensors.map(([name, t]) => [name, t.dtype, t.shape])));
  for (const [, { data }] of tensors) hash.update(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
  return hash.digest("hex");
}

/** The file's bytes, as chunks that reference the tensors' memory rather than copy it. */
export function encodeCheckpoint(checkpoint: Checkpoint): Buffer[] {
  const { leaves, def } = flatten(checkpoint.serverState, isStoredTensor, "server state", "float32 tensors");
  const names = tensorNames(def);
  const paths = leafPaths(def);
  leaves.forEach((leaf, i) => {
    if (elementCount(leaf.shape) !== leaf.data.length) {
      throw ftError("FT302", {
        what: `server state at ${paths[i] || "the root"}`,
        why: `shape [${leaf.shape.join(",")}] holds ${elementCount(leaf.shape)} values but its data has ${leaf.data.length}`,
      });
    }
  });
  const duplicate = names.find((name, i) => names.indexOf(name) !== i);
  if (duplicate !== undefined) {
    throw ftError("FT302", { what: "server state", why: `two leaves would both be stored as tensor ${duplicate} (a key with a dot or a number)` });
  }
  const tensors = leaves.map((leaf, i) => [names[i]!, { dtype: "F32", shape: leaf.shape, data: leaf.data }] as const);
  const metadata: Record<string, string> = {
    format: formatName,
    format_version: formatVersion,
    round: String(checkpoint.round),
    rng_state: JSON.stringify(checkpoint.rngState),
    config: JSON.stringify(checkpoint.config),
    tree: JSON.stringify(def),
    ...(checkpoint.metricsRow === undefined ? {} : { metrics_row: JSON.stringify(checkpoint.metricsRow) }),
    ...(checkpoint.clientStates === undefined ? {} : { client_states: JSON.stringify(checkpoint.clientStates) }),
  };
  metadata.sha256 = integrityDigest(metadata, tensors);
  return encodeSafetensors(new Map(tensors), metadata);
}

function parseJson(text: string | undefined, key: string, corrupt: (why: string) => Error): unknown {
  if (text === undefined) throw corrupt(`its metadata has no ${key}`);
  try {
    return JSON.parse(text);
  } catch {
    throw corrupt(`its metadata's ${key} is not valid JSON`);
  }
}

/** Verifies and decodes a checkpoint file's bytes, of either format; `path` names it in the FT304 error for a damaged one. */
export function decodeCheckpoint(bytes: Buffer, path: string): Checkpoint {
  const corrupt = (why: string) => ftError("FT304", { path, why });
  if (isLegacyCheckpoint(bytes)) return decodeLegacyCheckpoint(bytes, corrupt);
  let file;
  try {
    file = decodeSafetensors(bytes);
  } catch (error) {
    if (error instanceof SafetensorsFormatError) throw corrupt(`not a readable safetensors checkpoint (${bytes.length} bytes): ${error.message}`);
    throw error;
  }
  const { metadata, tensors } = file;
  if (metadata.format !== formatName) {
    throw corrupt(`a safetensors file but not a FedTensor checkpoint (its metadata's format is ${JSON.stringify(metadata.format ?? null)})`);
  }
  if (metadata.format_version !== formatVersion) throw corrupt(`checkpoint format version ${metadata.format_version}; this FedTensor reads ${formatVersion}`);
  const tree = parseJson(metadata.tree, "tree", corrupt) as TreeDef;
  let names: string[];
  try {
    names = tensorNames(tree);
  } catch {
    throw corrupt("its metadata's tree is not a tree structure");
  }
  const ordered = names.map((name) => {
    const tensor = tensors.get(name);
    if (tensor === undefined || tensor.dtype !== "F32") throw corrupt(`tensor ${name} is missing or not F32`);
    return [name, tensor] as const;
  });
  if (ordered.length !== tensors.size) throw corrupt(`it holds ${tensors.size} tensors, its tree ${ordered.length}`);
  if (integrityDigest(metadata, ordered) !== metadata.sha256) throw corrupt("SHA-256 checksum mismatch: the contents are damaged");
  const round = Number(metadata.round);
  if (!Number.isSafeInteger(round) || round < 0) throw corrupt(`its round ${JSON.stringify(metadata.round)} is not a round number`);
  return {
    round,
    serverState: unflatten(tree, ordered.map(([, { shape, data }]) => ({ shape, data: data as Float32Array }))) as TensorTree,
    rngState: parseJson(metadata.rng_state, "rng_state", corrupt) as Checkpoint["rngState"],
    config: parseJson(metadata.config, "config", corrupt) as Checkpoint["config"],
    ...(metadata.metrics_row === undefined ? {} : { metricsRow: parseJson(metadata.metrics_row, "metrics_row", corrupt) as Checkpoint["config"] }),
    ...(metadata.client_states === undefined ? {} : { clientStates: clientStatesRef(parseJson(metadata.client_states, "client_states", corrupt), corrupt) }),
  };
}

/** The checkpoint's reference to its client-state file, checked for shape (its digest is verified when the file is read). */
function clientStatesRef(value: unknown, corrupt: (why: string) => Error): ClientStatesRef {
  const ref = value as Partial<ClientStatesRef> | null;
  const valid = ref !== null && typeof ref === "object" && typeof ref.file === "string" && /^[\w.-]+$/.test(ref.file) && Number.isSafeInteger(ref.clients) && Number.isSafeInteger(ref.bytes) && typeof ref.sha256 === "string" && /^[0-9a-f]{64}$/.test(ref.sha256);
  if (!valid) throw corrupt("its metadata's client_states does not name a client-state file with its size and SHA-256");
  return ref as ClientStatesRef;
}
