/**
 * Format rates: reading a 1 MB SUMO network, and importing a generated Unity Perception dataset of
 * 2,500 and 10,000 captures (captures per second, and peak memory at both sizes, in child processes,
 * so memory growth with the dataset shows).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { recordDemoRun } from '../src/demo/demo-run.js';
import { importRecording } from '../src/record/import-run.js';
import { exportRecording } from '../src/replay/export-run.js';
import { TrafficGenerator, type BenchSize } from './generator.js';
import { simrecPeer } from './peers/simrec.js';
import { encodePng } from '../src/formats/common/labelled-images/image-files.js';
import { readRoadNetwork } from '../src/roadnet/read-roadnet.js';
import { openStore } from '../src/store/open-store.js';
import { median } from './stats.js';

export interface LimSimRates {
  rows: number;
  exportRowsPerSecond: number;
  importRowsPerSecond: number;
}

/** LimSim: a generated run (actors x steps at 10 Hz) exported to LimSim's database and imported back. */
async function measureLimSim(scratch: string, quick: boolean): Promise<LimSimRates> {
  const size: BenchSize = { actors: quick ? 20 : 100, steps: quick ? 100 : 600, hz: 10 };
  const dir = join(scratch, 'limsim');
  mkdirSync(dir, { recursive: true });
  await simrecPeer.record({ dir, frames: new TrafficGenerator(size), commitEverySteps: 100 });
  const store = await openStore(join(dir, 'bench.simrec.db'));
  try {
    const file = join(dir, 'export.db');
    let start = performance.now();
    await exportRecording(store, 'limsim', [1], file);
    const exportSeconds = (performance.now() - start) / 1000;
    start = performance.now();
    await importRecording(store, 'limsim', file);
    const importSeconds = (performance.now() - start) / 1000;
    const rows = size.actors * size.steps;
    return {
      rows,
      exportRowsPerSecond: Math.round(rows / exportSeconds),
      importRowsPerSecond: Math.round(rows / importSeconds),
    };
  } finally {
    await store.close();
  }
}

export interface McapRates {
  frames: number;
  messages: number;
  exportSeconds: number;
  framesPerSecond: number;
  mcapBytes: number;
  storeBytes: number;
  /** The MCAP file's size over the run's size in simrec's store (a fresh store holding only it). */
  sizeRatio: number;
  /** The same run as a LimSim database, for scale. */
  limsimBytes: number;
  /** The export with ASAM OSI ground truth too (`--osi`): its speed and size. */
  osiFramesPerSecond: number;
  osiBytes: number;
}

/** MCAP: a demo run exported for Foxglove, its speed and size beside the run's size in the store. */
async function measureMcap(scratch: string, quick: boolean): Promise<McapRates> {
  const dir = join(scratch, 'mcap');
  mkdirSync(dir, { recursive: true });
  const storeFile = join(dir, 'demo.simrec.db');
  const store = await openStore(storeFile);
  try {
    const { run } = await recordDemoRun(store, { duration: quick ? 30 : 120, vehicles: 30, seed: 1 });
    const file = join(dir, 'demo.mcap');
    const start = performance.now();
    const details = await exportRecording(store, 'mcap', [run.id], file);
    const exportSeconds = (performance.now() - start) / 1000;
    const osiFile = join(dir, 'demo.osi.mcap');
    const osiStart = performance.now();
    await exportRecording(store, 'mcap', [run.id], osiFile, { settings: { osi: true } });
    const osiSeconds = (performance.now() - osiStart) / 1000;
    await exportRecording(store, 'limsim', [run.id], join(dir, 'demo.limsim.db'));
    await store.close();
    const storeBytes =
      statSync(storeFile).size + (existsSync(`${storeFile}-wal`) ? statSync(`${storeFile}-wal`).size : 0);
    const mcapBytes = statSync(file).size;
    return {
      frames: details.frames as number,
      messages: details.messages as number,
      exportSeconds: Math.round(exportSeconds * 1000) / 1000,
      framesPerSecond: Math.round((details.frames as number) / exportSeconds),
      mcapBytes,
      storeBytes,
      sizeRatio: Math.round((mcapBytes / storeBytes) * 100) / 100,
      limsimBytes: statSync(join(dir, 'demo.limsim.db')).size,
      osiFramesPerSecond: Math.round((details.frames as number) / osiSeconds),
      osiBytes: statSync(osiFile).size,
    };
  } finally {
    await store.close().catch(() => {}); // the figures are taken: a failed close must not hide them
    rmSync(dir, { recursive: true, force: true });
  }
}

