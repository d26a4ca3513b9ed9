import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { api, type StreamInfo } from './api.js';
import { el } from './format.js';

const NUMERIC = new Set(['f64', 'f32', 'i32', 'i64']);

/** Plots of any numeric stream field over time, with the timeline's cursor drawn on them. */
export class PlotPanel {
  readonly root = el('div', { class: 'plots' });
  private readonly picker = el('select', { 'data-testid': 'plot-field' });
  private readonly holder = el('div', { class: 'plot-holder' });
  private plot: uPlot | null = null;
  private cursor = 0;
  onSeek: (t: number) => void = () => {};
  private readonly runId: number;
  private readonly begin: number;

  constructor(runId: number, begin: number, streams: StreamInfo[]) {
    this.runId = runId;
    this.begin = begin;
    const options = streams.flatMap((s) =>
      [...s.fields, ...s.extraFields].filter((f) => NUMERIC.has(f.type)).map((f) => `${s.id}:${f.name}`),
    );
    this.picker.append(
      el('option', { value: '' }, 'plot a field…'),
      ...options.map((o) => el('option', { value: o }, o.replace(':', ' · '))),
    );
    this.root.append(el('h3', {}, 'Plot'), this.picker, this.holder);
    this.picker.addEventListener('change', () => void this.show(this.picker.value));
  }

  async show(choice: string): Promise<void> {
    this.plot?.destroy();
    this.plot = null;
    if (!choice) return;
    const cut = choice.lastIndexOf(':');
    const stream = choice.slice(0, cut);
    const field = choice.slice(cut + 1);
    this.picker.value = choice;
    const { samples } = await api.samples(this.runId, stream);
    const xs = samples.map((s) => (s.t - this.begin) / 1e6);
    const ys = samples.map((s) => (typeof s[field] === 'number' ? (s[field] as number) : null));
    const width = Math.max(200, this.holder.clientWidth || 360);
    this.plot = new uPlot(
      {
        width,
        height: 180,
        scales: { x: { time: false } },
        series: [{ label: 's' }, { label: field, stroke: '#3498db', width: 1.5 }],
        axes: [{ stroke: '#aaa' }, { stroke: '#aaa' }],
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
      [xs, ys],
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
