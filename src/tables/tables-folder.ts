import { randomBytes } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, extname, join, resolve } from 'node:path';

/**
 * The folder of a store's tables: every closed run's streams as Parquet, one Hive-partitioned dataset
 * a table, so that DuckDB, Polars, Spark and Trino read `state/` as one table whatever the number of
 * runs:
 *
 *   <folder>/state/run=3/part-0.parquet        a table per stream name, a partition per run
 *   <folder>/state/run=3/part-1.parquet        (a big run's table in parts, written side by side)
 *   <folder>/actors/run=3/part-0.parquet       and the runs' actors and runs
 *   <folder>/_simrec/runs/3.json               what each run's files were written from (its version)
 *   <folder>/_simrec/staging/                  files being written, renamed into place when whole
 *
 * Readers of Hive datasets skip folders whose name begins with `_` or `.`, so `_simrec/` is never
 * read as data. The tables are derived: deleting the folder loses nothing, the next query rebuilds it.
 */

/** Where simrec keeps its own files in the folder (manifests, staging, DuckDB's spill). */
export const OWN_FOLDER = '_simrec';
/** A run's partition of a table holds this file, or parts `part-0.parquet`, `part-1.parquet`... */
export const PART_FILE = 'part-0.parquet';
const partName = (part: number): string => `part-${part}.parquet`;

/** One table of a run in the manifest: its rows, bytes and columns, and its parts when it has several. */
export interface RunTableEntry {
  rows: number;
  bytes: number;
  /** The file's columns, `name:kind` each, in order (every part has the same). */
  columns?: string[];
  /**
   * Each part's rows and bytes, `part-<index>.parquet` by index, when the table was written in more
   * than one (a big run written on several threads); absent: one file, PART_FILE.
   */
  parts?: { rows: number; bytes: number }[];
}

/** What one writer put in its staging folder: `<table>.parquet` for each table it wrote, and each file's rows and columns. */
export interface StagedPart {
  staged: string;
  tables: Record<string, { rows: number; columns: string[] }>;
}

/** What a run's files were written from, kept beside them (`_simrec/runs/<run>.json`). */
export interface RunTablesManifest {
  run: number;
  /** The store's version of the run the files were written from (StoreBackend.runVersions). */
  version: string;
  /** Each table the run has files in, with their rows, bytes and columns (`name:kind`, in order). */
  tables: Record<string, RunTableEntry>;
  /**
   * Each stream table's sources when its file was written: its streams' schemas, counters and chunks
   * (StoreBackend.streamVersions), hashed. A table whose sources are unchanged keeps its file when the
   * run's other tables are written again. Absent in manifests written before it: the run is written whole.
   */
  sources?: Record<string, string>;
  /** When the files were written (ISO 8601). */
  written: string;
}

/**
 * The tables folder a store uses: `option` (--tables or $SIMREC_TABLES) when given; beside a SQLite
 * file, named after it (`runs.db` -> `runs.tables/`); for a server's URL, a folder of the user's cache
 * named after the server and database (`~/.cache/simrec/tables/<host>-<database>/`), since a central
 * store has no folder beside it on this machine.
 */
export function tablesFolderFor(storeLocation: string, option?: string): string {
  const chosen = option ?? process.env.SIMREC_TABLES;
  if (chosen) return resolve(chosen);
  const url = /^[a-z][a-z0-9+.-]*:\/\/(?:[^@/]*@)?([^/?]*)(\/[^?]*)?/i.exec(storeLocation);
  if (url) {
    const cache = process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache');
    const name = `${url[1]}${url[2] && url[2] !== '/' ? url[2] : ''}`.replace(/[^A-Za-z0-9._-]+/g, '-');
    return join(cache, 'simrec', 'tables', name);
  }
  const file = resolve(storeLocation);
  return join(dirname(file), `${basename(file, extname(file))}.tables`);
}

/**
 * The manifests as last read, trusted while their folder's change time stands still. Every change
 * renames a file in or out of the folder, which sets that time (and nothing can set it back, as a
 * modification time can be); a time within the clock's granularity of the read could hide a later
 * change (as git's racy index entries), so such a read is not trusted.
 */
interface ManifestCache {
  folderCtimeNs: bigint;
  manifests: Map<number, RunTablesManifest>;
}

/** How long after a change of the manifests' folder a reading of it is not trusted (see ManifestCache). */
const RACY_NS = 2_000_000_000n;

export class TablesFolder {
  readonly path: string;
  /** Put in the names of the staging folders this object makes, for discardStaging. */
  private readonly stagingTag: string;
  private cache: ManifestCache | null = null;

  constructor(path: string, options: { stagingTag?: string } = {}) {
    this.path = resolve(path);
    this.stagingTag = options.stagingTag ?? '';
  }