export interface FormatResults {
  mcap?: McapRates;
  /** Peak memory of MCAP, LimSim, CARLA, OSI and SODA.Sim exports of the benchmark's traffic at two run lengths. */
  exportMemory?: ExportMemory[];
  /** The same files imported back, each into a store of its own. */
  importMemory?: ExportMemory[];
  limsim?: LimSimRates;
  roadnet: { bytes: number; lanes: number; medianMs: number; mbPerSecond: number };
  perception: { captures: number; seconds: number; capturesPerSecond: number; peakRssMiB: number }[];
}

/** A SUMO grid network: n x n junctions, two-lane edges both ways, internal shapes left out. */
function gridNet(n: number): string {
  const lines = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<net version="1.9">',
    `  <location netOffset="0.00,0.00" convBoundary="0,0,${(n - 1) * 100},${(n - 1) * 100}" origBoundary="0,0,1,1" projParameter="!"/>`,
  ];
  const edge = (from: string, to: string, ax: number, ay: number, bx: number, by: number): void => {
    const id = `${from}_${to}`;
    const nx = by === ay ? 0 : 1;
    const ny = by === ay ? 1 : 0;
    const sign = bx > ax || by > ay ? -1 : 1;
    lines.push(`  <edge id="${id}" from="${from}" to="${to}" priority="1">`);
    for (let k = 0; k < 2; k++) {
      const off = sign * (1.6 + 3.2 * k);
      const shape = Array.from(
        { length: 11 },
        (_, i) =>
          `${(ax + ((bx - ax) * i) / 10 + nx * off).toFixed(2)},${(ay + ((by - ay) * i) / 10 + ny * off).toFixed(2)}`,
      ).join(' ');
      lines.push(
        `    <lane id="${id}_${k}" index="${k}" speed="13.89" length="100.00" width="3.20" shape="${shape}"/>`,
      );
    }
    lines.push('  </edge>');
  };
  for (let i = 0; i < n; i++)
    for (let j = 0; j < n; j++) {
      if (i + 1 < n) {
        edge(`J${i}_${j}`, `J${i + 1}_${j}`, i * 100, j * 100, (i + 1) * 100, j * 100);
        edge(`J${i + 1}_${j}`, `J${i}_${j}`, (i + 1) * 100, j * 100, i * 100, j * 100);
      }
      if (j + 1 < n) {
        edge(`J${i}_${j}`, `J${i}_${j + 1}`, i * 100, j * 100, i * 100, (j + 1) * 100);
        edge(`J${i}_${j + 1}`, `J${i}_${j}`, i * 100, (j + 1) * 100, i * 100, j * 100);
      }
    }
  for (let i = 0; i < n; i++)
    for (let j = 0; j < n; j++)
      lines.push(
        `  <junction id="J${i}_${j}" type="priority" x="${i * 100}" y="${j * 100}" incLanes="" intLanes="" shape="${i * 100 - 7},${j * 100 - 7} ${i * 100 + 7},${j * 100 - 7} ${i * 100 + 7},${j * 100 + 7} ${i * 100 - 7},${j * 100 + 7}"/>`,
      );
  lines.push('</net>');
  return lines.join('\n');
}

