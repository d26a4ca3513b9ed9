/**
 * DI-drive rates: a demo run exported as a DI-drive dataset (frames derived from the ego's state,
 * command and traffic light worked out from the road network, LMDB written) and that dataset imported
 * back, in frames per second; beside them the LimSim export of the same run, a peer in the same process.
 */
import { join } from 'node:path';
import { recordDemoRun } from '../src/demo/demo-run.js';
import { importRecording } from '../src/record/import-run.js';
import { exportRecording } from '../src/replay/export-run.js';
import { openStore } from '../src/store/open-store.js';

export interface DidriveRates {
  frames: number;
  exportFramesPerSecond: number;
  importFramesPerSecond: number;
  /** The same run to LimSim's database, in the run's frames per second: the peer. */
  limsimExportFramesPerSecond: number;
}

export async function measureDidrive(scratch: string, quick: boolean): Promise<DidriveRates> {
  const store = await openStore(join(scratch, 'didrive.simrec.db'));
  try {
    const { run } = await recordDemoRun(store, { duration: quick ? 20 : 300, vehicles: quick ? 10 : 30 });
    const seconds = async (work: () => Promise<unknown>): Promise<number> => {
      const start = performance.now();
      await work();
      return (performance.now() - start) / 1000;
    };
    const out = join(scratch, 'didrive-dataset');
    let frames = 0;
    const exportSeconds = await seconds(async () => {
      frames = (await exportRecording(store, 'didrive', [run.id], out)).frames as number;
    });
    const importSeconds = await seconds(() => importRecording(store, 'didrive', out));
    const limsimSeconds = await seconds(() =>
      exportRecording(store, 'limsim', [run.id], join(scratch, 'didrive-peer.db')),
    );
    return {
      frames,
      exportFramesPerSecond: Math.round(frames / exportSeconds),
      importFramesPerSecond: Math.round(frames / importSeconds),
      limsimExportFramesPerSecond: Math.round(frames / limsimSeconds),
    };
  } finally {
    await store.close();
  }
}

export function formatDidrive(d: DidriveRates): string {
  return `DI-drive dataset of ${d.frames} frames: export ${d.exportFramesPerSecond} frames/s (${(d.exportFramesPerSecond / d.limsimExportFramesPerSecond).toFixed(2)}x LimSim's export of the same run), import ${d.importFramesPerSecond} frames/s`;
}
