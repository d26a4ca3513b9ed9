/**
 * Warnings on stderr, summarised (docs/command-line.md: "Warnings"): a dataset with 50 missing files says so
 * once, with the first example and a count, instead of 50 lines that bury everything else. `--verbose` lists
 * every one; `--json` output carries them all in its `warnings` array.
 */

/**
 * A warning's kind: its text without the place it names (the part before the first ": ") and with
 * the particulars (numbers, ids, file names, quoted values) blanked, so "capture 12: file a.png does
 * not exist" and "capture 13: file b.png does not exist" are one kind.
 */
export function warningKind(message: string): string {
  const colon = message.indexOf(': ');
  const what = colon >= 0 ? message.slice(colon + 2) : message;
  return what
    .replace(/"[^"]*"|'[^']*'/g, 'V')
    .replace(/\S+\.[A-Za-z0-9]{1,5}\b/g, 'FILE')
    .replace(/[0-9a-f]{8}-[0-9a-f-]{27}/gi, 'ID')
    .replace(/\d+(\.\d+)?/g, 'N');
}

/** The lines to print: every warning with `verbose`, else the first of each kind and how many more. */
export function summariseWarnings(warnings: readonly string[], verbose: boolean): string[] {
  if (verbose) return [...warnings];
  const kinds = new Map<string, { first: string; count: number }>();
  for (const w of warnings) {
    const kind = kinds.get(warningKind(w));
    if (kind) kind.count++;
    else kinds.set(warningKind(w), { first: w, count: 1 });
  }
  return [...kinds.values()].map(({ first, count }) =>
    count === 1 ? first : `${first} (and ${count - 1} more like it; --verbose lists all)`,
  );
}

/** Prints the warnings on stderr, summarised unless the command line has --verbose. */
export function printWarnings(warnings: readonly string[]): void {
  const verbose = process.argv.includes('--verbose');
  for (const line of summariseWarnings(warnings, verbose)) process.stderr.write(`simrec: warning: ${line}\n`);
}
