/**
 * The browser tab's client state storage (src/deploy/client/state.ts): one IndexedDB record per
 * run and client, in this origin's database "fedtensor-client-state", replaced in one
 * transaction (whole or not at all). Nothing of it is sent; the tab keeps it across reloads, so
 * a tab that rejoins a resumed run finds its state.
 */
import type { ClientStateStorage } from "../client/state.js";

const DATABASE = "fedtensor-client-state";
const STORE = "states";

function open(): Promise<IDBDatabase> {
  return new Promise((resolve, reject) => {
    const request = indexedDB.open(DATABASE, 1);
    request.onupgradeneeded = () => request.result.createObjectStore(STORE);
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error ?? new Error(`IndexedDB ${DATABASE} did not open`));
  });
}

/** One request in a transaction of the store, settled when the transaction completes. */
async function inStore<T>(mode: IDBTransactionMode, act: (store: IDBObjectStore) => IDBRequest<T>): Promise<T> {
  const db = await open();
  try {
    return await new Promise<T>((resolve, reject) => {
      const transaction = db.transaction(STORE, mode);
      const request = act(transaction.objectStore(STORE));
      transaction.oncomplete = () => resolve(request.result);
      transaction.onerror = () => reject(transaction.error ?? new Error("IndexedDB transaction failed"));
      transaction.onabort = () => reject(transaction.error ?? new Error("IndexedDB transaction aborted"));
    });
  } finally {
    db.close();
  }
}

export class IndexedDbStateStorage implements ClientStateStorage {
  async read(run: string, client: string): Promise<Uint8Array | undefined> {
    const value = await inStore("readonly", (store) => store.get(this.key(run, client)) as IDBRequest<ArrayBuffer | undefined>);
    return value === undefined ? undefined : new Uint8Array(value);
  }

  async write(run: string, client: string, bytes: Uint8Array): Promise<void> {
    // A copy in its own buffer: IndexedDB clones the whole buffer a view sits on.
    await inStore("readwrite", (store) => store.put(Uint8Array.from(bytes).buffer, this.key(run, client)));
  }

  describe(run: string, client: string): string {
    return `IndexedDB ${DATABASE}/${STORE}/${this.key(run, client)}`;
  }

  private key(run: string, client: string): string {
    return JSON.stringify([run, client]);
  }
}
