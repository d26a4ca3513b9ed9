import { lastAtOrBefore } from '../../src/model/sorted-search.js';
import { api, type ActorInfo, type AttachmentInfo, type ViewerRunDetail } from './api.js';
import { el, seconds } from './format.js';

interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
  label?: string;
}

type Capture = AttachmentInfo & { t: number };

/** A window of a sensor's images asked at the cursor: the one on screen there and a minute's after it. */
const WINDOW_US = 60_000_000;

/**
 * Camera frames at the cursor, with their 2D boxes clipped to the image, and the sensor named. A run
 * whose capture records name image files the import did not find says how many are missing, rather
 * than that it has no captures. The images come a window at a time (a camera's hour is a hundred
 * thousand of them): the one at the cursor is in the window kept, or the next window is asked for.
 */
export class CapturePanel {
  readonly root = el('div', { class: 'captures', 'data-testid': 'captures' });
  private readonly status = el('p', { class: 'capture-status', 'data-testid': 'capture-status' });
  private readonly frame = el('div', { class: 'capture-frame' });
  private readonly sensorPicker = el('select', { 'data-testid': 'capture-sensor' });
  private count = 0;
  private readonly sensors = new Map<string, ActorInfo>();
  private shown: string | null = null;
  private readonly runId: number;
  private readonly begin: number;
  /** The window kept: a sensor's images over [from, to], and the one before `from`. */
  private window: { sensor: string; from: number; to: number; captures: Capture[] } | null = null;
  private asking: Promise<void> | null = null;
  /** Capture records in the run's `captures` streams (one per frame a sensor took). */
  records = 0;

  constructor(detail: ViewerRunDetail, begin: number) {
    this.runId = detail.run.id;
    this.begin = begin;
    this.sensorPicker.addEventListener('change', () => {
      this.shown = null;
      this.render(this.lastT);
    });
    this.root.append(this.sensorPicker, this.frame, this.status);
    this.describe(detail);
  }

  /**
   * A live run grew: its sensors, counts and images as the detail has them now. The window kept may
   * have been asked before its last images were taken: the next render asks again.
   */
  update(detail: ViewerRunDetail): void {
    this.describe(detail);
    this.window = null;
    this.render(this.lastT);
  }

  private describe(detail: ViewerRunDetail): void {
    this.count = detail.captures.reduce((n, c) => n + c.count, 0);
    this.records = detail.streams.filter((s) => s.name === 'captures').reduce((n, s) => n + s.samples, 0);
    this.sensors.clear();
    for (const a of detail.actors) if (a.kind === 'sensor') this.sensors.set(a.id, a);
    const sensorIds = detail.captures.map((c) => c.sensor);
    // The sensor picked stays picked as others appear.
    const picked = this.sensorPicker.value;
    this.sensorPicker.replaceChildren(
      ...sensorIds.map((id) => el('option', { value: id }, this.sensorName(id))),
    );
    if (sensorIds.includes(picked)) this.sensorPicker.value = picked;
    this.sensorPicker.hidden = sensorIds.length < 2;
    const missing = Math.max(0, this.records - this.count);
    this.status.textContent =
      this.records === 0 && this.count === 0
        ? 'No captures in this run.'
        : missing > 0
          ? `${this.records} capture records; ${missing} of their image files are missing (not found at import), ${this.count} shown.`
          : `${this.count} capture${this.count === 1 ? '' : 's'}.`;
  }

  /** Capture times for the timeline's strip: the first in each of `buckets` parts of the run. */
  async times(buckets: number): Promise<number[]> {
    return this.count ? (await api.captureTimes(this.runId, buckets)).times : [];
  }

  get hasImages(): boolean {
    return this.count > 0;
  }

  private sensorName(id: string): string {
    const actor = this.sensors.get(id);
    // Perception keeps the sensor's own description ("The main camera") in its attributes.
    const perception = actor?.attributes.perception as { description?: unknown } | undefined;
    const description =
      typeof perception?.description === 'string' && perception.description
        ? perception.description
        : actor?.sourceClass !== id
          ? actor?.sourceClass
          : undefined;
    return description ? `sensor ${id} (${description})` : `sensor ${id}`;
  }

  private lastT = 0;
  render(t: number): void {
    this.lastT = t;
    if (!this.count) return;
    const sensor = this.sensorPicker.value;
    const window = this.window;
    if (!window || window.sensor !== sensor || t < window.from || t > window.to) {
      // The image on screen stays until the window holding t is in.
      this.asking ??= this.ask(sensor, t).finally(() => {
        this.asking = null;
        this.render(this.lastT);
      });
      return;
    }
    const own = window.captures;
    const capture = own[lastAtOrBefore(own, t, (c) => c.t)];
    if (!capture) {
      if (this.shown !== null) this.frame.replaceChildren();
      this.shown = null;
      return;
    }
    if (capture.name === this.shown) return;
    this.shown = capture.name;
    const img = el('img', { src: api.attachmentUrl(this.runId, capture.name), alt: capture.name });
    const holder = el('div', { class: 'capture', 'data-testid': 'capture' }, img);
    const boxes = (capture.metadata?.boxes ?? []) as unknown as Box[];
    img.addEventListener('load', () => {
      const sx = img.clientWidth / img.naturalWidth;
      const sy = img.clientHeight / img.naturalHeight;
      for (const b of boxes) {
        // Clipped to the image: a box that reaches past its edge ends at it, its label inside.
        const x0 = Math.max(0, b.x);
        const y0 = Math.max(0, b.y);
        const x1 = Math.min(img.naturalWidth, b.x + b.width);
        const y1 = Math.min(img.naturalHeight, b.y + b.height);
        if (x1 <= x0 || y1 <= y0) continue;
        const box = el('div', { class: 'box2d', 'data-testid': 'box2d' }, b.label ?? '');
        // Through the style object: the server's CSP refuses style attributes.
        Object.assign(box.style, {
          left: `${x0 * sx}px`,
          top: `${y0 * sy}px`,
          width: `${(x1 - x0) * sx}px`,
          height: `${(y1 - y0) * sy}px`,
        });
        holder.append(box);
      }
    });
    this.frame.replaceChildren(
      holder,
      el(
        'p',
        { class: 'capture-caption' },
        `${this.sensorName(String(capture.metadata?.sensor ?? '?'))} · ${seconds(capture.t - this.begin)} s · ${capture.name}`,
      ),
    );
  }

  private async ask(sensor: string, t: number): Promise<void> {
    const to = t + WINDOW_US;
    let captures: Capture[] = [];
    let end = to;
    try {
      const answer = await api.captures(this.runId, sensor, t, to);
      captures = answer.captures as Capture[];
      // A window cut short (a camera faster than 2,000 images a minute) ends before its last image.
      if (answer.more) end = Math.max(t, captures.at(-1)!.t - 1);
    } catch {
      // Nothing shown over this window; it is asked again once the cursor leaves it.
    }
    this.window = { sensor, from: t, to: end, captures };
  }
}
