/**
 * File-system failures of a run as FT307 errors that say what went wrong in words (a full
 * disk, a read-only file system, a file where a folder should be), never a raw stack trace.
 */
import { FedTensorError } from "../../errors/error.js";

/** What each errno means for someone who asked for a run folder. */
const reasons: Readonly<Record<string, string>> = {
  ENOSPC: "the disk is full",
  EFBIG: "the file would be larger than this process may write (ulimit -f)",
  EDQUOT: "the disk quota is used up",
  EROFS: "the file system is read-only",
  EACCES: "permission denied",
  EPERM: "the operation is not permitted there",
  ENOTDIR: "a part of the path is a file, not a folder",
  EISDIR: "it is a folder, not a file",
  EEXIST: "something already exists there",
  ENOENT: "no such file or folder",
  EIO: "input/output error (a failing disk or a lost network mount)",
  EMFILE: "this process has too many open files",
  ENFILE: "the system has too many open files",
  ENAMETOOLONG: "the path is too long",
  ELOOP: "the path has a loop of symbolic links",
  EBUSY: "the file is busy",
  ETXTBSY: "the file is busy",
};

/** An error that a file-system call of Node gave (it carries an errno code and the call). */
export function isFileSystemError(error: unknown): error is NodeJS.ErrnoException {
  return error instanceof Error && typeof (error as NodeJS.ErrnoException).code === "string" && typeof (error as NodeJS.ErrnoException).syscall === "string";
}

/**
 * `error` as FT307 when it is a file-system error, naming the path and what the run was doing
 * (`doing` reads after "cannot", as in "write the checkpoint"); other errors are returned as
 * they are, so callers can `throw fileFault(...)` in a catch of mixed work.
 */
export function fileFault(error: unknown, path: string, doing: string): unknown {
  if (!isFileSystemError(error) || error instanceof FedTensorError) return error;
  const code = error.code!;
  const reason = reasons[code] ?? error.message;
  // The caller's path, not the error's: that may be a temp file the user never asked for.
  return new FedTensorError("FT307", { path, why: `cannot ${doing}: ${reason} (${code})` }, { cause: error });
}
