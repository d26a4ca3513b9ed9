/**
 * Where an export writes, by the command line's rule for outputs (docs/command-line.md): a path that already
 * holds something is refused (exit 2) unless --force is given; with --force it is replaced only once the new
 * output is complete; Ctrl-C leaves nothing behind (no temporary file, no journal), and exits 130.
 */

import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { invalid, SimrecError } from '../model/errors.js';
import { exitInterrupted, takeInterrupts } from './interrupt.js';

/** Refuses a path that holds something (a file, or a folder that is not empty) unless --force. */
export function requireFreeOutput(location: string, force: boolean): void {
  if (!existsSync(location) || force) return;
  if (statSync(location).isDirectory() && readdirSync(location).length === 0) return;
  throw invalid(`${location}: already exists; --force replaces it`);
}

/** An output file's folder must exist: we create the file, not a tree of folders the user mistyped. */
export function requireParentFolder(location: string): void {
  const parent = dirname(location);
  if (!existsSync(parent)) throw invalid(`${parent}: no such folder (to write ${location} in)`);
  if (!statSync(parent).isDirectory()) throw invalid(`${parent}: is a file, expected a folder`);
}

/**
 * Runs `work` with a signal that Ctrl-C (or SIGTERM) aborts. The work layer then undoes what it began
 * (an import's runs, an export's temporary output); the command says so with `what` and exits 130.
 * A second Ctrl-C exits at once (interrupt.ts).
 */
export async function abortOnInterrupt<T>(
  what: string,
  work: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const controller = new AbortController();
  const release = takeInterrupts(() => controller.abort(new SimrecError('conflict', 'interrupted')));
  try {
    return await work(controller.signal);
  } catch (error) {
    if (!controller.signal.aborted) throw error;
    exitInterrupted(what);
  } finally {
    release();
  }
}