/** A legacy Perception dataset as Unity's writer lays it out, with tiny PNGs and a metric per capture. */
export function writeDataset(root: string, captures: number): void {
  const dataset = join(root, 'Dataset');
  mkdirSync(join(root, 'RGB'), { recursive: true });
  mkdirSync(dataset, { recursive: true });
  const write = (name: string, body: object): void =>
    writeFileSync(join(dataset, name), JSON.stringify({ version: '0.0.1', ...body }));
  write('egos.json', { egos: [{ id: 'ego', description: 'car' }] });
  write('sensors.json', {
    sensors: [{ id: 'cam', ego_id: 'ego', modality: 'camera', description: 'front' }],
  });
  write('annotation_definitions.json', {
    annotation_definitions: [
      { id: 'bbox', name: 'bounding box', format: 'JSON', spec: [{ label_id: 1, label_name: 'car' }] },
    ],
  });
  write('metric_definitions.json', {
    metric_definitions: [{ id: 'count', name: 'object count', description: 'objects per label', spec: [] }],
  });
  const png = encodePng(8, 8, 3, new Uint8Array(192).fill(80));
  for (let f = 0; f * 150 < captures; f++) {
    const records = [];
    for (let i = f * 150; i < Math.min(captures, f * 150 + 150); i++) {
      writeFileSync(join(root, 'RGB', `rgb_${i}.png`), png);
      records.push({
        id: `c${i}`,
        sequence_id: 's',
        step: i,
        timestamp: i * 0.05,
        sensor: {
          sensor_id: 'cam',
          ego_id: 'ego',
          modality: 'camera',
          translation: [0, 1.5, 0],
          rotation: [0, 0, 0, 1],
          camera_intrinsic: [
            [1, 0, 0],
            [0, 1, 0],
            [0, 0, 1],
          ],
        },
        ego: {
          ego_id: 'ego',
          translation: [0, 0, i],
          rotation: [0, 0, 0, 1],
          velocity: null,
          acceleration: null,
        },
        filename: `RGB/rgb_${i}.png`,
        format: 'PNG',
        annotations: [
          {
            id: `a${i}`,
            annotation_definition: 'bbox',
            values: [{ label_id: 1, label_name: 'car', instance_id: 1, x: 1, y: 1, width: 3, height: 2 }],
          },
        ],
      });
    }
    write(`captures_${String(f).padStart(3, '0')}.json`, { captures: records });
    // One metric per capture, as Perception's object-count labeler writes them, 150 to a file.
    write(`metrics_${String(f).padStart(3, '0')}.json`, {
      metrics: records.map((r) => ({
        capture_id: r.id,
        annotation_id: null,
        sequence_id: 's',
        step: r.step,
        metric_definition: 'count',
        values: [{ label_id: 1, label_name: 'car', count: 1 }],
      })),
    });
  }
}

/** The exports whose memory is measured, and the file each writes. */
const EXPORT_FILES = {
  mcap: 'out.mcap',
  limsim: 'out.db',
  carla: 'out.log',
  osi: 'out_gt.osi',
  soda: 'out-soda',
} as const;
type ExportFormat = keyof typeof EXPORT_FILES;
const EXPORT_NAMES: Record<ExportFormat, string> = {
  mcap: 'MCAP',
  limsim: 'LimSim',
  carla: 'CARLA recorder',
  osi: 'ASAM OSI trace',
  soda: 'SODA.Sim files',
};

export interface ExportMemory {
  format: ExportFormat;
  actorStates: number;
  seconds: number;
  peakRssMiB: number;
}

/**
 * An export alone, in a process of its own, so its peak memory is the export's: the benchmark's traffic
 * (100 actors at 100 Hz) recorded first, at two lengths, so that memory growing with the run shows.
 * Each file is then imported back the same way, into a store of its own: a recording users already
 * have (a CARLA recorder file, a LimSim database, an MCAP file, an OSI trace, SODA.Sim's collections as
 * mongoexport files) read into simrec.
 */
