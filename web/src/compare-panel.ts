import type uPlot from 'uplot';
import { api, type ActorInfo, type RunDetail, type RunDiff } from './api.js';
import { el, formatNumber, formatValue, seconds } from './format.js';
import { GHOST_COLOR } from './map-view.js';
import { PlaybackData, type Pose } from './playback-data.js';
import { loadPlotting } from './plotting.js';

/**
 * The comparison of run A (on screen) with run B (`#/diff/A/B`): GET /api/diff's divergences listed
 * (a click moves the time and selects the actor), run B's actors drawn over A's as outlines at the
 * same time from each run's start, and a field of the selected actor plotted for both runs.
 */

const COLOR_A = '#5dade2';
/** Run B's line, in the colour of its outlines on the map. */
const COLOR_B = GHOST_COLOR;

export class ComparePanel {
  readonly root = el('section', { class: 'compare', 'data-testid': 'compare' });
  diff: RunDiff | null = null;
  /** A divergence picked: the view seeks and selects. */
  onPick: (t: number, actor: string | null) => void = () => {};
  private readonly runA: number;
  private readonly runB: number;
  private beginA = 0;
  private beginB = 0;
  private dataB: PlaybackData | null = null;
  actorsB = new Map<string, ActorInfo>();
  private readonly list = el('div', { class: 'divergences', 'data-testid': 'divergences' });
  private readonly summary = el('p', { class: 'compare-summary', 'data-testid': 'compare-summary' });
  private readonly fieldPicker = el('select', { 'data-testid': 'compare-field' });
  private readonly plotHolder = el('div', { class: 'compare-plot', 'data-testid': 'compare-plot' });
  private plot: uPlot | null = null;
  private actor: string | null = null;
  private cursor = 0;
  /** Fields plotted for both runs, by actor: the series last drawn (for the tests). */
  plotted: { actor: string; field: string; a: number; b: number } | null = null;

  constructor(runA: number, runB: number) {
    this.runA = runA;
    this.runB = runB;
    // The plot is drawn when the samples arrive (none where a request fails); nothing else waits.
    this.fieldPicker.addEventListener('change', () => void this.drawField());
  }

  /** Loads B's run and the comparison; `a` is run A's detail, already loaded by the view. */
  async load(a: RunDetail, onLoaded: () => void): Promise<void> {
    const [b, diff] = await Promise.all([api.run(this.runB), api.diff(this.runA, this.runB)]);
    this.diff = diff;
    this.beginA = a.run.begin;
    this.beginB = b.run.begin;
    this.actorsB = new Map(b.actors.map((x) => [x.id, x]));
    this.dataB = new PlaybackData(this.runB, b.actors, b.streams);
    this.dataB.onLoaded = onLoaded;
    const first = diff.firstDivergence;
    this.summary.textContent = diff.same
      ? `Runs ${this.runA} and ${this.runB} are the same (${diff.streams.compared} streams compared, samples matched by time from each run's start).`
      : `Runs ${this.runA} and ${this.runB} differ${first ? `: first at ${seconds(first.t - this.beginA)} s, ${first.actor ?? 'the run'} ${first.stream} ${first.field} (${formatValue(first.a)} vs ${formatValue(first.b)})` : ''}. ` +
        `${diff.actors.onlyA.length + diff.actors.onlyB.length} actors in one run only, ${diff.actors.presence.length} present otherwise, ` +
        `${diff.events.onlyA.length + diff.events.onlyB.length} events in one run only.`;
    const rows = diff.divergences.map((d) => {
      const row = el(
        'button',
        {
          class: 'divergence',
          'data-testid': 'divergence',
          'data-t': String(d.t),
          'data-actor': d.actor ?? '',
        },
        el('span', { class: 'at' }, `${seconds(d.t - this.beginA)} s`),
        el('span', {}, d.actor ?? 'run'),
        el('span', {}, `${d.stream.split('/').pop()}.${d.field}`),
        el('span', { class: 'values' }, `${formatValue(d.a)} → ${formatValue(d.b)}`),
        el('span', { class: 'count' }, d.count > 1 ? `×${d.count}` : ''),
      );
      row.addEventListener('click', () => this.onPick(d.t, d.actor));
      return row;
    });
    const more =
      diff.divergences.length > 0
        ? []
        : [
            el(
              'p',
              { class: 'hint' },
              diff.same ? 'No divergence.' : 'No field differs where both runs have samples.',
            ),
          ];
    this.list.replaceChildren(...rows, ...more);
    const legend = el(
      'p',
      { class: 'compare-legend' },
      el('span', { class: 'swatch a' }, ''),
      ` run ${this.runA} (filled) `,
      el('span', { class: 'swatch b' }, ''),
      ` run ${this.runB} (outlines)`,
    );
    this.root.replaceChildren(
      el('h3', {}, `Compared with run ${this.runB}`),
      this.summary,
      legend,
      el('div', { class: 'compare-field-row' }, 'plot ', this.fieldPicker),
      this.plotHolder,
      el('h3', {}, 'Divergences'),
      this.list,
    );
  }

