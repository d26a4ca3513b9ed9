import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (tests run compiled, from dist/test/...). */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
/** Real files from the source systems, each under a folder naming its source with its licence. */
export const FIXTURES = resolve(REPO_ROOT, 'test', 'fixtures');
export const fixture = (...parts: string[]): string => join(FIXTURES, ...parts);
/** The built simrec command. */
export const SIMREC_BIN = join(REPO_ROOT, 'dist', 'src', 'cli', 'main.js');

/** A fresh temporary directory, removed by the returned cleanup. */
export function tempDir(prefix = 'simrec-test-'): { path: string; cleanup(): void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, cleanup: () => rmSync(path, { recursive: true, force: true }) };
}
