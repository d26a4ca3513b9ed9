import { absenceAt, usualSampleInterval } from '../../src/model/presence.js';
import { endReasonInWords } from '../../src/model/run.js';
import { lastAtOrBefore } from '../../src/model/sorted-search.js';
import { BIRDVIEW_LEGEND } from '../../src/server/birdview-legend.js';
import {
  api,
  ApiError,
  type ActorInfo,
  type RoadNetwork,
  type ViewerRunDetail,
  type RunListEntry,
  type Sample,
} from './api.js';
import { CapturePanel } from './capture-panel.js';
import { ComparePanel } from './compare-panel.js';
import { CriteriaPanel } from './criteria-panel.js';
import { EventList, type RunEvent } from './event-list.js';
import { afterNextPaint, el, formatNumber, seconds } from './format.js';
import { Inspector } from './inspector.js';
import {
  KIND_COLORS,
  LIGHT_COLORS,
  LIGHT_DASHES,
  LIGHT_NAMES,
  MapView,
  OTHER_COLOR,
  type MapState,
} from './map-view.js';
import { PlaybackData } from './playback-data.js';
import { PlotPanel } from './plot-panel.js';
import { EvaluationPanel } from './radar.js';
import { StreamWindows } from './stream-windows.js';
import { SLIDER_STEPS, Timeline } from './timeline.js';

const TRAIL_MICROS = 5_000_000;
const FUTURE_MICROS = 5_000_000;
/** The zoom step of the + and - keys. */
const ZOOM_STEP = 1.25;

/** The latest sample at or before t in a time-ordered list. */
function sampleAt<T extends { t: number }>(samples: T[], t: number): T | undefined {
  return samples[lastAtOrBefore(samples, t, (s) => s.t)];
}

/** What a link to a moment of a run says besides the run (the hash's query: `#/runs/3?t=12.5&actor=car1`). */
export interface RunLink {
  /** Seconds from the first sample. */
  t?: number;
  /** A moment as the store keeps it (microseconds since the Unix epoch): what a Find row links to. */
  at?: number;
  /** Another run to compare this one with (`#/diff/A/B`): drawn over it, its divergences listed. */
  compare?: number;
  actor?: string;
}

/** One run: map, timeline with its events, inspector, plots, evaluation and captures. */
export class RunView {
  readonly root = el('section', { class: 'run-view' });
  private detail!: ViewerRunDetail;
  private data!: PlaybackData;
  /** Public for the browser tests, which read pixels at world positions. */
  map!: MapView;
  timeline!: Timeline;
  plots!: PlotPanel;
  private evaluationPanel!: EvaluationPanel;
  /** How the scenario was judged, for a run that keeps its criteria (a CARLA recording's). */
  private criteria: CriteriaPanel | null = null;
  private captures!: CapturePanel;
  private readonly events = new EventList();
  private readonly inspector = new Inspector();
  private actors = new Map<string, ActorInfo>();
  selected: string | null = null;
  private highlighted = new Set<string>();
  private lights = new Map<string, Sample[]>();
  /** The evaluation's samples around the cursor (its metrics at t), when the run has one. */
  private evaluation: StreamWindows | null = null;
  private readonly notes = el('div', { class: 'notes', 'data-testid': 'notes' });
  private readonly present = el('div', { class: 'present', 'data-testid': 'present-count' });
  private readonly legend = el('div', { class: 'legend', 'data-testid': 'legend' });
  private readonly options = {
    trails: el('input', { type: 'checkbox', 'data-testid': 'trails' }),
    future: el('input', { type: 'checkbox', 'data-testid': 'future' }),
    follow: el('input', { type: 'checkbox', 'data-testid': 'follow' }),
  };
  /** DI-drive's bird's-eye view of the moment (what `export RUN didrive` holds), shown on request. */
  private readonly birdview = el('img', {
    class: 'birdview',
    'data-testid': 'birdview',
    alt: "DI-drive's bird's-eye view",
    title:
      "DI-drive's bird's-eye view at this moment, in visualize_birdview's colours (what a didrive export holds)",
  });
  private readonly birdviewToggle = el('input', { type: 'checkbox', 'data-testid': 'birdview-toggle' });
  /** The picture with its own legend (its colours are DI-drive's, not the map's), beside the map's legend. */
  private readonly birdviewBox = el(
    'figure',
    { class: 'birdview-box', 'data-testid': 'birdview-box' },
    this.birdview,
    el(
      'figcaption',
      { class: 'birdview-legend', 'data-testid': 'birdview-legend' },
      ...BIRDVIEW_LEGEND.map(({ channel, label, rgb }) => {
        const swatch = el('span', { class: 'swatch' });
        swatch.style.background = `rgb(${rgb.join(',')})`;
        return el('span', { 'data-channel': channel }, swatch, ` ${label}`);
      }),
    ),
  );
  private birdviewTimer: ReturnType<typeof setTimeout> | undefined;
  private inspectTimer: ReturnType<typeof setTimeout> | undefined;
  private linkTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly runId: number;
  private readonly link: RunLink;
  /** The comparison with another run, when the link asks for one. */
  compare: ComparePanel | null = null;
  /** Whether the run has anything to draw on a map (a road network or poses). */
  private hasMap = true;
  /** Frames drawn, for the playback benchmark. */
  framesDrawn = 0;
  /**
   * The moment the last frame drew and when (performance.now()): the benchmarks and tests wait for a
   * moment's actors to be on the map, not for the page to have loaded.
   */
  drawn = { t: Number.NaN, at: 0 };
  /** Actors drawn in the last frame (those present at the cursor). */
  presentCount = 0;

