/**
 * The format readers and writers as the tests call them: with a store and run ids, through the work
 * layer's own connections (record/import-run.ts's target, with its rollback; replay/run-source.ts),
 * so a test of a reader also proves that a failed read leaves no run. Everything else a format module
 * exports passes through unchanged.
 */
import * as coco from '../../src/formats/coco/write-coco.js';
import * as didrive from '../../src/formats/didrive/codec.js';
import * as limsim from '../../src/formats/limsim/codec.js';
import * as perception from '../../src/formats/perception/codec.js';
import * as stats from '../../src/formats/common/labelled-images/perception-stats.js';
import * as soda from '../../src/formats/soda/codec.js';
import * as soloRead from '../../src/formats/solo/read-solo.js';
import * as soloWrite from '../../src/formats/solo/write-solo.js';
import * as yolo from '../../src/formats/yolo/write-yolo.js';
import type { StoreBackend } from '../../src/model/store-port.js';
import type { RunTarget } from '../../src/model/run-ports.js';
import { withImportTarget } from '../../src/record/import-run.js';
import { exportRecording } from '../../src/replay/export-run.js';
import { storeRunSource } from '../../src/replay/run-source.js';

export * from '../../src/formats/coco/write-coco.js';
export * from '../../src/formats/didrive/codec.js';
export * from '../../src/formats/limsim/codec.js';
export * from '../../src/formats/perception/codec.js';
export * from '../../src/formats/common/labelled-images/perception-stats.js';
export * from '../../src/formats/soda/codec.js';
export * from '../../src/formats/solo/read-solo.js';
export * from '../../src/formats/solo/write-solo.js';
export * from '../../src/formats/yolo/write-yolo.js';

const read = async <T>(store: StoreBackend, work: (into: RunTarget) => Promise<T>): Promise<T> =>
  (await withImportTarget(store, {}, work)).result;

export const importLimSim = (store: StoreBackend, file: string, options?: limsim.LimSimImportOptions) =>
  read(store, (into) => limsim.importLimSim(into, file, options));

/** Through export-run, as `simrec export` writes: refused where a file is unless `overwrite`. */
export async function exportLimSim(
  store: StoreBackend,
  run: number,
  file: string,
  options: limsim.LimSimExportOptions & { overwrite?: boolean } = {},
): Promise<limsim.LimSimExportResult> {
  const details = await exportRecording(store, limsim.limsimCodec, [run], file, {
    overwrite: Boolean(options.overwrite),
    warn: (_where, message) => options.warn?.(message),
    ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    ...(options.evaluate ? { evaluate: options.evaluate } : {}),
  });
  return { file, ...(details as unknown as Omit<limsim.LimSimExportResult, 'file'>) };
}

export const importDidrive = (
  store: StoreBackend,
  location: string,
  options?: didrive.DidriveImportOptions,
) => read(store, (into) => didrive.importDidrive(into, location, options));

export const exportDidrive = async (
  store: StoreBackend,
  runs: number[],
  location: string,
  options?: didrive.DidriveExportOptions,
) => didrive.exportDidrive(await Promise.all(runs.map((r) => storeRunSource(store, r))), location, options);

export const importSoda = (store: StoreBackend, source: soda.SodaSource, options?: soda.SodaImportOptions) =>
  read(store, (into) => soda.importSoda(into, source, options));

export const exportSoda = async (
  store: StoreBackend,
  run: number,
  sink: soda.SodaSink,
  options?: soda.SodaExportOptions,
) => soda.exportSoda(await storeRunSource(store, run), store, sink, options);

/** Warnings as `simrec import --json` prints them: `where: message`. */
const flatWarnings = async (result: Promise<perception.ImportResult>) => {
  const r = await result;
  return { ...r, warnings: r.warnings.map((w) => `${w.where}: ${w.message}`) };
};

export const importPerception = (store: StoreBackend, dir: string, options?: perception.ImportOptions) =>
  flatWarnings(read(store, (into) => perception.importPerception(into, dir, options)));

export const importSolo = (store: StoreBackend, dir: string, options?: perception.ImportOptions) =>
  flatWarnings(read(store, (into) => soloRead.importSolo(into, dir, options)));

export const loadDataset = async (store: StoreBackend, run: number) =>
  perception.loadDataset(await storeRunSource(store, run));

export const perceptionStats = async (store: StoreBackend, run: number) =>
  stats.perceptionStats(await storeRunSource(store, run));

export const exportPerception = async (
  store: StoreBackend,
  run: number,
  dir: string,
  options: Parameters<typeof perception.exportPerception>[2],
) => perception.exportPerception(await storeRunSource(store, run), dir, options);

export const exportSolo = async (
  store: StoreBackend,
  run: number,
  dir: string,
  options: Parameters<typeof soloWrite.exportSolo>[2],
) => soloWrite.exportSolo(await storeRunSource(store, run), dir, options);

export const exportCoco = async (
  store: StoreBackend,
  run: number,
  dir: string,
  options: Parameters<typeof coco.exportCoco>[2],
) => coco.exportCoco(await storeRunSource(store, run), dir, options);

export const exportYolo = async (
  store: StoreBackend,
  run: number,
  dir: string,
  options: Parameters<typeof yolo.exportYolo>[2],
) => yolo.exportYolo(await storeRunSource(store, run), dir, options);

export const loadBirdviewSource = async (store: StoreBackend, run: number) =>
  didrive.loadBirdviewSource(await storeRunSource(store, run));

export const birdviewAt = async (store: StoreBackend, run: number, t: number) =>
  didrive.birdviewAt(await storeRunSource(store, run), t);
