/**
 * Records deepdrive from its shared-memory capture region: each new snapshot once, the agent's state
 * and every camera, through the capture pipeline into the store (and a folder, when asked).
 */
import { access } from 'node:fs/promises';
import { describeValue, invalid, SimrecError } from '../model/errors.js';
import type { EndReason, RunInfo } from '../model/run.js';
import type { StoreBackend } from '../model/store-port.js';
import { CapturePipeline } from '../record/capture/capture-pipeline.js';
import { DEEPDRIVE_SHM_PATH, DeepDriveRegionSource } from '../record/capture/deepdrive-region.js';
import { DiskSink } from '../record/capture/disk-sink.js';
import type { CaptureSink } from '../model/capture-port.js';
import { StoreSink } from '../record/capture/store-sink.js';
import { RunRecorder } from '../record/run-recorder.js';

export interface DeepDriveRecordOptions {
  /** The region file; deepdrive's default on Linux. */
  shm?: string;
  /** Capture interval in seconds (deepdrive's CaptureInterval): 0 every snapshot, > 0 at most that often. */
  interval?: number;
  /** Also keep the snapshots in this folder (one folder per camera, the agent state beside them). */
  diskDir?: string;
  /** End after this many snapshots were taken. */
  maxSnapshots?: number;
  /** End when no new snapshot came for this long (seconds); the first snapshot is waited for as long. */
  idleSeconds?: number;
  /** Aborting ends the run (`user_request`). */
  signal?: AbortSignal;
  pollMs?: number;
  onSnapshot?: (taken: number) => void;
}

export interface DeepDriveRecordResult {
  run: RunInfo;
  /** Snapshots read from the region, and of them captured (the interval may skip some). */
  snapshots: number;
  captured: number;
  frames: number;
  diskDir?: string;
}

/**
 * The run begins with the first snapshot, so waiting for a simulator that never writes leaves no empty
 * run. It ends `completed` after `maxSnapshots` or when deepdrive says its scenario finished,
 * `user_request` when aborted, `interrupted` when the region went quiet for `idleSeconds`, and
 * `inner_error` (with every snapshot before kept, then the error thrown) when the region is malformed.
 */
export async function recordDeepDrive(
  store: StoreBackend,
  options: DeepDriveRecordOptions = {},
): Promise<DeepDriveRecordResult> {
  const path = options.shm ?? DEEPDRIVE_SHM_PATH;
  const interval = options.interval ?? 0;
  // A negative interval captures only on request, and nothing here makes requests: it would record nothing.
  if (!Number.isFinite(interval) || interval < 0)
    throw invalid(`--interval: expected 0 or a positive number of seconds, got ${describeValue(interval)}`);
  await access(path).catch(() => {
    throw invalid(
      `${path}: no deepdrive capture region there (is deepdrive running with its shared-memory capture sink?)`,
    );
  });
  const idleMs = (options.idleSeconds ?? 10) * 1000;
  const source = new DeepDriveRegionSource({ path, ...(options.pollMs ? { pollMs: options.pollMs } : {}) });
  const waitFor = () => {
    const idle = AbortSignal.timeout(idleMs);
    return options.signal ? AbortSignal.any([options.signal, idle]) : idle;
  };
  const whyStopped = (): EndReason => (options.signal?.aborted ? 'user_request' : 'interrupted');

  try {
    let snapshot = await source.next(waitFor());
    if (!snapshot)
      throw invalid(
        `${path}: ${options.signal?.aborted ? 'stopped before' : `no snapshot in ${idleMs / 1000} s, so`} nothing was recorded (is deepdrive capturing?)`,
      );
    const recorder = await RunRecorder.begin(store, {
      simulator: { name: 'deepdrive' },
      begin: snapshot.t,
      description: `deepdrive capture region ${path}`,
    });
    const disk = options.diskDir ? new DiskSink(options.diskDir) : null;
    const sinks: CaptureSink[] = [new StoreSink(recorder), ...(disk ? [disk] : [])];
    const pipeline = new CapturePipeline({ sinks, interval });
    let taken = 0;
    let reason: EndReason = 'completed';
    try {
      for (;;) {
        await pipeline.offer(snapshot);
        options.onSnapshot?.(++taken);
        if (snapshot.agent.scenario_finished === true) break;
        if (options.maxSnapshots !== undefined && taken >= options.maxSnapshots) break;
        const next = await source.next(waitFor());
        if (!next) {
          reason = whyStopped();
          break;
        }
        snapshot = next;
      }
    } catch (error) {
      // What was taken before stays recorded; the run says it ended on an error. The error thrown next
      // is the one to report, not a failure to close or end after it.
      await pipeline.close().catch(() => {});
      await recorder.end('inner_error').catch(() => {});
      throw error instanceof SimrecError ? error : invalid(`${path}: ${(error as Error).message}`);
    }
    await pipeline.close();
    const run = await recorder.end(reason);
    return {
      run,
      snapshots: taken,
      captured: pipeline.counts.captured,
      frames: pipeline.counts.frames,
      ...(options.diskDir ? { diskDir: options.diskDir } : {}),
    };
  } finally {
    await source.close();
  }
}