  constructor(runId: number, link: RunLink = {}) {
    this.runId = runId;
    this.link = link;
  }

  async load(): Promise<void> {
    // The window of the moment the page opens on, asked for beside the run's detail: on a long run the
    // detail takes as long as the window, and the moment's actors are what the page is opened for.
    const early = new AbortController();
    const moment =
      this.link.at !== undefined && Number.isFinite(this.link.at)
        ? { at: this.link.at }
        : {
            seconds: this.link.t !== undefined && Number.isFinite(this.link.t) ? Math.max(0, this.link.t) : 0,
          };
    const momentWindow = api.stateWindowAt(this.runId, moment, early.signal);
    momentWindow.catch(() => {}); // a run that is not there: the detail's answer says so below
    // The road network too: the moment's actors are drawn on it, fitted to it. A run without one
    // answers 404, which the detail says beforehand.
    const road = api.roadnet(this.runId);
    road.catch(() => {}); // awaited below only when the run has a road network
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
    // The timeline spans the samples: a LimSim recording begins its run a minute before its first frame.
    const range = this.detail.timeRange ?? { begin: run.begin, end: run.end ?? run.begin };
    this.actors = new Map(this.detail.actors.map((a) => [a.id, a]));
    this.data = new PlaybackData(this.runId, this.detail.actors, this.detail.streams);
    this.timeline = new Timeline(range.begin, range.end);
    // The moment the page opens on: its window is asked for now, while the page is built and the road
    // network loads (the cursor is there before anything draws, so nothing asks for the run's begin).
    const start =
      this.link.at !== undefined && Number.isFinite(this.link.at)
        ? this.link.at
        : this.link.t !== undefined && Number.isFinite(this.link.t)
          ? range.begin + this.link.t * 1e6
          : range.begin;
    this.timeline.seek(start);
    this.data.adopt(start, momentWindow, early);
    this.data.want(start);
    const stepGuess = this.detail.streams.find((s) => s.rateHz)?.rateHz;
    if (stepGuess) this.timeline.stepMicros = Math.round(1e6 / stepGuess);
    this.plots = new PlotPanel(this.runId, range.begin, this.detail.streams);
    this.plots.onSeek = (t) => this.timeline.seek(t);
    this.evaluationPanel = new EvaluationPanel(this.detail.evaluation);
    this.criteria = CriteriaPanel.has(this.detail) ? new CriteriaPanel() : null;
    this.captures = new CapturePanel(this.detail, range.begin);

    const canvas = el('canvas', {
      class: 'map',
      'data-testid': 'map',
      title: 'drag to pan, wheel or + and - to zoom, f to fit; click an actor to inspect it',
    });
    const score = this.detail.evaluation
      ? [
          el(
            'span',
            { class: 'score-badge', title: 'overall score, higher is better' },
            `score ${formatNumber(this.detail.evaluation.score)}`,
          ),
        ]
      : [];
    const title = el(
      'div',
      { class: 'run-title' },
      el('a', { href: '#/' }, '← runs'),
      el(
        'h1',
        {},
        this.link.compare ? `Run ${run.id} compared with run ${this.link.compare}` : `Run ${run.id}`,
      ),
      el(
        'span',
        {},
        `${run.simulator.name} ${run.simulator.version ?? ''} · ${run.description} · `,
        run.endReason === null
          ? 'recording (live)'
          : el(
              'span',
              { 'data-testid': 'end-reason', title: `end reason: ${run.endReason}` },
              endReasonInWords(run.endReason),
            ),
      ),
      ...score,
    );
    const fit = el('button', { 'data-testid': 'fit', title: 'fit everything in view (f)' }, 'Fit');
    fit.addEventListener('click', () => {
      this.options.follow.checked = false;
      this.map.fitAll();
    });
    const toggles = el(
      'div',
      { class: 'toggles' },
      fit,
      el('label', {}, this.options.follow, ' follow ego'),
      el('label', {}, this.options.trails, ' trails'),
      el('label', {}, this.options.future, ' future'),
      ...(this.detail.actors.some((a) => a.kind === 'ego')
        ? [
            el(
              'label',
              { title: "DI-drive's bird's-eye view of the ego's surroundings" },
              this.birdviewToggle,
              ' birdview',
            ),
          ]
        : []),
    );
    this.birdviewBox.hidden = true;
    this.birdviewToggle.addEventListener('change', () => {
      this.birdviewBox.hidden = !this.birdviewToggle.checked;
      mapHolder.classList.toggle('with-birdview', this.birdviewToggle.checked);
      this.scheduleBirdview();
    });
    this.map = new MapView(canvas);
    this.map.onDrawn = (state) => {
      this.framesDrawn++;
      this.drawn = { t: state.t, at: performance.now() };
    };
    const mapHolder = el(
      'div',
      { class: 'map-holder' },
      canvas,
      toggles,
      this.present,
      this.legend,
      this.birdviewBox,
      this.map.tooltip,
    );
    const capturesSection = el('div', {}, el('h3', {}, 'Captures'), this.captures.root);
    // A camera-centred run (Perception: frames, no trajectories) is shown image first.
    const imageFirst =
      (this.captures.hasImages || this.captures.records > 0) &&
      !this.detail.streams.some((s) => s.name === 'state' && s.samples > 1);
    // Without a road and without a single pose there is no map to show: it stays out of the way.
    this.hasMap =
      this.detail.hasRoadNetwork || this.detail.streams.some((s) => s.name === 'state' && s.samples > 0);
    if (this.link.compare !== undefined) this.compare = new ComparePanel(this.runId, this.link.compare);
    const side = el(
      'aside',
      {},
      ...(this.compare ? [this.compare.root] : []),
      ...(imageFirst && this.hasMap ? [el('h3', {}, 'Map'), mapHolder] : []),
      el('h3', {}, 'Inspector'),
      this.inspector.root,
      this.plots.root,
      el('h3', {}, 'Evaluation'),
      this.evaluationPanel.root,
      ...(this.criteria ? [el('h3', {}, 'ScenarioRunner criteria'), this.criteria.root] : []),
      ...(imageFirst ? [] : [capturesSection]),
    );
    if (imageFirst) this.root.classList.add('image-first');
    this.root.append(
      title,
      this.notes,
      el(
        'div',
        { class: 'stage' },
        imageFirst ? el('div', { class: 'capture-main' }, capturesSection) : mapHolder,
        side,
      ),
      this.timeline.root,
      el('details', { class: 'events-panel', open: '' }, el('summary', {}, 'Events'), this.events.root),
    );

    this.map.onSelect = (id) => this.select(id);
    this.map.onMove = () => {
      if (this.map.follow === null) this.options.follow.checked = false;
    };
    this.data.onLoaded = () => this.render();
    this.timeline.onChange = () => {
      this.render();
      this.scheduleBirdview();
      this.scheduleInspect();
      this.scheduleLink();
    };
    this.timeline.onPick = (e) => this.pickEvent(e);
    this.events.onPick = (e) => this.pickEvent(e);
    this.events.onFilter = (shown) => this.timeline.mark(shown);
    for (const box of Object.values(this.options)) box.addEventListener('change', () => this.render());
    this.options.follow.addEventListener('change', () => {
      this.map.follow = this.options.follow.checked ? this.egoId() : null;
      this.render();
    });
    this.options.trails.checked = true;

    await this.loadRoad(road);
    if (this.detail.hasRoadNetwork) this.map.fitAll();
    // Selected now; the comparison, which loads after the first frame, plots it once loaded.
    if (this.link.actor && this.actors.has(this.link.actor)) this.selected = this.link.actor;
    // The picker lists the selected actor's fields first (the ego's while none is selected).
    this.plots.preferred = this.selected ?? this.egoId();
    this.timeline.seek(start);
    void this.inspect(); // fills the inspector when the scene arrives; nothing else waits for it
    this.render();
    // The panels of the whole run (lights, events, comparison, criteria, the captures' strip) are asked
    // for once the moment's actors are on screen: on an hour of traffic they are what the first frame
    // need not wait for, and asking for them took time from it. The evaluation is fetched a window at a
    // time as the cursor needs it.
    await afterNextPaint();
    this.startEvaluation();
    await Promise.all([
      this.loadLights(),
      this.loadEvents(),
      this.loadComparison(),
      this.criteria?.load(this.runId),
      this.captures.times(SLIDER_STEPS).then((times) => this.timeline.markCaptures(times)),
    ]);
    // The panels' arrival changes the map's size: its fit follows (MapView.fitted) until it is moved.
    this.fillLegend();
    this.render();
  }

