/**
 * Where an export writes, by the README's rule for outputs: a path that already holds something is
 * refused (exit 2) unless --force is given; with --force it is replaced only once the new output is
 * complete; Ctrl-C leaves nothing behind (no temporary file, no journal), and exits 130.
 */

import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { invalid } from '../model/errors.js';
import { EXIT_INTERRUPTED } from './failure.js';

/** The temporary sibling an output is written to before it takes its name (hidden, this process's). */
export const temporarySibling = (location: string): string =>
  join(dirname(location), `.${basename(location)}.partial-${process.pid}`);

/**
 * What an export may leave while it runs: our temporary sibling, and the writers' own temporary names
 * (LimSim's `FILE.partial-PID` SQLite file with its journal).
 */
const temporariesOf = (location: string): string[] => {
  const own = `${location}.partial-${process.pid}`;
  return [temporarySibling(location), own, `${own}-journal`, `${own}-wal`, `${own}-shm`];
};

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

/** Runs `work`; should Ctrl-C come meanwhile, removes what `location`'s export had begun and exits 130. */
export async function cleanUpOnInterrupt<T>(location: string, work: () => Promise<T>): Promise<T> {
  const interrupted = (): void => {
    for (const path of temporariesOf(location)) rmSync(path, { recursive: true, force: true });
    process.stderr.write(`simrec: interrupted; ${location} was not written\n`);
    process.exit(EXIT_INTERRUPTED);
  };
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  try {
    return await work();
  } finally {
    process.off('SIGINT', interrupted);
    process.off('SIGTERM', interrupted);
  }
}

/**
 * Writes a dataset folder through its temporary sibling, then gives it its name, replacing what was
 * there (the caller has checked --force): a failed or interrupted export leaves the old folder whole.
 */
export async function writeFolderOutput<T>(
  location: string,
  write: (folder: string) => Promise<T>,
): Promise<T> {
  const temporary = temporarySibling(location);
  rmSync(temporary, { recursive: true, force: true });
  try {
    const result = await write(temporary);
    if (!existsSync(temporary)) mkdirSync(temporary); // an empty dataset is still the one asked for
    rmSync(location, { recursive: true, force: true });
    renameSync(temporary, location);
    return result;
  } finally {
    rmSync(temporary, { recursive: true, force: true });
  }
}

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * The store as an export sees it, giving the event loop a turn before every answer. A writer that
 * reads from SQLite (synchronous underneath) and writes synchronously never lets Node run a signal
 * handler: Ctrl-C would wait for the whole export, and `cleanUpOnInterrupt` could not clean up.
 */
export function interruptible<S extends object>(store: S): S {
  return new Proxy(store, {
    get(target, key, receiver) {
      const value: unknown = Reflect.get(target, key, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        const result: unknown = (value as (...a: unknown[]) => unknown).apply(target, args);
        if (result instanceof Promise) return nextTurn().then(() => result);
        if (result && typeof result === 'object' && Symbol.asyncIterator in result)
          return yieldingIterable(result as AsyncIterable<unknown>);
        return result;
      };
    },
  });
}

async function* yieldingIterable<T>(source: AsyncIterable<T>): AsyncGenerator<T> {
  for await (const item of source) {
    await nextTurn();
    yield item;
  }
}
