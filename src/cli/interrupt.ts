/**
 * Ctrl-C (SIGINT) and SIGTERM as every command meets them (docs/command-line.md): one
 * line on stderr saying what was kept, and exit 130.
 *
 * A command with something to finish first (a recording to end, a server to close, an export to undo)
 * takes the signal while it runs (`takeInterrupts`), finishes, and says what it kept
 * (`exitInterrupted`). Without one, the process says what an interrupted command of its kind keeps
 * and exits at once. A second signal never waits for the first to be handled: it exits at once.
 */
import { EXIT_INTERRUPTED } from './failure.js';

const takers: (() => void)[] = [];
let interrupted = false;
/** What a command interrupted without a taker keeps: set per command before it runs. */
let keptByDefault = 'nothing was changed';

/** Installs the handlers; program.ts calls it once, before any command runs. */
export function handleInterrupts(): void {
  const onSignal = (): void => {
    const taker = takers.at(-1);
    if (interrupted || !taker) {
      process.stderr.write(
        interrupted
          ? 'simrec: interrupted again: stopped at once, before finishing what the first interrupt began\n'
          : `simrec: interrupted; ${keptByDefault}\n`,
      );
      process.exit(EXIT_INTERRUPTED);
    }
    interrupted = true;
    taker();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
}

/** What the running command keeps if it is interrupted with no taker (see handleInterrupts). */
export function setKeptOnInterrupt(what: string): void {
  keptByDefault = what;
}

/**
 * Hands the next interrupt to `take` (which should make the work stop soon) until the returned
 * function is called. The last taker registered gets it.
 */
export function takeInterrupts(take: () => void): () => void {
  takers.push(take);
  return () => {
    const at = takers.lastIndexOf(take);
    if (at >= 0) takers.splice(at, 1);
  };
}

/** Says what an interrupted command kept, on one line, and exits 130. */
export function exitInterrupted(kept: string): never {
  process.stderr.write(`simrec: interrupted; ${kept}\n`);
  process.exit(EXIT_INTERRUPTED);
}

/**
 * Runs `work` with a signal that an interrupt aborts, for work that stops early and still finishes
 * cleanly (a recording ended with what it has). Resolves to the work's result and whether it was
 * interrupted; the caller says what was kept.
 */
export async function untilInterrupted<T>(
  work: (signal: AbortSignal) => Promise<T>,
): Promise<{ result: T; interrupted: boolean }> {
  const controller = new AbortController();
  const release = takeInterrupts(() => controller.abort());
  try {
    const result = await work(controller.signal);
    return { result, interrupted: controller.signal.aborted };
  } finally {
    release();
  }
}