function measureExportMemory(
  scratch: string,
  quick: boolean,
): Promise<{ exports: ExportMemory[]; imports: ExportMemory[] }> {
  const lengths = quick ? [300, 1200] : [2500, 10_000];
  const exports: ExportMemory[] = [];
  const imports: ExportMemory[] = [];
  const child = (...args: string[]): ExportMemory =>
    JSON.parse(
      execFileSync(process.execPath, [fileURLToPath(import.meta.url), ...args], {
        maxBuffer: 1 << 20,
      }).toString(),
    ) as ExportMemory;
  return (async () => {
    for (const steps of lengths) {
      const dir = join(scratch, `export-${steps}`);
      mkdirSync(dir, { recursive: true });
      const size: BenchSize = { actors: 100, steps, hz: 100 };
      const actorStates = String(size.actors * steps);
      await simrecPeer.record({ dir, frames: new TrafficGenerator(size), commitEverySteps: 100 });
      for (const format of Object.keys(EXPORT_FILES) as ExportFormat[]) {
        exports.push(child('export', dir, format, actorStates));
        imports.push(child('import', dir, format, actorStates));
      }
      rmSync(dir, { recursive: true, force: true });
    }
    return { exports, imports };
  })();
}

async function exportChild(dir: string, format: ExportFormat, actorStates: number): Promise<void> {
  const store = await openStore(join(dir, 'bench.simrec.db'));
  const [run] = await store.listRuns();
  const start = performance.now();
  await exportRecording(store, format, [run!.id], join(dir, EXPORT_FILES[format]));
  const seconds = (performance.now() - start) / 1000;
  await store.close();
  printCost(format, actorStates, seconds);
}

/** What a child measured, for its parent: the seconds given, and the process's peak memory. */
function printCost(format: ExportFormat, actorStates: number, seconds: number): void {
  const result: ExportMemory = {
    format,
    actorStates,
    seconds: Math.round(seconds * 100) / 100,
    peakRssMiB: Math.round(process.resourceUsage().maxRSS / 1024),
  };
  process.stdout.write(JSON.stringify(result));
}

/** An exported file imported into a store of its own (the library's import: a run's tables are not written). */
async function importChild(dir: string, format: ExportFormat, actorStates: number): Promise<void> {
  const store = await openStore(join(dir, `import-${format}.db`));
  const start = performance.now();
  await importRecording(store, format, join(dir, EXPORT_FILES[format]));
  const seconds = (performance.now() - start) / 1000;
  await store.close();
  printCost(format, actorStates, seconds);
}

/** The import alone, in a process of its own, so its peak memory is the import's (the dataset is written first). */
async function perceptionChild(dir: string, captures: number): Promise<void> {
  const store = await openStore(join(dir, 'perception.db'));
  const start = performance.now();
  await importRecording(store, 'perception', join(dir, 'dataset'));
  const seconds = (performance.now() - start) / 1000;
  await store.close();
  process.stdout.write(
    JSON.stringify({ captures, seconds, peakRssMiB: Math.round(process.resourceUsage().maxRSS / 1024) }),
  );
}

