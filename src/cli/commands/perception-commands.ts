import type { Command } from 'commander';
import { exportCoco } from '../../formats/coco/export-coco.js';
import {
  exportPerception,
  importPerception,
  type ImportResult,
  type Warn,
} from '../../formats/perception/index.js';
import { perceptionStats, writeHeatmapPng } from '../../formats/perception/perception-stats.js';
import { importSolo } from '../../formats/solo/read-solo.js';
import { exportSolo } from '../../formats/solo/write-solo.js';
import { exportYolo } from '../../formats/yolo/export-yolo.js';
import type { StoreBackend } from '../../model/store-port.js';
import { parseRunId } from '../args.js';
import { formatNumber, printJson, printTable, Progress } from '../output.js';
import {
  cleanUpOnInterrupt,
  interruptible,
  requireFreeOutput,
  requireParentFolder,
  writeFolderOutput,
} from '../output-target.js';
import { withExistingStore, withStore } from '../with-store.js';
import { printWarnings } from '../warnings.js';

/*
 * Until the generic `simrec import FORMAT` / `simrec export RUN FORMAT` commands land, Perception's
 * formats have their own nouns: `simrec perception import DIR`, `simrec coco export RUN DIR`...
 */

interface JsonOption {
  json?: boolean;
}

function progress(label: string): { progress: Progress; onProgress: (done: number, total: number) => void } {
  const p = new Progress(label);
  return { progress: p, onProgress: (done, total) => p.update(total ? done / total : 1, `${done}/${total}`) };
}

function collectWarnings(): { warn: Warn; warnings: string[] } {
  const warnings: string[] = [];
  return { warnings, warn: (where, message) => warnings.push(`${where}: ${message}`) };
}

function reportImport(result: ImportResult, opts: JsonOption): void {
  if (opts.json)
    return printJson({
      run: result.run.id,
      captures: result.captures,
      metrics: result.metrics,
      sensors: result.sensors,
      warnings: result.warnings,
    });
  printWarnings(result.warnings);
  process.stdout.write(
    `run ${result.run.id}: ${result.captures} captures from ${result.sensors} sensors, ${result.metrics} metrics` +
      `${result.warnings.length ? `, ${result.warnings.length} warnings` : ''}\n`,
  );
}

type Exporter = (
  store: StoreBackend,
  run: number,
  dir: string,
  options: { warn: Warn; onProgress: (done: number, total: number) => void },
) => Promise<object>;

function registerExport(parent: Command, format: string, what: string, exporter: Exporter): void {
  parent
    .command('export')
    .description(`write a run's captures and annotations as ${what}`)
    .argument('<run>', 'run id', parseRunId)
    .argument('<dir>', 'a new or empty folder')
    .option('--force', 'replace what is in the folder (once the new dataset is complete)')
    .option('--json', 'print JSON')
    .action(async (run: number, dir: string, opts: JsonOption & { force?: boolean }, command: Command) => {
      requireParentFolder(dir);
      requireFreeOutput(dir, Boolean(opts.force));
      const { warn, warnings } = collectWarnings();
      const { progress: bar, onProgress } = progress(`export ${format}`);
      const result = await withExistingStore(command, (store) =>
        cleanUpOnInterrupt(dir, () =>
          writeFolderOutput(dir, (folder) =>
            exporter(interruptible(store), run, folder, { warn, onProgress }),
          ),
        ),
      );
      bar.done();
      if (opts.json) return printJson({ run, format, dir, ...result, warnings });
      printWarnings(warnings);
      printTable(
        ['FIELD', 'VALUE'],
        Object.entries(result).map(([k, v]) => [k, Array.isArray(v) ? v.length : formatNumber(v)]),
      );
    });
}

type Importer = typeof importPerception;

function registerImport(parent: Command, format: string, what: string, importer: Importer): void {
  parent
    .command('import')
    .description(`import ${what} as a new run`)
    .argument('<dir>', 'the dataset folder')
    .option('--description <text>', 'the run description')
    .option('--json', 'print JSON')
    .action(async (dir: string, opts: JsonOption & { description?: string }, command: Command) => {
      const { progress: bar, onProgress } = progress(`import ${format}`);
      const result = await withStore(command, (store) =>
        importer(store, dir, {
          onProgress,
          ...(opts.description === undefined ? {} : { description: opts.description }),
        }),
      );
      bar.done();
      reportImport(result, opts);
    });
}

export function registerPerceptionCommands(program: Command): void {
  const perception = program
    .command('perception')
    .description("Unity Perception's legacy dataset (captures_*.json, metrics_*.json, definitions)");
  registerImport(
    perception,
    'perception',
    'a Perception dataset folder (the one holding Dataset/, or Dataset/ itself; several are merged)',
    importPerception,
  );
  registerExport(perception, 'perception', "Perception's legacy dataset", exportPerception);
  const solo = program
    .command('solo')
    .description("Unity Perception's SOLO dataset (sequence.N/stepM.frame_data.json)");
  registerImport(solo, 'solo', 'a SOLO dataset folder (holding metadata.json and sequence.N/)', importSolo);
  registerExport(solo, 'solo', "Perception's SOLO dataset (what pysolotools reads)", exportSolo);

  registerExport(
    program.command('coco').description('COCO instances and keypoints JSON'),
    'coco',
    'COCO (annotations/instances.json, annotations/keypoints.json, images/)',
    exportCoco,
  );
  registerExport(
    program.command('yolo').description('YOLO labels (one .txt per image, classes normalised to [0,1])'),
    'yolo',
    'YOLO (images/, labels/, classes.txt, data.yaml)',
    exportYolo,
  );

  program
    .command('stats')
    .description('object counts per frame and per label, box relative sizes and a box heat map of a run')
    .argument('<run>', 'run id', parseRunId)
    .option('--heatmap <file>', 'write the box heat map as a PNG')
    .option('--json', 'print JSON')
    .action(async (run: number, opts: JsonOption & { heatmap?: string }, command: Command) => {
      const stats = await withExistingStore(command, (store) => perceptionStats(store, run));
      if (opts.heatmap) await writeHeatmapPng(stats.heatmap, opts.heatmap);
      if (opts.json) return printJson(stats);
      printWarnings(stats.warnings);
      printTable(
        ['FIELD', 'VALUE'],
        [
          ['captures', stats.captures],
          ['images with boxes', stats.perFrame.filter((f) => f.count > 0).length],
          ['boxes', stats.boxes],
          ['boxes per frame (mean)', formatNumber(stats.boxes / Math.max(1, stats.perFrame.length))],
          ...stats.perLabel.map((l) => [`label ${l.label}`, l.count]),
          [
            'relative size (quartiles)',
            stats.relativeSize.quartiles.map((q) => formatNumber(q)).join(' / ') || '-',
          ],
          ...(opts.heatmap ? [['heat map', opts.heatmap]] : []),
        ],
      );
    });
}
