/** A dataset's output folder: files written whole, a folder refused unless empty, the run's files copied. */
import { mkdir, readdir, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { conflict } from '../../../model/errors.js';
import type { RunSource } from '../../../model/run-ports.js';
import type { Warn } from './source-values.js';

/** Writes a file through a temporary name, so a reader never sees half of it. */
export async function writeFileAtomic(path: string, data: string | Uint8Array): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const temporary = `${path}.${process.pid}.tmp`;
  await writeFile(temporary, data);
  await rename(temporary, path);
}

/** Refuses a folder that already holds a dataset: merging two would make neither. */
export async function requireEmptyTarget(dir: string, what: string): Promise<void> {
  const entries = await readdir(dir).catch((e: NodeJS.ErrnoException) => {
    if (e.code === 'ENOENT') return [] as string[];
    throw e;
  });
  if (entries.length > 0)
    throw conflict(`${dir}: the folder is not empty; ${what} writes into a new or empty folder`);
}

/** Copies the attachments the dataset names to `dir`; returns how many were copied. */
export async function copyAttachments(
  source: RunSource,
  names: Iterable<string>,
  target: (name: string) => string,
  warn: Warn,
): Promise<number> {
  let copied = 0;
  for (const name of new Set(names)) {
    const attachment = await source.attachment(name);
    if (!attachment) {
      warn(`run ${source.run.id}`, `file ${name} is referenced but was never imported; not written`);
      continue;
    }
    await writeFileAtomic(target(name), attachment.data);
    copied++;
  }
  return copied;
}
