/**
 * Credentials in URLs, kept out of everything FedTensor prints or writes: FT messages, the
 * CLI's reports (an internal error repeats the command line), logs, metrics rows and stored
 * configs. `--engine redis://user:password@host:6379` is how Redis takes a password, so the
 * URL itself is a secret's carrier; every place that prints one goes through this function.
 *
 * The user name stays (it helps to see which account failed); the password becomes ***. A
 * userinfo with no colon is redacted whole, since Redis and others read a lone token as a
 * password.
 */

/** What stands in for a redacted password. */
export const redactedMark = "***";

// scheme://userinfo@ — userinfo holds no blank, slash, ?, # or @ (RFC 3986 percent-encodes those).
const userinfoPattern = /\b([a-z][a-z0-9+.-]*:\/\/)([^\s/?#@]+)@/gi;

/** `text` with the password of every URL in it replaced by ***. */
export function redactCredentials(text: string): string {
  return text.replace(userinfoPattern, (_, scheme: string, userinfo: string) => {
    const colon = userinfo.indexOf(":");
    return `${scheme}${colon < 0 ? redactedMark : `${userinfo.slice(0, colon)}:${redactedMark}`}@`;
  });
}

/** Whether `text` holds a URL whose password was redacted (a stored config's engine, say). */
export function hasRedactedCredentials(text: string): boolean {
  return new RegExp(`://([^\\s/?#@:]*:)?\\*\\*\\*@`).test(text);
}
