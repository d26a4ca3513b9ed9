/**
 * The layers of docs/architecture.md, checked on the source: every relative import of every file under src/
 * and web/src is resolved to its folder, and a folder may import only what the diagram lets it. A new folder
 * must be placed in a layer here before anything can import it.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { REPO_ROOT as repoRoot } from './helpers/paths.js';

const WORK_AND_BELOW = [
  'model',
  'roadnet',
  'mongodb',
  'formats',
  'store',
  'record',
  'ingest',
  'replay',
  'evaluate',
  'demo',
  'tables',
  'compare',
];

/** Each part of simrec and what it may import (besides itself). */
const MAY_IMPORT: Record<string, readonly string[]> = {
  // The model: types, schemas, units, validation; no I/O.
  model: [],
  // The adapters: one folder per format, per store backend; road networks; the MongoDB client two of
  // them share. A format never imports a store, nor a store a format.
  roadnet: ['model'],
  mongodb: ['model'],
  formats: ['model', 'roadnet', 'mongodb'],
  store: ['model', 'mongodb'],
  // The work: recording, ingest, playback and queries, KPIs, the demo; it connects codecs to stores.
  record: ['model', 'roadnet', 'mongodb', 'formats', 'store', 'replay'],
  ingest: ['model', 'roadnet', 'formats', 'store', 'record', 'replay', 'demo'],
  replay: ['model', 'roadnet', 'formats', 'store'],
  evaluate: ['model', 'roadnet', 'record', 'replay'],
  demo: ['model', 'roadnet', 'store', 'record', 'replay'],
  // The tables folder: runs as Parquet kept in step with the store, and SQL over it; its writer
  // threads open the store again (store/open-store.ts), as the demo does.
  tables: ['model', 'formats', 'store', 'replay'],
  // Two runs compared: where they part, by how much, and whether a team's thresholds pass.
  compare: ['model', 'replay'],
  // The faces.
  server: WORK_AND_BELOW,
  cli: [...WORK_AND_BELOW, 'server'],
  web: ['model', 'server'],
  index: ['model', 'store', 'record', 'replay', 'demo', 'formats'],
};

function* sourceFiles(dir: string): Generator<string> {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* sourceFiles(path);
    else if (/\.tsx?$/.test(name) && !name.endsWith('.d.ts')) yield path;
  }
}

/** The part a file belongs to: its first folder under src/ (src/index.ts is `index`), or `web`. */
function partOf(file: string): string {
  const rel = relative(repoRoot, file).split(/[\\/]/);
  if (rel[0] === 'web') return 'web';
  return rel.length === 2 ? rel[1]!.replace(/\.ts$/, '') : rel[1]!;
}

const importPattern =
  /(?:^|\n)\s*(?:import|export)\s[^;]*?from\s+['"](\.{1,2}\/[^'"]+)['"]|import\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g;

function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const found: string[] = [];
  for (const m of text.matchAll(importPattern)) found.push(resolve(dirname(file), (m[1] ?? m[2])!));
  return found;
}

describe('layers', () => {
  const files = [...sourceFiles(join(repoRoot, 'src')), ...sourceFiles(join(repoRoot, 'web', 'src'))];

  it('finds the source and every part in the diagram', () => {
    assert.ok(files.length > 100, `${files.length} files`);
    for (const file of files) {
      const part = partOf(file);
      assert.ok(part in MAY_IMPORT, `${relative(repoRoot, file)}: part ${part} is not placed in a layer`);
    }
  });

  it('every import points down the diagram (docs/architecture.md: layers), and no format sees the work layer or a store', () => {
    const wrong: string[] = [];
    for (const file of files) {
      const from = partOf(file);
      for (const target of importsOf(file)) {
        if (!target.startsWith(repoRoot)) continue;
        const to = partOf(target);
        if (to === from || MAY_IMPORT[from]?.includes(to)) continue;
        wrong.push(`${relative(repoRoot, file)} (${from}) imports ${relative(repoRoot, target)} (${to})`);
      }
    }
    assert.deepEqual(wrong, []);
  });

  it("a format imports only itself and formats/common, never another format's files", () => {
    // src/formats/FORMAT/... or src/formats/common/...; registry.ts, which loads every codec, is the one exception.
    const formatsDir = join(repoRoot, 'src', 'formats');
    const folderOf = (file: string): string | undefined => {
      const rel = relative(formatsDir, file).split(/[\\/]/);
      return rel.length > 1 && rel[0] !== '..' ? rel[0] : undefined;
    };
    const wrong: string[] = [];
    for (const file of files) {
      const from = folderOf(file);
      if (from === undefined) continue;
      for (const target of importsOf(file)) {
        const to = folderOf(target);
        if (to === undefined || to === from || to === 'common') continue;
        wrong.push(`${relative(repoRoot, file)} (${from}) imports ${relative(repoRoot, target)} (${to})`);
      }
    }
    assert.deepEqual(wrong, []);
  });

  it("outside the store, only its entry (open-store.ts) is imported, never a backend's or common's files", () => {
    const storeDir = join(repoRoot, 'src', 'store');
    const entry = join(storeDir, 'open-store.ts');
    const wrong: string[] = [];
    for (const file of files) {
      if (partOf(file) === 'store') continue;
      for (const target of importsOf(file))
        if (partOf(target) === 'store' && target.replace(/\.js$/, '.ts') !== entry)
          wrong.push(`${relative(repoRoot, file)} imports ${relative(repoRoot, target)}`);
    }
    assert.deepEqual(wrong, []);
  });

  it('the check itself sees a wrong import', () => {
    // A format reaching for the recorder, as the codecs did before #24: the rule must catch it.
    assert.ok(!MAY_IMPORT.formats!.includes('record'));
    const sample = "import { RunRecorder } from '../../record/run-recorder.js';";
    const m = [...sample.matchAll(importPattern)];
    assert.equal(m.length, 1);
    const target = resolve(join(repoRoot, 'src', 'formats', 'limsim'), m[0]![1]!);
    assert.equal(partOf(target), 'record');
  });
});
