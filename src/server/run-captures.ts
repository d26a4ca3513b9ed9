import type { AttachmentInfo } from '../model/attachment.js';
import type { StoreBackend } from '../model/store-port.js';
import { lastAtOrBefore } from '../model/sorted-search.js';
import type { CaptureSummary } from './wire-types.js';

/** A camera image of a run: an image attachment with a time that is not a label file. */
export type Capture = AttachmentInfo & { t: number };

export const isCapture = (a: AttachmentInfo): a is Capture =>
  a.mediaType.startsWith('image/') && a.t !== undefined && !a.metadata?.annotation;

const sensorOf = (c: Capture): string => String(c.metadata?.sensor ?? '');

/**
 * A run's camera images in time order, for the viewer's windows: a camera at 30 Hz takes 108,000 an
 * hour, which the run's detail listed one by one (megabytes the page read before its first frame).
 */
export class RunCaptures {
  private readonly all: Capture[];
  private readonly bySensor = new Map<string, Capture[]>();
  /** The run's other attachments (its road network, label definitions, results files...), by name. */
  readonly others: AttachmentInfo[];

  constructor(attachments: readonly AttachmentInfo[]) {
    this.others = attachments.filter((a) => !isCapture(a));
    this.all = attachments.filter(isCapture).sort((a, b) => a.t - b.t || (a.name < b.name ? -1 : 1));
    for (const c of this.all) {
      const list = this.bySensor.get(sensorOf(c));
      if (list) list.push(c);
      else this.bySensor.set(sensorOf(c), [c]);
    }
  }

  /** Each sensor's images, in the order the sensors first took one. */
  summary(): CaptureSummary[] {
    return [...this.bySensor].map(([sensor, list]) => ({ sensor, count: list.length }));
  }

  /**
   * The images of `sensor` (every sensor's when undefined) from `from` to `to`, and the last one before
   * `from` (the image on screen at `from`); at most `limit`, `more` saying whether some were left out.
   */
  window(
    sensor: string | undefined,
    from: number,
    to: number,
    limit: number,
  ): { captures: Capture[]; more: boolean } {
    const list = sensor === undefined ? this.all : (this.bySensor.get(sensor) ?? []);
    const byTime = (c: Capture): number => c.t;
    const first = Math.max(0, lastAtOrBefore(list, from, byTime));
    const end = lastAtOrBefore(list, to, byTime) + 1;
    return { captures: list.slice(first, Math.min(end, first + limit)), more: end - first > limit };
  }

  /**
   * The first image's time in each of `buckets` equal parts of [begin, end] that hold any (`end`: the
   * last image's time while the run has none).
   */
  firstTimes(begin: number, end: number | null, buckets: number): number[] {
    const span = Math.max((end ?? this.all.at(-1)?.t ?? begin) - begin, 1);
    const times: number[] = [];
    let last = -1;
    for (const c of this.all) {
      // Multiplied before divided: t at a part's start falls in that part, not the one before.
      const bucket = Math.min(buckets - 1, Math.floor(((c.t - begin) * buckets) / span));
      if (bucket !== last) times.push(c.t);
      last = bucket;
    }
    return times;
  }
}

/**
 * Runs' captures kept for the runs being viewed, read again when a run's attachments change (by this
 * process or another: a road network attached by `simrec roadnet --attach`, a camera's images as a
 * live run records them): a camera's hour of attachments takes SQLite and JSON a few hundred
 * milliseconds to list, which every page's detail and every window would otherwise pay.
 */
export class CaptureIndexes {
  private readonly kept = new Map<number, { version: string | undefined; captures: RunCaptures }>();

  private readonly store: StoreBackend;
  private readonly runs: number;

  constructor(store: StoreBackend, runs = 4) {
    this.store = store;
    this.runs = runs;
  }

  async of(run: number): Promise<RunCaptures> {
    const version = await this.store.attachmentsVersion(run);
    const hit = this.kept.get(run);
    this.kept.delete(run);
    const captures =
      hit && hit.version === version && version !== undefined
        ? hit.captures
        : new RunCaptures(await this.store.listAttachments(run));
    this.kept.set(run, { version, captures });
    // The least recently asked goes first (a Map keeps the order of insertion).
    while (this.kept.size > this.runs) this.kept.delete(this.kept.keys().next().value!);
    return captures;
  }
}