  private get manifestFolder(): string {
    return join(this.path, OWN_FOLDER, 'runs');
  }

  /** The file of one run's partition of a table (its first part when it has several). */
  partFile(table: string, run: number, part = 0): string {
    return join(this.partition(table, run), partName(part));
  }

  /** The files of one run's partition of a table, as its manifest's entry lists them. */
  partFiles(table: string, run: number, entry: Pick<RunTableEntry, 'parts'>): string[] {
    return (entry.parts ?? [null]).map((_, part) => this.partFile(table, run, part));
  }

  /** The folder of one run's partition of a table. */
  partition(table: string, run: number): string {
    return join(this.path, table, `run=${run}`);
  }

  /** The Parquet files in one run's partition of a table, listed or not (what `check` compares). */
  filesIn(table: string, run: number): string[] {
    const dir = this.partition(table, run);
    if (!existsSync(dir)) return [];
    return readdirSync(dir)
      .filter((name) => name.endsWith('.parquet'))
      .sort()
      .map((name) => join(dir, name));
  }

  /** The manifest of a run's files; undefined when none was written (or it cannot be read). */
  manifest(run: number): RunTablesManifest | undefined {
    return this.manifestsNow().get(run);
  }

  /** Every run's manifest, by run (one look at the folder, for work over many runs). */
  manifests(): ReadonlyMap<number, RunTablesManifest> {
    return this.manifestsNow();
  }

  /** The runs that have a manifest, in id order. */
  runs(): number[] {
    return [...this.manifestsNow().keys()].sort((a, b) => a - b);
  }

  /**
   * Every readable manifest, read again only when the folder changed: a question over a hundred runs
   * would otherwise read a hundred files before DuckDB reads any.
   */
  private manifestsNow(): Map<number, RunTablesManifest> {
    let folderCtimeNs: bigint;
    try {
      folderCtimeNs = statSync(this.manifestFolder, { bigint: true }).ctimeNs;
    } catch {
      this.cache = null;
      return new Map();
    }
    if (this.cache?.folderCtimeNs === folderCtimeNs) return this.cache.manifests;
    const manifests = new Map<number, RunTablesManifest>();
    for (const name of readdirSync(this.manifestFolder)) {
      const id = /^(\d+)\.json$/.exec(name)?.[1];
      if (id === undefined) continue;
      const manifest = readManifest(join(this.manifestFolder, name), Number(id));
      if (manifest) manifests.set(Number(id), manifest);
    }
    const settled = BigInt(Date.now()) * 1_000_000n - folderCtimeNs > RACY_NS;
    this.cache = settled ? { folderCtimeNs, manifests } : null;
    return manifests;
  }

  /** The tables with a folder (whatever their manifests say): every name not simrec's own. */
  tables(): string[] {
    if (!existsSync(this.path)) return [];
    return readdirSync(this.path, { withFileTypes: true })
      .filter((e) => e.isDirectory() && !e.name.startsWith('_') && !e.name.startsWith('.'))
      .map((e) => e.name)
      .sort();
  }

  /** The runs with a partition in a table, manifest or not (what `check` compares with the store). */
  partitions(table: string): number[] {
    const dir = join(this.path, table);
    if (!existsSync(dir)) return [];
    return readdirSync(dir)
      .map((name) => /^run=(\d+)$/.exec(name)?.[1])
      .filter((id): id is string => id !== undefined)
      .map(Number);
  }

  /** A fresh folder to write files in before they are renamed into place (same file system). */
  staging(kind: 'staging' | 'live' = 'staging'): string {
    const dir = join(
      this.path,
      OWN_FOLDER,
      kind,
      `${process.pid}-${this.stagingTag}${randomBytes(6).toString('hex')}`,
    );
    mkdirSync(dir, { recursive: true });
    return dir;
  }

