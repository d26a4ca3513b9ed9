import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { FormatCodec, WriteOptions } from '../model/codec-port.js';
import { conflict, invalid } from '../model/errors.js';
import type { JsonObject } from '../model/json.js';
import type { ExportSources, RunSource } from '../model/run-ports.js';
import type { StoreBackend } from '../model/store-port.js';
import type { Sample } from '../model/stream.js';
import { loadCodec } from '../formats/registry.js';
import { storeRunSource } from './run-source.js';

/**
 * Connects a store to a format's writer: the only caller of `codec.write`. It opens the runs as
 * RunSources and writes so that a failure or an abort leaves nothing behind: a `file` or `folder`
 * output is written under a temporary sibling name and takes its name only once complete (replacing
 * what was there: the caller has checked that it may).
 */

export interface ExportOptions {
  warn?: (where: string, message: string) => void;
  signal?: AbortSignal;
  onProgress?: (done: number, total: number) => void;
  /** Replace what is at the location (the face checks --force before). */
  overwrite?: boolean;
  /** Add the runs to the dataset at the location (`dataset` layouts: --episode-of). */
  append?: boolean;
  /** Scores a run on the fly for formats that always carry scores (see WriteOptions.evaluate). */
  evaluate?: (run: number) => Promise<Sample[]>;
  /** The format's own options (FormatOption), by key. */
  settings?: Readonly<Record<string, string | number | boolean>>;
}

/** The temporary sibling an output is written to before it takes its name (hidden, this process's). */
export const temporarySibling = (location: string): string =>
  join(dirname(location), `.${basename(location)}.partial-${process.pid}`);

export async function exportRecording(
  store: StoreBackend,
  format: FormatCodec | string,
  runIds: readonly number[],
  location: string,
  options: ExportOptions = {},
): Promise<JsonObject> {
  const codec = typeof format === 'string' ? await loadCodec(format) : format;
  const write = codec.write?.bind(codec);
  if (!write) throw invalid(`${codec.name}: export is not supported (simrec reads it only)`);
  if (runIds.length === 0) throw invalid('RUN: expected at least one run to export');
  const fileEachRun = runIds.length > 1 && !codec.multiRun;
  if (fileEachRun && !(codec.output === 'file' && codec.fileExtension))
    throw invalid(
      `${codec.name}: writes one run to a location; several runs are for formats that hold several`,
    );
  if (!options.overwrite && (codec.output === 'file' || codec.output === 'folder')) requireFree(location);
  if (options.append && codec.output !== 'dataset')
    throw invalid(`${codec.name}: cannot add runs to an existing output (only datasets of episodes can)`);
  const signal = options.signal ?? new AbortController().signal;
  const companions = new Map<string, Uint8Array>();
  const runs: RunSource[] = [];
  for (const id of runIds) runs.push(await storeRunSource(store, id, signal));
  const sources: ExportSources = { runs, scenarios: store.scenarios, vehicles: store.vehicles };
  const writeOptions: WriteOptions = {
    warn: options.warn ?? (() => {}),
    signal,
    onProgress: options.onProgress ?? (() => {}),
    overwrite: Boolean(options.overwrite),
    append: Boolean(options.append),
    evaluate: options.evaluate ?? (async () => []),
    settings: options.settings ?? {},
    beside: (name, data) => companions.set(name, data),
  };
  if (fileEachRun)
    return writeThroughTemporary(location, true, (folder) =>
      writeFileEachRun(codec, sources, folder, location, writeOptions),
    );
  const details =
    codec.output === 'dataset' || codec.output === 'database'
      ? await writeInPlace(location, () => write(sources, location, writeOptions))
      : await writeThroughTemporary(location, codec.output === 'folder', async (path) => {
          const written = await write(sources, path, writeOptions);
          signal.throwIfAborted();
          return written;
        });
  if (companions.size === 0) return details;
  const beside: string[] = [];
  for (const [name, data] of companions) {
    const path = companionPath(location.replace(/\.[^./\\]+$/, ''), name);
    await writeThroughTemporary(path, false, async (temporary) => writeFileSync(temporary, data));
    beside.push(path);
  }
  return { ...details, beside };
}

/**
 * Several runs in a one-run file format: a folder (written whole under a temporary name by the
 * caller) holding `run-ID.EXT` for each run and each file's companions as `run-ID.NAME`.
 */
async function writeFileEachRun(
  codec: FormatCodec,
  sources: ExportSources,
  folder: string,
  location: string,
  options: WriteOptions,
): Promise<JsonObject> {
  mkdirSync(folder);
  const files: JsonObject[] = [];
  for (const run of sources.runs) {
    const name = `run-${run.run.id}`;
    const file = `${name}.${codec.fileExtension!}`;
    const beside: string[] = [];
    const details = await codec.write!({ ...sources, runs: [run] }, join(folder, file), {
      ...options,
      beside: (companion, data) => {
        writeFileSync(join(folder, companionPath(name, companion)), data);
        beside.push(join(location, companionPath(name, companion)));
      },
    });
    options.signal.throwIfAborted();
    files.push({
      run: run.run.id,
      file: join(location, file),
      ...details,
      ...(beside.length ? { beside } : {}),
    });
  }
  return { files };
}

/**
 * A dataset or database output the format writes where it is (adding to it, a file at a time): a
 * folder the export made is removed if it fails (a full disk left an empty one), one that was there is
 * left to the format, which writes each file under a temporary name.
 */
async function writeInPlace<T>(location: string, write: () => Promise<T>): Promise<T> {
  const existed = existsSync(location);
  try {
    return await write();
  } catch (error) {
    if (!existed) rmSync(location, { recursive: true, force: true });
    throw error;
  }
}

/** A companion's name beside `stem`: `stem.NAME`, or `stem_NAME` for a NAME given as `_NAME`. */
const companionPath = (stem: string, name: string): string =>
  name.startsWith('_') ? `${stem}${name}` : `${stem}.${name}`;

/** A path that holds something (a file, or a folder that is not empty) is not overwritten unasked. */
function requireFree(location: string): void {
  if (!existsSync(location)) return;
  if (statSync(location).isDirectory() && readdirSync(location).length === 0) return;
  throw conflict(`${location}: already exists; --force replaces it`);
}

/**
 * Writes an output under its temporary sibling, then gives it its name, replacing what was there: a
 * failed or interrupted export leaves the old output whole and no temporary behind.
 */
async function writeThroughTemporary<T>(
  location: string,
  folder: boolean,
  write: (path: string) => Promise<T>,
): Promise<T> {
  const temporary = temporarySibling(location);
  const clean = (): void => {
    for (const path of [temporary, ...['-journal', '-wal', '-shm'].map((s) => temporary + s)])
      rmSync(path, { recursive: true, force: true });
  };
  clean();
  try {
    const result = await write(temporary);
    if (folder && !existsSync(temporary)) mkdirSync(temporary); // an empty dataset is still the one asked for
    rmSync(location, { recursive: true, force: true });
    renameSync(temporary, location);
    return result;
  } finally {
    clean();
  }
}