export async function measureFormats(scratch: string, quick: boolean): Promise<FormatResults> {
  const text = gridNet(quick ? 8 : 22);
  const times: number[] = [];
  let lanes = 0;
  for (let i = 0; i < 5; i++) {
    const start = performance.now();
    lanes = readRoadNetwork(text, { file: 'grid.net.xml' }).network.lanes.length;
    times.push(performance.now() - start);
  }
  const medianMs = median(times);
  const bytes = Buffer.byteLength(text);
  const perception = (quick ? [1000, 4000] : [10_000, 40_000]).map((captures) => {
    const dir = join(scratch, `perception-${captures}`);
    mkdirSync(dir, { recursive: true });
    writeDataset(join(dir, 'dataset'), captures);
    const out = execFileSync(
      process.execPath,
      [fileURLToPath(import.meta.url), 'perception', dir, String(captures)],
      { maxBuffer: 1 << 20 },
    );
    const r = JSON.parse(out.toString()) as { captures: number; seconds: number; peakRssMiB: number };
    rmSync(dir, { recursive: true, force: true });
    return { ...r, capturesPerSecond: Math.round(r.captures / r.seconds) };
  });
  const limsim = await measureLimSim(scratch, quick);
  const mcap = await measureMcap(scratch, quick);
  const { exports: exportMemory, imports: importMemory } = await measureExportMemory(scratch, quick);
  return {
    mcap,
    exportMemory,
    importMemory,
    limsim,
    roadnet: {
      bytes,
      lanes,
      medianMs: Math.round(medianMs * 10) / 10,
      mbPerSecond: Math.round((bytes / 1e6 / (medianMs / 1000)) * 10) / 10,
    },
    perception,
  };
}

export function formatFormats(f: FormatResults): string {
  const [small, large] = f.perception;
  return [
    'formats:',
    `  SUMO network of ${(f.roadnet.bytes / 1e6).toFixed(2)} MB (${f.roadnet.lanes} lanes) read in ${f.roadnet.medianMs} ms (${f.roadnet.mbPerSecond} MB/s)`,
    ...f.perception.map(
      (p) =>
        `  Perception import of ${p.captures} captures: ${p.capturesPerSecond} captures/s, peak ${p.peakRssMiB} MiB`,
    ),
    f.limsim
      ? `  LimSim database of ${f.limsim.rows} frame rows: export ${f.limsim.exportRowsPerSecond} rows/s, import ${f.limsim.importRowsPerSecond} rows/s`
      : '',
    ...(f.exportMemory ?? []).map(
      (e) =>
        `  ${EXPORT_NAMES[e.format]} export of ${e.actorStates} actor-states (100 actors at 100 Hz): ${e.seconds} s, peak ${e.peakRssMiB} MiB`,
    ),
    ...(f.importMemory ?? []).map((e) => {
      const limsim = f.importMemory!.find((l) => l.format === 'limsim' && l.actorStates === e.actorStates);
      const ratio =
        e.format !== 'limsim' && limsim ? `; ${(e.seconds / limsim.seconds).toFixed(2)}x LimSim's` : '';
      return `  ${EXPORT_NAMES[e.format]} import of the same ${e.actorStates} actor-states: ${e.seconds} s, peak ${e.peakRssMiB} MiB${ratio}`;
    }),
    f.mcap
      ? `  MCAP export of a ${f.mcap.frames}-frame demo run: ${f.mcap.framesPerSecond} frames/s (${f.mcap.messages} messages); file ${(f.mcap.mcapBytes / 1e6).toFixed(2)} MB = ${f.mcap.sizeRatio}x the run in simrec's store (${(f.mcap.storeBytes / 1e6).toFixed(2)} MB; as LimSim's database ${(f.mcap.limsimBytes / 1e6).toFixed(2)} MB); with --osi ${f.mcap.osiFramesPerSecond} frames/s, ${(f.mcap.osiBytes / 1e6).toFixed(2)} MB`
      : '',
    small && large
      ? `  memory grows ${(large.peakRssMiB / small.peakRssMiB).toFixed(2)}x for ${large.captures / small.captures}x the captures`
      : '',
  ].join('\n');
}

if (process.argv[2] === 'perception') await perceptionChild(process.argv[3]!, Number(process.argv[4]));
if (process.argv[2] === 'export')
  await exportChild(process.argv[3]!, process.argv[4] as ExportFormat, Number(process.argv[5]));
if (process.argv[2] === 'import')
  await importChild(process.argv[3]!, process.argv[4] as ExportFormat, Number(process.argv[5]));
