import { createReadStream } from 'node:fs';
import { mkdir, open, readdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { BSON } from 'mongodb';
import { SimrecError, invalid } from '../../model/errors.js';
import { int64, type BsonDoc } from './bson-fields.js';
import { parseCanonicalExtendedJson } from './extended-json.js';
import { laneMarksFromExtendedJson, LANE_MARKS_KEY } from './duplicate-keys.js';
import { collectionRole } from './soda-layout.js';
import type { DatasetSinkWrite, SodaDocument, SodaSink, SodaSource } from './soda-source.js';

/**
 * SODA.Sim's layout as mongoexport/mongoimport files: one file per collection, named after it
 * (`datasets.json`, `dataset12.json`), one document per line in canonical Extended JSON, which is
 * what `mongoexport --jsonFormat=canonical` writes and `mongoimport` reads back with every int64,
 * int32 and double as it was.
 */
const EXTENSION = '.json';

function ioError(path: string, action: string, error: unknown): SimrecError {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return new SimrecError('not_found', `${path}: no such file or folder`);
  return new SimrecError('io', `${path}: cannot ${action}: ${(error as Error).message}`, { cause: error });
}

async function* lines(path: string): AsyncIterable<[number, string]> {
  const input = createReadStream(path, { encoding: 'utf8' });
  const reader = createInterface({ input, crlfDelay: Infinity });
  let n = 0;
  try {
    for await (const line of reader) {
      n++;
      if (line.trim() !== '') yield [n, line];
    }
  } catch (error) {
    throw ioError(path, 'read', error);
  } finally {
    reader.close();
    input.destroy();
  }
}

/** A line of canonical Extended JSON, with its BSON types. */
export function parseExtendedJsonLine(line: string, where: string): BsonDoc {
  let value: unknown;
  try {
    value = parseCanonicalExtendedJson(line);
  } catch (error) {
    throw invalid(`${where}: not Extended JSON: ${(error as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw invalid(`${where}: expected one document per line`);
  return value as BsonDoc;
}

export class SodaFolder implements SodaSource, SodaSink {
  readonly location: string;

  private constructor(dir: string) {
    this.location = dir;
  }

  /** A folder to read: it must exist. */
  static async openForRead(dir: string): Promise<SodaFolder> {
    try {
      if (!(await stat(dir)).isDirectory()) throw invalid(`${dir}: not a folder`);
    } catch (error) {
      if (error instanceof SimrecError) throw error;
      throw ioError(dir, 'open', error);
    }
    return new SodaFolder(dir);
  }

  /** A folder to write: created if missing; datasets already in it are kept and new ids follow them. */
  static async openForWrite(dir: string): Promise<SodaFolder> {
    try {
      await mkdir(dir, { recursive: true });
    } catch (error) {
      throw ioError(dir, 'create', error);
    }
    return SodaFolder.openForRead(dir);
  }

  async collections(): Promise<string[]> {
    let names: string[];
    try {
      names = await readdir(this.location);
    } catch (error) {
      throw ioError(this.location, 'list', error);
    }
    return names.filter((n) => n.endsWith(EXTENSION)).map((n) => n.slice(0, -EXTENSION.length));
  }

  private fileOf(collection: string): string {
    return join(this.location, `${collection}${EXTENSION}`);
  }

  async *documents(collection: string, options: { laneMarks?: boolean } = {}): AsyncIterable<SodaDocument> {
    const file = this.fileOf(collection);
    for await (const [n, line] of lines(file)) {
      const where = `${file} line ${n}`;
      const item: SodaDocument = { doc: parseExtendedJsonLine(line, where), where };
      if (options.laneMarks && line.includes(`"${LANE_MARKS_KEY}"`))
        item.laneMarks = laneMarksFromExtendedJson(line, where);
      yield item;
    }
  }

  private async existingIds(): Promise<number[]> {
    const ids: number[] = [];
    for (const name of await this.collections()) {
      const role = collectionRole(name);
      if (role?.role === 'dataset') ids.push(role.id);
    }
    if ((await this.collections()).includes('datasets'))
      for await (const { doc, where } of this.documents('datasets')) ids.push(int64(doc._id, `${where}._id`));
    return ids;
  }

  /**
   * Writes `dataset<ID>.json` under a temporary name, then adds the dataset's line to `datasets.json`
   * (rewritten whole and renamed into place), then renames the batches into place: a reader never
   * sees a dataset without its end, and a failure leaves the folder as it was.
   */
  async writeDataset(build: (id: number) => Promise<DatasetSinkWrite>): Promise<number> {
    const ids = await this.existingIds();
    const id = ids.length ? Math.max(...ids) + 1 : 0;
    const write = await build(id);
    const name = `dataset${id}`;
    const final = this.fileOf(name);
    const partial = `${final}.partial`;
    const datasets = this.fileOf('datasets');
    const datasetsPartial = `${datasets}.partial`;
    try {
      await writeLines(partial, write.batches);
      const previous = (await this.collections()).includes('datasets') ? lines(datasets) : emptyLines();
      await writeLines(
        datasetsPartial,
        (async function* () {
          for await (const [, line] of previous) yield line;
          yield BSON.EJSON.stringify({ ...write.head, ...write.tail() }, { relaxed: false });
        })(),
      );
      await rename(datasetsPartial, datasets);
      await rename(partial, final);
    } catch (error) {
      await rm(partial, { force: true });
      await rm(datasetsPartial, { force: true });
      throw error;
    }
    return id;
  }

  async upsert(collection: 'scenarios' | 'vehicles', docs: BsonDoc[]): Promise<void> {
    const file = this.fileOf(collection);
    const key = (d: BsonDoc): string => BSON.EJSON.stringify(d._id, { relaxed: false });
    const replaced = new Set(docs.map(key));
    const previous = (await this.collections()).includes(collection)
      ? this.documents(collection)
      : emptyDocs();
    const partial = `${file}.partial`;
    try {
      await writeLines(
        partial,
        (async function* () {
          for await (const { doc } of previous) if (!replaced.has(key(doc))) yield doc;
          yield* docs;
        })(),
      );
      await rename(partial, file);
    } catch (error) {
      await rm(partial, { force: true });
      throw error;
    }
  }

  async close(): Promise<void> {}
}

async function* emptyLines(): AsyncIterable<[number, string]> {}
async function* emptyDocs(): AsyncIterable<SodaDocument> {}

/** Writes one line per item (documents as canonical Extended JSON) and syncs the file. */
async function writeLines(path: string, items: AsyncIterable<BsonDoc | string>): Promise<void> {
  let handle;
  try {
    handle = await open(path, 'w');
  } catch (error) {
    throw ioError(path, 'create', error);
  }
  try {
    let buffer = '';
    for await (const item of items) {
      buffer += `${typeof item === 'string' ? item : BSON.EJSON.stringify(item, { relaxed: false })}\n`;
      if (buffer.length > 1 << 20) {
        await handle.write(buffer);
        buffer = '';
      }
    }
    await handle.write(buffer);
    await handle.sync();
  } catch (error) {
    if (error instanceof SimrecError) throw error;
    throw ioError(path, 'write', error);
  } finally {
    await handle.close();
  }
}