  /**
   * Puts a run's freshly written files in place: each of `parts` staged `<table>.parquet` for the
   * tables it wrote, the first part of each table with the run's own tables. A table's files become
   * its partition's parts in the order given; each is renamed over its place (readers see the old
   * file or the new, never a half), parts beyond the new count and partitions of tables the run no
   * longer has are removed, and the manifest is written last: a crash on the way leaves the old
   * manifest, whose version no longer matches, so the run is written again.
   */
  replaceRun(
    run: number,
    version: string,
    parts: readonly StagedPart[],
    /** Tables whose files stay as they are, as the manifest lists them; the sources of every table. */
    unchanged: { kept?: RunTablesManifest['tables']; sources?: Record<string, string> } = {},
  ): RunTablesManifest {
    const tables: RunTablesManifest['tables'] = { ...unchanged.kept };
    const written = new Set(parts.flatMap((p) => Object.keys(p.tables)));
    for (const table of written) {
      const dir = this.partition(table, run);
      mkdirSync(dir, { recursive: true });
      const files = parts.filter((p) => table in p.tables);
      const placed = files.map((p, part) => {
        const staged = join(p.staged, `${table}.parquet`);
        const bytes = statSync(staged).size;
        renameSync(staged, this.partFile(table, run, part));
        return { rows: p.tables[table]!.rows, bytes };
      });
      // Parts of an earlier writing in more of them: a reader of the folder would read their rows too.
      for (const file of this.filesIn(table, run))
        if (!placed.some((_, part) => this.partFile(table, run, part) === file))
          rmSync(file, { force: true });
      tables[table] = {
        rows: placed.reduce((sum, p) => sum + p.rows, 0),
        bytes: placed.reduce((sum, p) => sum + p.bytes, 0),
        columns: files[0]!.tables[table]!.columns,
        ...(placed.length > 1 ? { parts: placed } : {}),
      };
    }
    for (const table of this.tables())
      if (!(table in tables)) rmSync(this.partition(table, run), { recursive: true, force: true });
    for (const p of parts) rmSync(p.staged, { recursive: true, force: true });
    const manifest: RunTablesManifest = { run, version, tables, written: new Date().toISOString() };
    if (unchanged.sources) manifest.sources = unchanged.sources;
    mkdirSync(this.manifestFolder, { recursive: true });
    const temporary = join(this.manifestFolder, `.${run}.json.${process.pid}`);
    writeFileSync(temporary, `${JSON.stringify(manifest)}\n`);
    renameSync(temporary, join(this.manifestFolder, `${run}.json`));
    return manifest;
  }

  /** Moves a file written for one query into `root`, laid out as a partition of `table`. */
  livePartFile(root: string, table: string, run: number, file: string): string {
    const target = join(root, table, `run=${run}`, PART_FILE);
    mkdirSync(dirname(target), { recursive: true });
    renameSync(file, target);
    return target;
  }

  /** Removes a staging folder. */
  discard(dir: string): void {
    rmSync(dir, { recursive: true, force: true });
  }

  /** Removes a run's files: its manifest first, so that a crash half way leaves files no one trusts. */
  removeRun(run: number): void {
    rmSync(join(this.manifestFolder, `${run}.json`), { force: true });
    for (const table of this.tables()) rmSync(this.partition(table, run), { recursive: true, force: true });
  }

  /** Removes everything simrec wrote here (the folder itself if nothing else is in it). */
  clear(): void {
    for (const table of this.tables()) rmSync(join(this.path, table), { recursive: true, force: true });
    rmSync(join(this.path, OWN_FOLDER), { recursive: true, force: true });
  }

  /** Bytes of the tables' files (manifests and staging left out). */
  bytes(): number {
    let total = 0;
    for (const table of this.tables())
      for (const run of this.partitions(table))
        for (const file of this.filesIn(table, run))
          total += statSync(file, { throwIfNoEntry: false })?.size ?? 0;
    return total;
  }

  /**
   * Removes the staging folders of this process that a TablesFolder made with `stagingTag` (a writer
   * stopped half way, on a thread of this process: sweepStaging keeps a living process's for an hour).
   */
  discardStaging(stagingTag: string): void {
    const prefix = `${process.pid}-${stagingTag}`;
    for (const kind of ['staging', 'live']) {
      const dir = join(this.path, OWN_FOLDER, kind);
      if (!existsSync(dir)) continue;
      for (const name of readdirSync(dir))
        if (name.startsWith(prefix)) rmSync(join(dir, name), { recursive: true, force: true });
    }
  }

  /** Removes staging folders left by a process that died while writing (theirs, by pid, or any old). */
  sweepStaging(olderThanMs = 60 * 60 * 1000): void {
    for (const kind of ['staging', 'live']) {
      const dir = join(this.path, OWN_FOLDER, kind);
      if (!existsSync(dir)) continue;
      for (const name of readdirSync(dir)) {
        const pid = Number(name.split('-')[0]);
        const path = join(dir, name);
        // Gone since the folder was listed: a writer beside this one (another thread or process)
        // renamed its files into place and removed it.
        const stat = statSync(path, { throwIfNoEntry: false });
        if (!stat) continue;
        const old = Date.now() - stat.mtimeMs > olderThanMs;
        if (old || !processAlive(pid)) rmSync(path, { recursive: true, force: true });
      }
    }
  }
}

function readManifest(file: string, run: number): RunTablesManifest | undefined {
  try {
    const manifest = JSON.parse(readFileSync(file, 'utf8')) as RunTablesManifest;
    return manifest.run === run && typeof manifest.version === 'string' ? manifest : undefined;
  } catch {
    // Cut short by a crash before its rename, or removed meanwhile: either way the run is written again.
    return undefined;
  }
}

function processAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
