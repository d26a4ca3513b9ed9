#!/usr/bin/env node
/**
 * The build's stamp: a hash of everything the build reads, kept in dist/ when a build ends.
 *
 *   node scripts/build-stamp.mjs write     after a build: the stamp of what it built from
 *   node scripts/build-stamp.mjs current   exits 0 when dist/ was built from the files as they are
 *
 * npm runs `prepare` at `npm install`, and again whenever `npx simrec` first links the project into
 * its own cache: without the stamp, the first `npx simrec` rebuilds what `npm install` just built,
 * rewriting dist/ under any simrec already running from it (a test suite's, for one).
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const STAMP = join(root, 'dist', '.build-stamp');
/** What the build compiles or bundles, and what decides how. */
const INPUTS = [
  'src',
  'web',
  'test',
  'bench',
  'package.json',
  'package-lock.json',
  'tsconfig.json',
  'vite.config.ts',
];
/** Test data is not compiled: its size would only slow the check. */
const SKIPPED = new Set(['node_modules', 'dist', 'fixtures']);

/** The files under `path` (itself, if a file), in one order whatever the file system's. */
function* files(path) {
  const full = join(root, path);
  if (!existsSync(full)) return;
  if (!statSync(full).isDirectory()) {
    yield path;
    return;
  }
  const entries = readdirSync(full, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1));
  for (const entry of entries)
    if (entry.isDirectory()) {
      if (!SKIPPED.has(entry.name)) yield* files(join(path, entry.name));
    } else if (entry.isFile()) yield join(path, entry.name);
}

function stamp() {
  const hash = createHash('sha256');
  for (const input of INPUTS)
    for (const file of files(input))
      hash
        .update(`${file}\0`)
        .update(readFileSync(join(root, file)))
        .update('\0');
  return hash.digest('hex');
}

const mode = process.argv[2];
if (mode === 'write') writeFileSync(STAMP, `${stamp()}\n`);
else if (mode === 'current') {
  const built = existsSync(STAMP) ? readFileSync(STAMP, 'utf8').trim() : '';
  process.exit(built === stamp() ? 0 : 1);
} else {
  console.error('usage: node scripts/build-stamp.mjs write|current');
  process.exit(2);
}
