import type uPlot from 'uplot';
import { api, type StreamInfo } from './api.js';
import { el, formatNumber, formatUnit } from './format.js';
import { loadPlotting, type PlotClass } from './plotting.js';

const NUMERIC = new Set(['f64', 'f32', 'i32', 'i64']);
const COLORS = ['#3498db', '#e67e22', '#2ecc71', '#e74c3c', '#9b59b6', '#f1c40f'];
/** Lines on one plot at most: beyond that nobody reads them. */
const MAX_SERIES = COLORS.length;
/** Matches the picker lists at once. */
const MAX_MATCHES = 40;

interface FieldChoice {
  /** `<stream id>:<field>` */
  key: string;
  stream: string;
  actor: string | null;
  field: string;
  unit: string | undefined;
}

interface Series extends FieldChoice {
  t: number[];
  v: (number | null)[];
}

/** Axis labels that stay apart for any range: 3e-13 and 4e-13 are not both "0". */
const axisValues = (_: uPlot, splits: number[]): string[] => splits.map((v) => formatNumber(v));

/**
 * Plots of numeric stream fields over time with the timeline's cursor on them: a searchable field
 * picker (the selected actor's fields first), several lines on one plot (one y axis per unit, the
 * unit in its label), and axes that read well for tiny values.
 */
export class PlotPanel {
  readonly root = el('div', { class: 'plots' });
  private readonly search = el('input', {
    type: 'search',
    placeholder: 'plot a field: type to search (e.g. speed)',
    'data-testid': 'plot-search',
  });
  private readonly matches = el('ul', { class: 'plot-matches', 'data-testid': 'plot-matches' });
  private readonly chips = el('div', { class: 'plot-chips' });
  private readonly holder = el('div', { class: 'plot-holder' });
  private readonly streams: StreamInfo[];
  /**
   * Every numeric field of every stream, made when first searched or added: a run of hundreds of
   * actors has thousands, and a page opening on it draws its map first.
   */
  private madeChoices: FieldChoice[] | null = null;
  private readonly series: Series[] = [];
  private plot: uPlot | null = null;
  /** uPlot, loaded by the first line added: there is nothing to draw before. */
  private plotClass: PlotClass | null = null;
  private cursor = 0;
  /** The actor whose fields come first in the picker. */
  preferred: string | null = null;
  onSeek: (t: number) => void = () => {};
  private readonly runId: number;
  private readonly begin: number;