  /** Run B's poses at run A's time t (the same time from each run's start). */
  ghostPosesAt(t: number): Map<string, Pose> {
    if (!this.dataB) return new Map();
    return this.dataB.posesAt(t - this.beginA + this.beginB).poses;
  }

  /** The selected actor: its fields that differ (the first divergence's first) to plot for both runs. */
  async showActor(actor: string | null): Promise<void> {
    if (actor === this.actor || !this.diff) return;
    this.actor = actor;
    const fields = new Set<string>();
    for (const d of this.diff.divergences)
      if (d.actor === actor && d.stream === `${actor}/state` && d.field !== 't') fields.add(d.field);
    for (const f of ['x', 'y', 'speed']) fields.add(f);
    this.fieldPicker.replaceChildren(...[...fields].map((f) => el('option', { value: f }, f)));
    await this.drawField();
  }

  setCursor(t: number): void {
    this.cursor = (t - this.beginA) / 1e6;
    this.plot?.redraw(false);
  }

  private async drawField(): Promise<void> {
    const actor = this.actor;
    const field = this.fieldPicker.value;
    this.plot?.destroy();
    this.plot = null;
    this.plotted = null;
    if (!actor || !field) return;
    const stream = `${actor}/state`;
    const [plotClass, a, b] = await Promise.all([
      loadPlotting(),
      api.samples(this.runA, stream, undefined, undefined, [field]).catch(() => ({ samples: [] })),
      api.samples(this.runB, stream, undefined, undefined, [field]).catch(() => ({ samples: [] })),
    ]);
    if (actor !== this.actor || field !== this.fieldPicker.value) return;
    // One time axis, from each run's start; each line null where its run has no sample.
    const rows = new Map<number, [number | null, number | null]>();
    const put = (t: number, side: 0 | 1, v: unknown): void => {
      const row = rows.get(t) ?? [null, null];
      row[side] = typeof v === 'number' ? v : null;
      rows.set(t, row);
    };
    for (const s of a.samples) put(s.t - this.beginA, 0, s[field]);
    for (const s of b.samples) put(s.t - this.beginB, 1, s[field]);
    const times = [...rows.keys()].sort((x, y) => x - y);
    this.plotted = { actor, field, a: a.samples.length, b: b.samples.length };
    const values = (v: number | null): string => (v === null ? '' : formatNumber(v));
    this.plot = new plotClass(
      {
        width: Math.max(200, this.plotHolder.clientWidth || 360),
        height: 160,
        scales: { x: { time: false } },
        series: [
          { label: 't (s)', value: (_u, v) => values(v) },
          {
            label: `run ${this.runA} ${field}`,
            stroke: COLOR_A,
            width: 1.5,
            spanGaps: true,
            value: (_u, v) => values(v),
          },
          {
            label: `run ${this.runB} ${field}`,
            stroke: COLOR_B,
            width: 1.5,
            dash: [6, 4],
            spanGaps: true,
            value: (_u, v) => values(v),
          },
        ],
        axes: [
          { stroke: '#aaa', label: 'time from start (s)' },
          { stroke: '#aaa', size: 56 },
        ],
        // The panel's own legend names the runs and their colours.
        legend: { show: false },
        hooks: {
          draw: [
            (u) => {
              const x = u.valToPos(this.cursor, 'x', true);
              u.ctx.strokeStyle = '#f1c40f';
              u.ctx.beginPath();
              u.ctx.moveTo(x, u.bbox.top);
              u.ctx.lineTo(x, u.bbox.top + u.bbox.height);
              u.ctx.stroke();
            },
          ],
        },
      },
      [times.map((t) => t / 1e6), times.map((t) => rows.get(t)![0]), times.map((t) => rows.get(t)![1])],
      this.plotHolder,
    );
  }
}
