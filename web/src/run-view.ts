import { lastAtOrBefore } from '../../src/model/sorted-search.js';
import {
  api,
  ApiError,
  type ActorInfo,
  type AttachmentInfo,
  type RunDetail,
  type RunListEntry,
  type Sample,
} from './api.js';
import { el, formatValue, seconds } from './format.js';
import { MapView, type MapState } from './map-view.js';
import { PlaybackData } from './playback-data.js';
import { PlotPanel } from './plot-panel.js';
import { Radar, RADAR_AXES } from './radar.js';
import { Timeline } from './timeline.js';

const TRAIL_MICROS = 5_000_000;
const FUTURE_MICROS = 5_000_000;

/** The latest sample at or before t in a time-ordered list. */
function sampleAt<T extends { t: number }>(samples: T[], t: number): T | undefined {
  return samples[lastAtOrBefore(samples, t, (s) => s.t)];
}

/** One run: map, timeline, inspector, plots, captures and the evaluation radar. */
export class RunView {
  readonly root = el('section', { class: 'run-view' });
  private detail!: RunDetail;
  private data!: PlaybackData;
  /** Public for the browser tests, which read pixels at world positions. */
  map!: MapView;
  private timeline!: Timeline;
  private plots!: PlotPanel;
  private readonly radar = new Radar();
  private actors = new Map<string, ActorInfo>();
  private selected: string | null = null;
  private lights = new Map<string, Sample[]>();
  private evaluation: Sample[] = [];
  private captures: AttachmentInfo[] = [];
  private readonly inspector = el('div', { class: 'inspector', 'data-testid': 'inspector' });
  private readonly capturePanel = el('div', { class: 'captures', 'data-testid': 'captures' });
  private readonly radarPanel = el('div', { class: 'radar-panel' });
  private readonly notes = el('div', { class: 'notes', 'data-testid': 'notes' });
  private readonly options = {
    trails: el('input', { type: 'checkbox', 'data-testid': 'trails' }),
    future: el('input', { type: 'checkbox', 'data-testid': 'future' }),
    follow: el('input', { type: 'checkbox', 'data-testid': 'follow' }),
  };
  private inspectTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly runId: number;
  /** Frames drawn, for the playback benchmark. */
  framesDrawn = 0;

  constructor(runId: number) {
    this.runId = runId;
  }

  async load(): Promise<void> {
    try {
      this.detail = await api.run(this.runId);
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) {
        this.root.append(
          el(
            'div',
            { class: 'not-found', 'data-testid': 'not-found' },
            el('h1', {}, `Run ${this.runId} not found`),
            el('p', {}, (error as Error).message),
            el('a', { href: '#/' }, '← back to the runs'),
          ),
        );
        return;
      }
      throw error;
    }
    const { run } = this.detail;
    const range = this.detail.timeRange ?? { begin: run.begin, end: run.end ?? run.begin };
    this.actors = new Map(this.detail.actors.map((a) => [a.id, a]));
    this.data = new PlaybackData(this.runId, run.begin);
    this.timeline = new Timeline(run.begin, Math.max(range.end, run.end ?? 0));
    const stepGuess = this.detail.streams.find((s) => s.rateHz)?.rateHz;
    if (stepGuess) this.timeline.stepMicros = Math.round(1e6 / stepGuess);
    this.plots = new PlotPanel(this.runId, run.begin, this.detail.streams);
    this.plots.onSeek = (t) => this.timeline.seek(t);

    const canvas = el('canvas', { class: 'map', 'data-testid': 'map' });
    const title = el(
      'div',
      { class: 'run-title' },
      el('a', { href: '#/' }, '← runs'),
      el('h1', {}, `Run ${run.id}`),
      el(
        'span',
        {},
        `${run.simulator.name} ${run.simulator.version ?? ''} · ${run.description} · ${run.endReason ?? 'recording (live)'}`,
      ),
    );
    const toggles = el(
      'div',
      { class: 'toggles' },
      el('label', {}, this.options.follow, ' follow ego'),
      el('label', {}, this.options.trails, ' trails'),
      el('label', {}, this.options.future, ' future'),
    );
    const side = el(
      'aside',
      {},
      el('h3', {}, 'Inspector'),
      this.inspector,
      this.plots.root,
      el('h3', {}, 'Evaluation'),
      this.radarPanel,
      el('h3', {}, 'Captures'),
      this.capturePanel,
    );
    this.root.append(
      title,
      this.notes,
      el('div', { class: 'stage' }, el('div', { class: 'map-holder' }, canvas, toggles), side),
      this.timeline.root,
    );

