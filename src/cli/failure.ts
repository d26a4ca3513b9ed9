/**
 * How `simrec` ends when something goes wrong: one line on stderr naming what was wrong, and an exit
 * code a script can branch on. The rules are written once in docs/command-line.md ("Exit codes", "Errors"):
 *   0 ok, 1 failure (the store, the disk, the network), 2 bad input or usage, 130 interrupted.
 * A stack trace is for us, not for users: only `--debug` prints one.
 */

import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { CommanderError } from 'commander';
import { SimrecError } from '../model/errors.js';

export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;
/** 128 + SIGINT, as shells report a command stopped by Ctrl-C. */
export const EXIT_INTERRUPTED = 130;

export interface Failure {
  /** The line to print after `simrec: `, or null when the message has been printed already. */
  message: string | null;
  exitCode: number;
}

/** Node's system errors (fs, net) carry these; see https://nodejs.org/api/errors.html#class-systemerror. */
interface SystemError extends Error {
  code: string;
  syscall?: string;
  path?: string;
  address?: string;
  port?: number;
  hostname?: string;
}

const isSystemError = (error: unknown): error is SystemError =>
  error instanceof Error && typeof (error as { code?: unknown }).code === 'string';

/** Turns any error a command throws into its one line and exit code. */
export function describeFailure(error: unknown): Failure {
  if (error instanceof CommanderError) {
    // Commander has printed its own message (or the help or version); only the exit code is left.
    const printedOnRequest = ['commander.helpDisplayed', 'commander.help', 'commander.version'].includes(
      error.code,
    );
    return { message: null, exitCode: printedOnRequest ? error.exitCode : EXIT_USAGE };
  }
  if (error instanceof SimrecError) {
    // "FILE: cannot read: EISDIR: ..." from a reader: the file it names, and what was expected there.
    const cause = error.cause;
    if (isSystemError(cause)) {
      const known = describeSystemError(cause, error.message.split(': ')[0]);
      if (known) return known;
    }
    return {
      message: error.message,
      exitCode: error.code === 'invalid' || error.code === 'not_found' ? EXIT_USAGE : EXIT_FAILURE,
    };
  }
  if (isSystemError(error)) {
    const known = describeSystemError(error);
    if (known) return known;
  }
  return {
    message: `unexpected error: ${(error as Error)?.message ?? String(error)}`,
    exitCode: EXIT_FAILURE,
  };
}

/**
 * The file and network mistakes a user makes every day. A path or address the user named that cannot
 * be what they meant is bad input (2); a port someone else holds or a full disk is a failure (1).
 */
function describeSystemError(error: SystemError, pathNamed = ''): Failure | null {
  const path = error.path ?? pathNamed;
  const where = error.address === undefined ? '' : `${error.address}${error.port ? `:${error.port}` : ''}`;
  switch (error.code) {
    case 'ENOENT':
      if (path && !existsSync(dirname(path)))
        return usage(`${dirname(path)}: no such folder (needed for ${path})`);
      return usage(`${path || error.message}: no such file or folder`);
    case 'EISDIR':
      return usage(`${path || 'the path given'}: is a folder, expected a file`);
    case 'ENOTDIR':
      return usage(`${path || 'the path given'}: part of this path is a file, expected a folder`);
    case 'EEXIST':
      return usage(`${path}: already exists (--force replaces it)`);
    case 'EACCES':
    case 'EPERM':
      return failure(`${path || where}: permission denied`);
    case 'ENOSPC':
      return failure(`${path || 'the disk'}: no space left on the device`);
    case 'SQLITE_FULL':
      // SQLite's "database or disk is full", from a database a command writes (an export's).
      return failure(`${path || 'the database'}: no space left on the device (database or disk is full)`);
    case 'EADDRINUSE':
      return failure(
        `${where}: the port is already in use (choose another with --port, or 0 for a free one)`,
      );
    case 'EADDRNOTAVAIL':
      return usage(`${where}: not an address of this machine (--host 127.0.0.1, 0.0.0.0, or one of its own)`);
    case 'ENOTFOUND':
      return usage(`${error.hostname ?? where}: no such host`);
    case 'ECONNREFUSED':
      return failure(`${where}: connection refused (is the server running?)`);
    default:
      return null;
  }
}

const usage = (message: string): Failure => ({ message, exitCode: EXIT_USAGE });
const failure = (message: string): Failure => ({ message, exitCode: EXIT_FAILURE });

/**
 * `simrec samples ... | head -1`: once the reader has gone, stop quietly. The reader asked for no more,
 * so this is success, the same as a command that printed everything.
 */
export function stopQuietlyWhenTheReaderLeaves(): void {
  for (const stream of [process.stdout, process.stderr])
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EPIPE') process.exit(process.exitCode ?? EXIT_OK);
      throw error;
    });
}

/**
 * Runs `work` on the file or folder the user named; a system error that does not say which path it
 * was about (fs.readSync on a folder) is told it was `location`, so the message can name it.
 */
export async function naming<T>(location: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (isSystemError(error) && error.path === undefined && error.address === undefined)
      error.path = location;
    throw error;
  }
}