  private async loadComparison(): Promise<void> {
    const compare = this.compare;
    if (!compare) return;
    compare.onPick = (t, actor) => {
      if (actor !== null) this.select(actor);
      this.timeline.seek(t);
    };
    await compare.load(this.detail, () => this.render());
    if (this.selected) void compare.showActor(this.selected); // plots when the samples arrive
    const first = compare.diff?.firstDivergence;
    if (first)
      this.timeline.markDivergence(
        first.t,
        `first divergence: ${first.actor ?? 'run'} ${first.stream} ${first.field}`,
      );
  }

  private egoId(): string | null {
    return this.detail.actors.find((a) => a.kind === 'ego')?.id ?? null;
  }

  private note(text: string): void {
    this.notes.append(el('p', {}, text));
  }

  private async loadRoad(road: Promise<RoadNetwork>): Promise<void> {
    if (!this.detail.hasRoadNetwork) {
      if (this.hasMap) this.note('This run has no road network: actors are shown on a blank map.');
      this.map.fit([-100, -100], [100, 100]);
      // Fit the actors once the first poses are drawn (now, when the moment's window came first).
      let fitted = false;
      const fitOnce = (): void => {
        if (fitted || this.presentCount === 0) return;
        fitted = true;
        this.map.fitAll();
      };
      const first = this.data.onLoaded;
      this.data.onLoaded = () => {
        first();
        fitOnce();
      };
      this.render();
      fitOnce();
      return;
    }
    this.map.setRoad(await road);
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
      // Their switches only: the state at t is the latest switch at or before it. Only `state` is
      // compared: a light that also counts down to its next switch changes at every sample.
      streams.map(async (s) =>
        this.lights.set(s.actor!, (await api.changes(this.runId, s.id, ['state'])).samples),
      ),
    );
  }

  private async loadEvents(): Promise<void> {
    const stream = this.detail.streams.find((s) => s.id === 'events');
    const samples = stream ? (await api.samples(this.runId, stream.id)).samples : [];
    this.events.set(
      samples.map((e) => ({
        t: e.t,
        kind: String(e.kind),
        actors: Array.isArray(e.actors) ? e.actors.map(String) : [],
        detail: String(e.detail ?? ''),
        ...(typeof e.duration === 'number' ? { duration: e.duration } : {}),
        ...(typeof e.x === 'number' && typeof e.y === 'number' ? { x: e.x, y: e.y } : {}),
      })),
      this.timeline.begin,
    );
  }

  private startEvaluation(): void {
    const evaluation = this.detail.evaluation;
    const stream = evaluation && this.detail.streams.find((s) => s.id === evaluation.stream);
    if (!evaluation || !stream) return;
    const actor = evaluation.actor === null ? undefined : this.actors.get(evaluation.actor);
    this.evaluation = new StreamWindows(this.runId, stream, this.timeline.begin, actor?.presence);
    this.evaluation.onLoaded = () => this.render();
  }

  private fillLegend(): void {
    const kinds = new Set(
      this.detail.streams
        .filter((s) => s.name === 'state' && s.actor !== null)
        .map((s) => this.actors.get(s.actor!)?.kind ?? 'other'),
    );
    const swatch = (color: string, round = false): HTMLElement => {
      const s = el('span', { class: round ? 'swatch round' : 'swatch' });
      s.style.background = color;
      return s;
    };
    const items = [...kinds].map((k) =>
      el('span', { 'data-kind': k }, swatch(KIND_COLORS[k] ?? OTHER_COLOR, k === 'pedestrian'), ` ${k}`),
    );
    if (this.map.hasSignals)
      items.push(
        ...LIGHT_NAMES.filter(([ch]) => ch !== 'o').map(([ch, name]) => {
          const s = swatch(LIGHT_COLORS[ch]!);
          // Drawn dashed on the map, so dashed here (style.css).
          if (LIGHT_DASHES[ch]) s.classList.add('dashed');
          return el('span', { 'data-light': ch }, s, ` ${name}`);
        }),
      );
    this.legend.replaceChildren(...items);
    this.legend.hidden = items.length === 0;
  }

  /** An event from the list or the timeline: jump to it, ring its actors, bring its place into view. */
  private pickEvent(e: RunEvent): void {
    this.highlighted = new Set(e.actors);
    if (e.x !== undefined && e.y !== undefined) {
      this.options.follow.checked = false;
      this.map.lookAt(e.x, e.y, 6);
    }
    this.timeline.seek(e.t);
  }

  /** This page's path: the run's, or the comparison's. */
  private pagePath(): string {
    return this.link.compare !== undefined
      ? `#/diff/${this.runId}/${this.link.compare}`
      : `#/runs/${this.runId}`;
  }

  private select(id: string | null): void {
    this.selected = id;
    void this.compare?.showActor(id); // plots when the samples arrive; nothing else waits
    this.plots.preferred = id ?? this.egoId();
    this.render();
    void this.inspect(); // fills the inspector when the scene arrives; nothing else waits for it
    this.scheduleLink();
  }

  private scheduleInspect(): void {
    if (this.inspectTimer !== undefined) return;
    this.inspectTimer = setTimeout(() => {
      this.inspectTimer = undefined;
      void this.inspect(); // fills the inspector when the scene arrives; nothing else waits for it
    }, 150);
  }

  /** The address keeps the run, the time and the selected actor, so a moment can be shared. */
  private scheduleLink(): void {
    clearTimeout(this.linkTimer);
    this.linkTimer = setTimeout(() => {
      const params = new URLSearchParams({ t: ((this.timeline.t - this.timeline.begin) / 1e6).toFixed(2) });
      if (this.selected) params.set('actor', this.selected);
      history.replaceState(null, '', `${location.pathname}${location.search}${this.pagePath()}?${params}`);
    }, 200);
  }

  /** Every field of the selected actor's state at the cursor, from the server (interpolated). */
  private async inspect(): Promise<void> {
    const id = this.selected;
    if (!id) {
      this.inspector.empty();
      return;
    }
    const scene = await api.scene(this.runId, Math.round(this.timeline.t));
    if (id !== this.selected) return;
    const stream = this.detail.streams.find((s) => s.actor === id && s.name === 'state');
    this.inspector.show(
      this.actors.get(id),
      id,
      scene.actors.find((a) => a.id === id),
      stream,
      this.timeline.begin,
    );
  }

  /** Keys, while the run is on screen: space plays, arrows step, + and - zoom, f fits. */
  key(e: KeyboardEvent): void {
    if (!this.timeline) return;
    const target = e.target as HTMLElement | null;
    if (
      target &&
      /^(INPUT|SELECT|TEXTAREA)$/.test(target.tagName) &&
      (target as HTMLInputElement).type !== 'range'
    )
      return;
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key === ' ') this.timeline.toggle();
    else if (e.key === 'ArrowRight')
      this.timeline.seek(this.timeline.t + this.timeline.stepMicros * (e.shiftKey ? 10 : 1));
    else if (e.key === 'ArrowLeft')
      this.timeline.seek(this.timeline.t - this.timeline.stepMicros * (e.shiftKey ? 10 : 1));
    else if (e.key === '+' || e.key === '=') this.map.zoom(ZOOM_STEP);
    else if (e.key === '-') this.map.zoom(1 / ZOOM_STEP);
    else if (e.key === 'f') {
      this.options.follow.checked = false;
      this.map.fitAll();
    } else return;
    e.preventDefault();
  }

  /** At most a few pictures a second while playing: each is drawn by the server. */
  private scheduleBirdview(): void {
    if (!this.birdviewToggle.checked || this.birdviewTimer !== undefined) return;
    this.birdviewTimer = setTimeout(() => {
      this.birdviewTimer = undefined;
      this.birdview.src = api.birdviewUrl(this.runId, Math.round(this.timeline.t));
    }, 250);
  }

  private render(): void {
    const t = this.timeline.t;
    const { poses, loaded } = this.data.posesAt(t, this.timeline.rate);
    if (!loaded) return;
    const lightStates = new Map<string, string>();
    for (const [id, samples] of this.lights) {
      const s = sampleAt(samples, t);
      if (s && typeof s.state === 'string') lightStates.set(id, s.state);
    }
    const watched = [this.egoId(), this.selected].filter((x): x is string => x !== null);
    const state: MapState = {
      t,
      poses,
      actors: this.actors,
      selected: this.selected,
      highlighted: this.highlighted,
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
    if (this.compare) {
      state.ghosts = this.compare.ghostPosesAt(t);
      state.ghostActors = this.compare.actorsB;
      this.compare.setCursor(t);
    }
    this.map.render(state); // drawn now, or at the map's first layout (frameDrawn)
    this.presentCount = poses.size;
    this.present.textContent = `${poses.size} actor${poses.size === 1 ? '' : 's'} present`;
    this.plots.setCursor(t);
    if (this.evaluation) this.showEvaluation(this.evaluation, t);
    this.captures.render(t);
  }

  /**
   * The scored actor's metrics at t; none where it is not in the scene (it has left, or is not yet
   * there), by the rules scenes keep: its last frame's values are not its values now.
   */
  private showEvaluation(windows: StreamWindows, t: number): void {
    const { sample, loaded } = windows.sampleAt(t);
    if (!loaded) return; // shown when its window arrives
    const evaluation = this.detail.evaluation!;
    const actor = evaluation.actor === null ? undefined : this.actors.get(evaluation.actor);
    const stream = this.detail.streams.find((s) => s.id === evaluation.stream);
    const absence =
      sample && stream
        ? absenceAt(actor?.presence, usualSampleInterval(stream, actor?.presence), sample.t, t)
        : null;
    if (absence === null || absence === 'not yet') {
      this.evaluationPanel.show(sample);
      return;
    }
    const left = actor?.presence?.filter((iv) => iv.to !== null && iv.to <= t).at(-1)?.to;
    this.evaluationPanel.show(
      undefined,
      `${evaluation.actor ?? 'The scored actor'} is not in the scene now${
        left !== undefined && left !== null ? ` (it left at ${seconds(left - this.timeline.begin)} s)` : ''
      }: no value now.`,
    );
  }

  /** A live run grew (its samples, or its attachments: camera images): extend the timeline and refetch what changed. */
  async liveUpdate(summary: RunListEntry): Promise<void> {
    if (!this.detail || summary.id !== this.runId) return;
    const attachmentsChanged =
      summary.attachmentsVersion !== undefined &&
      summary.attachmentsVersion !== this.detail.attachmentsVersion;
    if (summary.samples === this.detail.samples && !attachmentsChanged) return;
    const oldEnd = this.timeline.end;
    this.detail = await api.run(this.runId);
    this.actors = new Map(this.detail.actors.map((a) => [a.id, a]));
    this.data.setActors(this.detail.actors, this.detail.streams);
    const range = this.detail.timeRange;
    if (range) this.timeline.setRange(this.timeline.begin, Math.max(range.end, this.detail.run.end ?? 0));
    this.data.invalidateFrom(oldEnd);
    const images = this.captures.hasImages;
    this.captures.update(this.detail);
    if (this.captures.hasImages || images)
      void this.captures.times(SLIDER_STEPS).then((times) => this.timeline.markCaptures(times));
    this.render();
  }
}