    this.map = new MapView(canvas);
    this.map.onSelect = (id) => this.select(id);
    this.data.onLoaded = () => this.render();
    this.timeline.onChange = () => {
      this.render();
      this.scheduleInspect();
    };
    for (const box of Object.values(this.options)) box.addEventListener('change', () => this.render());
    this.options.follow.addEventListener(
      'change',
      () => (this.map.follow = this.options.follow.checked ? this.egoId() : null),
    );
    this.options.follow.checked = true;
    this.map.follow = this.egoId();
    this.options.trails.checked = true;

    await Promise.all([this.loadRoad(), this.loadLights(), this.loadEvaluation()]);
    this.loadCaptures();
    this.inspect();
    this.render();
  }

  private egoId(): string | null {
    return this.detail.actors.find((a) => a.kind === 'ego')?.id ?? null;
  }

  private note(text: string): void {
    this.notes.append(el('p', {}, text));
  }

  private async loadRoad(): Promise<void> {
    if (!this.detail.hasRoadNetwork) {
      this.note('This run has no road network: actors are shown on a blank map.');
      this.map.fit([-100, -100], [100, 100]);
      return;
    }
    this.map.setRoad(await api.roadnet(this.runId));
  }

  private async loadLights(): Promise<void> {
    const lightActors = new Set(
      this.detail.actors.filter((a) => a.kind === 'traffic_light').map((a) => a.id),
    );
    const streams = this.detail.streams.filter(
      (s) =>
        s.actor !== null &&
        lightActors.has(s.actor) &&
        s.fields.some((f) => f.name === 'state' && f.type === 'string'),
    );
    await Promise.all(
      streams.map(async (s) => this.lights.set(s.actor!, (await api.samples(this.runId, s.id)).samples)),
    );
  }

  private async loadEvaluation(): Promise<void> {
    const events = this.detail.streams.find((s) => s.id === 'events');
    if (events) {
      const { samples } = await api.samples(this.runId, events.id);
      this.timeline.mark(
        samples.map((e) => ({
          t: e.t,
          kind: String(e.kind),
          label: `${String(e.kind)} ${(e.actors as string[]).join(', ')}: ${String(e.detail)}`,
        })),
      );
    }
    const stream = this.detail.streams.find((s) => s.name === 'evaluation');
    if (!stream) {
      this.radarPanel.append(el('p', { class: 'empty' }, 'No evaluation for this run yet.'));
      return;
    }
    this.evaluation = (await api.samples(this.runId, stream.id)).samples;
    this.radarPanel.append(this.radar.canvas);
  }

  private loadCaptures(): void {
    this.captures = this.detail.attachments
      .filter((a) => a.mediaType.startsWith('image/') && a.t !== undefined)
      .sort((a, b) => a.t! - b.t!);
    if (this.captures.length === 0)
      this.capturePanel.append(el('p', { class: 'empty' }, 'No captures in this run.'));
  }

  private select(id: string | null): void {
    this.selected = id;
    this.render();
    this.inspect();
  }

  private scheduleInspect(): void {
    if (this.inspectTimer !== undefined) return;
    this.inspectTimer = setTimeout(() => {
      this.inspectTimer = undefined;
      this.inspect();
    }, 150);
  }

  /** Every field of the selected actor's state at the cursor, from the server (interpolated). */
  private async inspect(): Promise<void> {
    const id = this.selected;
    if (!id) {
      this.inspector.replaceChildren(el('p', { class: 'empty' }, 'Click an actor on the map to inspect it.'));
      return;
    }
    const scene = await api.scene(this.runId, Math.round(this.timeline.t));
    if (id !== this.selected) return;
    const state = scene.actors.find((a) => a.id === id);
    const actor = this.actors.get(id);
    const rows: [string, unknown][] = [
      ['id', id],
      ['kind', actor?.kind],
      ...(actor?.extents ? ([['extents', actor.extents]] as [string, unknown][]) : []),
      ...Object.entries(actor?.attributes ?? {}),
    ];
    if (state) {
      for (const [k, v] of Object.entries(state))
        if (k !== 'id' && k !== 'kind')
          rows.push([
            k === 't' ? 't (s)' : k,
            k === 't' ? seconds((v as number) - this.detail.run.begin) : v,
          ]);
    } else rows.push(['state', 'not in the scene at this time']);
    this.inspector.replaceChildren(
      el('table', {}, ...rows.map(([k, v]) => el('tr', {}, el('th', {}, k), el('td', {}, formatValue(v))))),
    );
  }

  private render(): void {
    const t = this.timeline.t;
    const { poses, loaded } = this.data.posesAt(t);
    if (!loaded) return;
    const lightStates = new Map<string, string>();
    for (const [id, samples] of this.lights) {
      const s = sampleAt(samples, t);
      if (s && typeof s.state === 'string') lightStates.set(id, s.state);
    }
    const watched = [this.egoId(), this.selected].filter((x): x is string => x !== null);
    const state: MapState = {
      poses,
      actors: this.actors,
      selected: this.selected,
      lightStates,
      trails: new Map(
        this.options.trails.checked ? watched.map((id) => [id, this.data.path(id, t - TRAIL_MICROS, t)]) : [],
      ),
      futures: new Map(
        this.options.future.checked
          ? watched.map((id) => [id, this.data.path(id, t, t + FUTURE_MICROS)])
          : [],
      ),
    };
    this.map.render(state);
    this.framesDrawn++;
    this.plots.setCursor(t);
    if (this.evaluation.length) {
      const e = sampleAt(this.evaluation, t);
      if (e)
        this.radar.draw(Object.fromEntries(RADAR_AXES.map((a) => [a, (e[`${a}Score`] ?? e[a]) as number])));
    }
    this.renderCapture(t);
  }

  private shownCapture: string | null = null;
  private renderCapture(t: number): void {
    const capture = sampleAt(this.captures as (AttachmentInfo & { t: number })[], t);
    if (!capture || capture.name === this.shownCapture) return;
    this.shownCapture = capture.name;
    const img = el('img', { src: api.attachmentUrl(this.runId, capture.name), alt: capture.name });
    const holder = el('div', { class: 'capture' }, img);
    const boxes = (capture.metadata?.boxes ?? []) as {
      x: number;
      y: number;
      width: number;
      height: number;
      label?: string;
    }[];
    img.addEventListener('load', () => {
      const sx = img.clientWidth / img.naturalWidth;
      for (const b of boxes) {
        const box = el('div', { class: 'box2d' }, b.label ?? '');
        // Through the style object: the server's CSP refuses style attributes.
        Object.assign(box.style, {
          left: `${b.x * sx}px`,
          top: `${b.y * sx}px`,
          width: `${b.width * sx}px`,
          height: `${b.height * sx}px`,
        });
        holder.append(box);
      }
    });
    this.capturePanel.replaceChildren(holder, el('p', {}, capture.name));
  }

  /** A live run grew: extend the timeline and refetch what changed. */
  async liveUpdate(summary: RunListEntry): Promise<void> {
    if (!this.detail || summary.id !== this.runId || summary.samples === this.detail.samples) return;
    const oldEnd = this.timeline.end;
    this.detail = await api.run(this.runId);
    const range = this.detail.timeRange;
    if (range) this.timeline.setRange(this.detail.run.begin, Math.max(range.end, this.detail.run.end ?? 0));
    this.data.invalidateFrom(oldEnd);
    this.render();
  }
}