  constructor(runId: number, begin: number, streams: StreamInfo[]) {
    this.runId = runId;
    this.begin = begin;
    this.streams = streams;
    this.root.append(el('h3', {}, 'Plot'), this.search, this.matches, this.chips, this.holder);
    this.search.addEventListener('input', () => this.listMatches());
    this.search.addEventListener('focus', () => this.listMatches());
    this.search.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') this.matches.querySelector('button')?.click();
      if (e.key === 'Escape') this.matches.replaceChildren();
    });
  }

  private get choices(): FieldChoice[] {
    this.madeChoices ??= this.streams.flatMap((s) =>
      [...s.fields, ...s.extraFields]
        .filter((f) => NUMERIC.has(f.type))
        .map((f) => ({
          key: `${s.id}:${f.name}`,
          stream: s.id,
          actor: s.actor,
          field: f.name,
          unit: 'unit' in f ? f.unit : undefined,
        })),
    );
    return this.madeChoices;
  }

  /** Choices matching the search, the preferred actor's first, then the ego's-like order of streams. */
  private ranked(text: string): FieldChoice[] {
    const words = text.toLowerCase().split(/\s+/).filter(Boolean);
    const hits = this.choices.filter(
      (c) => !this.series.some((s) => s.key === c.key) && words.every((w) => c.key.toLowerCase().includes(w)),
    );
    const rank = (c: FieldChoice): number => (this.preferred !== null && c.actor === this.preferred ? 0 : 1);
    return hits.sort((a, b) => rank(a) - rank(b));
  }

  private listMatches(): void {
    const hits = this.ranked(this.search.value);
    this.matches.replaceChildren(
      ...hits.slice(0, MAX_MATCHES).map((c) => {
        const button = el(
          'button',
          { 'data-testid': 'plot-option', 'data-key': c.key },
          `${c.stream} · ${c.field}${c.unit && c.unit !== '1' ? ` (${formatUnit(c.unit)})` : ''}`,
        );
        button.addEventListener('click', () => {
          this.matches.replaceChildren();
          this.search.value = '';
          void this.add(c.key); // the series is drawn when its samples arrive; nothing else waits
        });
        return el('li', {}, button);
      }),
      ...(hits.length > MAX_MATCHES
        ? [el('li', { class: 'hint' }, `${hits.length - MAX_MATCHES} more: type to narrow`)]
        : []),
    );
  }

  /** Adds the line of `<stream>:<field>` (the API the tests and deep links use). */
  async add(key: string): Promise<void> {
    const choice = this.choices.find((c) => c.key === key);
    if (!choice || this.series.some((s) => s.key === key) || this.series.length >= MAX_SERIES) return;
    // The field alone: a long run's state stream is many samples of many fields.
    const [plotClass, { samples }] = await Promise.all([
      loadPlotting(),
      api.samples(this.runId, choice.stream, undefined, undefined, [choice.field]),
    ]);
    this.plotClass = plotClass;
    this.series.push({
      ...choice,
      t: samples.map((s) => s.t),
      v: samples.map((s) => (typeof s[choice.field] === 'number' ? (s[choice.field] as number) : null)),
    });
    this.redraw();
  }

  remove(key: string): void {
    const i = this.series.findIndex((s) => s.key === key);
    if (i >= 0) this.series.splice(i, 1);
    this.redraw();
  }

  private redraw(): void {
    this.plot?.destroy();
    this.plot = null;
    this.chips.replaceChildren(
      ...this.series.map((s, i) => {
        const close = el('button', { title: 'remove this line', 'data-testid': 'plot-remove' }, '×');
        close.addEventListener('click', () => this.remove(s.key));
        const chip = el(
          'span',
          { class: 'chip', 'data-testid': 'plot-chip' },
          `${s.stream} · ${s.field}`,
          close,
        );
        chip.style.borderColor = COLORS[i]!;
        return chip;
      }),
    );
    if (!this.series.length || !this.plotClass) return;
    // One time axis for all lines: the union of their times, each line null where it has no sample.
    const times = [...new Set(this.series.flatMap((s) => s.t))].sort((a, b) => a - b);
    const index = new Map(times.map((t, i) => [t, i]));
    const columns = this.series.map((s) => {
      const out: (number | null)[] = new Array<number | null>(times.length).fill(null);
      s.t.forEach((t, k) => (out[index.get(t)!] = s.v[k]!));
      return out;
    });
    const units = [...new Set(this.series.map((s) => s.unit ?? ''))];
    const scales: uPlot.Scales = { x: { time: false } };
    for (const u of units)
      scales[`u:${u}`] = {
        // A flat or nearly flat line still gets a range around it, not a collapsed axis.
        range: (_u, min, max) => {
          const pad = max > min ? (max - min) * 0.05 : max !== 0 ? Math.abs(max) * 0.05 : 1;
          return [min - pad, max + pad];
        },
      };
    const axes: uPlot.Axis[] = [
      { stroke: '#aaa', label: 'time (s)', values: axisValues },
      ...units.slice(0, 2).map((u, i) => ({
        scale: `u:${u}`,
        stroke: '#aaa',
        side: i === 0 ? 3 : 1,
        size: 64,
        label: u && u !== '1' ? formatUnit(u) : '',
        values: axisValues,
        grid: { show: i === 0 },
      })),
    ];
    const width = Math.max(200, this.holder.clientWidth || 360);
    this.plot = new this.plotClass(
      {
        width,
        height: 200,
        scales,
        series: [
          { label: 't (s)', value: (_u, v) => (v === null ? '' : formatNumber(v)) },
          ...this.series.map((s, i) => ({
            label: `${s.actor ?? s.stream} ${s.field}${s.unit && s.unit !== '1' ? ` (${formatUnit(s.unit)})` : ''}`,
            stroke: COLORS[i]!,
            width: 1.5,
            scale: `u:${s.unit ?? ''}`,
            spanGaps: true,
            value: (_u: uPlot, v: number | null) => (v === null ? '' : formatNumber(v)),
          })),
        ],
        axes,
        legend: { show: true },
        hooks: {
          draw: [
            (u) => {
              const x = u.valToPos(this.cursor, 'x', true);
              const ctx = u.ctx;
              ctx.save();
              ctx.strokeStyle = '#e67e22';
              ctx.lineWidth = 2;
              ctx.beginPath();
              ctx.moveTo(x, u.bbox.top);
              ctx.lineTo(x, u.bbox.top + u.bbox.height);
              ctx.stroke();
              ctx.restore();
            },
          ],
        },
      },
      [times.map((t) => (t - this.begin) / 1e6), ...columns] as uPlot.AlignedData,
      this.holder,
    );
    this.plot.over.addEventListener('click', (e) => {
      const seconds = this.plot!.posToVal(e.offsetX, 'x');
      this.onSeek(this.begin + seconds * 1e6);
    });
    this.plot.root.dataset.testid = 'plot';
  }

  setCursor(t: number): void {
    this.cursor = (t - this.begin) / 1e6;
    this.plot?.redraw(false, false);
  }
}
