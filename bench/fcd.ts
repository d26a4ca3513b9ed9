/**
 * `simrec import fcd` on SUMO's own floating car data (#52): a generated grid with random trips run by
 * the installed sumo (netgenerate, randomTrips.py, sumo --fcd-output) until its file is several hundred
 * megabytes, then, each in a process of its own with its time and peak memory: the same file read
 * through by saxes alone (the SAX parse simrec's importer cannot avoid: the peer), simrec's import of
 * it, of it gzip-compressed, and of the first half of the same simulation (a file half as long, to see
 * whether memory grows with the file).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { measureChild, type DiffMeasure } from './diff.js';

export interface FcdSpeed {
  fileBytes: number;
  states: number;
  actors: number;
  sax: DiffMeasure;
  import: DiffMeasure;
  gzipImport: DiffMeasure;
  gzipBytes: number;
  half: DiffMeasure & { fileBytes: number };
}

const SUMO_HOME = '/usr/share/sumo';

/** A grid with random trips (made once), and SUMO's FCD of its first `end` seconds. */
function simulate(dir: string, name: string, end: number, quick: boolean): string {
  const env = { ...process.env, SUMO_HOME };
  const net = join(dir, 'grid.net.xml');
  const trips = join(dir, 'trips.xml');
  if (!existsSync(trips)) {
    const grid = quick ? '3' : '10';
    execFileSync(
      'netgenerate',
      ['--grid', '--grid.number', grid, '--grid.length', '200', '--default.lanenumber', '2', '-o', net],
      { env, stdio: 'pipe' },
    );
    execFileSync(
      'python3',
      [
        `${SUMO_HOME}/tools/randomTrips.py`,
        '-n',
        net,
        '-e',
        String(end),
        '-p',
        '0.3',
        '--seed',
        '7',
        '-o',
        trips,
      ],
      { env, stdio: 'pipe' },
    );
  }
  const out = join(dir, name);
  execFileSync(
    'sumo',
    [
      ...['-n', net, '-r', trips, '--step-length', '0.5', '--end', String(end), '--fcd-output', out],
      ...['--no-step-log', 'true', '--no-warnings', 'true'],
    ],
    { env, stdio: 'pipe' },
  );
  return out;
}

export async function measureFcd(scratch: string, quick: boolean, repoRoot: string): Promise<FcdSpeed> {
  const dir = join(scratch, 'fcd');
  mkdirSync(dir, { recursive: true });
  // Quick: a few seconds of SUMO (the smoke test runs every section within its time limit).
  const end = quick ? 30 : 2700;
  const file = simulate(dir, 'full.fcd.xml', end, quick);
  const half = simulate(dir, 'half.fcd.xml', end / 2, quick);
  const gz = `${file}.gz`;
  writeFileSync(gz, gzipSync(readFileSync(file), { level: 6 }));
  const dist = JSON.stringify(join(repoRoot, 'dist', 'src'));
  const saxes = JSON.stringify(join(repoRoot, 'node_modules', 'saxes', 'saxes.js'));
  const saxBody =
    `const { createReadStream } = await import('node:fs');\nconst { SaxesParser } = await import(${saxes});\n` +
    `async function work() {\n  const p = new SaxesParser({ position: true });\n  let n = 0;\n  p.on('opentag', () => n++);\n` +
    `  for await (const chunk of createReadStream(${JSON.stringify(file)}, { encoding: 'utf8', highWaterMark: 1 << 20 })) p.write(chunk);\n` +
    `  p.close();\n  if (n < 10) throw new Error('bench fcd: nothing parsed');\n}`;
  // Each import writes what it read (the importer's own count) beside its store.
  const importBody = (input: string, store: string): string =>
    `const { openStore } = await import(${dist} + '/store/open-store.js');\n` +
    `const { importRecording } = await import(${dist} + '/record/import-run.js');\n` +
    `const { writeFileSync } = await import('node:fs');\n` +
    `const store = await openStore(${JSON.stringify(join(dir, store))});\n` +
    `async function work() {\n  const r = await importRecording(store, 'fcd', ${JSON.stringify(input)}, { settings: { routes: ${JSON.stringify(join(dir, 'trips.xml'))} } });\n` +
    `  if (!(Number(r.details.states) > 0)) throw new Error('bench fcd: nothing imported');\n` +
    `  writeFileSync(${JSON.stringify(join(dir, `${store}.json`))}, JSON.stringify(r.details));\n  await store.close();\n}`;
  const sax = await measureChild(repoRoot, saxBody);
  const imported = await measureChild(repoRoot, importBody(file, 'full.db'));
  const gzipImport = await measureChild(repoRoot, importBody(gz, 'gz.db'));
  const halfImport = await measureChild(repoRoot, importBody(half, 'half.db'));
  const counts = JSON.parse(readFileSync(join(dir, 'full.db.json'), 'utf8')) as {
    actors: number;
    states: number;
  };
  return {
    fileBytes: statSync(file).size,
    states: counts.states,
    actors: counts.actors,
    sax,
    import: imported,
    gzipImport,
    gzipBytes: statSync(gz).size,
    half: { ...halfImport, fileBytes: statSync(half).size },
  };
}

const mb = (bytes: number): string => (bytes / 1e6).toFixed(0);

export const formatFcd = (f: FcdSpeed): string =>
  `fcd: import of SUMO's FCD (${mb(f.fileBytes)} MB, ${(f.states / 1e6).toFixed(2)} M states of ${f.actors} actors) ` +
  `${f.import.seconds} s (${mb(f.fileBytes / f.import.seconds)} MB/s, ${Math.round(f.states / f.import.seconds)} states/s), ` +
  `${(f.import.seconds / f.sax.seconds).toFixed(2)}x saxes reading it alone (${f.sax.seconds} s); ` +
  `gzip-compressed (${mb(f.gzipBytes)} MB) ${(f.gzipImport.seconds / f.import.seconds).toFixed(2)}x the plain file's time; ` +
  `peak RSS ${f.import.peakRssMiB} MiB (saxes alone ${f.sax.peakRssMiB} MiB; the first half of the run, ${mb(f.half.fileBytes)} MB, ${f.half.peakRssMiB} MiB)`;
