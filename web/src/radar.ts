import {
  LIMSIM_METRICS,
  LIMSIM_METRIC_UNITS,
  limsimScore,
  type LimsimMetric,
} from '../../src/model/evaluation-scores.js';
import type { RunEvaluation, Sample } from './api.js';
import { afterNextPaint, el, formatNumber, formatQuantity, formatUnit } from './format.js';

/** LimSim's five evaluation axes, in its order. */
export const RADAR_AXES = LIMSIM_METRICS;

const SIZE = { width: 320, height: 230 };

/**
 * LimSim's radar: five axes, four rings, each metric's display score in [1, 4] (LimSim's own
 * normalisation: 1 at the centre is best, 4 at the rim worst), with each score written at its axis.
 */
export class Radar {
  readonly canvas = el('canvas', {
    width: String(SIZE.width),
    height: String(SIZE.height),
    'data-testid': 'radar',
  });

  draw(values: Partial<Record<LimsimMetric, number>>): void {
    const ctx = this.canvas.getContext('2d')!;
    const cx = SIZE.width / 2;
    const cy = 118;
    const ring = 20;
    ctx.clearRect(0, 0, SIZE.width, SIZE.height);
    ctx.strokeStyle = '#555';
    ctx.font = '11px system-ui, sans-serif';
    ctx.textAlign = 'center';
    ctx.textBaseline = 'middle';
    const angle = (i: number): number => -Math.PI / 2 + (i * 2 * Math.PI) / RADAR_AXES.length;
    const at = (i: number, r: number): [number, number] => [
      cx + Math.cos(angle(i)) * r,
      cy + Math.sin(angle(i)) * r,
    ];
    for (let r = 1; r <= 4; r++) {
      ctx.beginPath();
      RADAR_AXES.forEach((_, i) => ctx.lineTo(...at(i, r * ring)));
      ctx.closePath();
      ctx.stroke();
    }
    ctx.beginPath();
    RADAR_AXES.forEach((axis, i) => ctx.lineTo(...at(i, Math.min(4, Math.max(1, values[axis] ?? 1)) * ring)));
    ctx.closePath();
    ctx.fillStyle = 'rgba(52,152,219,0.4)';
    ctx.fill();
    ctx.strokeStyle = '#3498db';
    ctx.stroke();
    RADAR_AXES.forEach((axis, i) => {
      const [x, y] = at(i, 4 * ring + 26);
      ctx.fillStyle = '#aab';
      ctx.fillText(axis, x, y - 7);
      const v = values[axis];
      ctx.fillStyle = v === undefined ? '#667' : v >= 3 ? '#e74c3c' : v >= 2 ? '#f1c40f' : '#2ecc71';
      ctx.fillText(v === undefined ? '–' : v.toFixed(2), x, y + 7);
    });
  }
}

/** Each metric's display score in a frame of an evaluation stream (LimSim's raw metrics). */
export function frameScores(sample: Sample): Partial<Record<LimsimMetric, number>> {
  const out: Partial<Record<LimsimMetric, number>> = {};
  for (const m of LIMSIM_METRICS) {
    const raw = sample[m];
    if (typeof raw === 'number' && Number.isFinite(raw)) out[m] = limsimScore(m, raw);
  }
  return out;
}

/**
 * The evaluation panel: the run's overall score (and which way is better), where the scores come
 * from, the radar at the cursor, and per metric its raw value with unit at the cursor, its score then
 * and its mean over the run.
 */
export class EvaluationPanel {
  readonly root = el('div', { class: 'evaluation', 'data-testid': 'evaluation' });
  private readonly radar = new Radar();
  private readonly rows = new Map<LimsimMetric, { raw: HTMLElement; now: HTMLElement }>();
  /** Why there is no value now: the scored actor is not in the scene at the cursor. */
  private readonly absent = el('p', { class: 'hint', 'data-testid': 'evaluation-absent', hidden: '' });
  /** What `show` last showed (null before it first has). */
  private shown: { sample: Sample | undefined; absent: string | undefined } | null = null;

  constructor(evaluation: RunEvaluation | null) {
    if (!evaluation) {
      this.root.append(el('p', { class: 'empty' }, 'No evaluation for this run yet: run `simrec eval`.'));
      return;
    }
    const source =
      evaluation.source === 'limsim'
        ? "LimSim's own evaluation (evaluationINFO), kept by the import"
        : 'simrec eval';
    const body = el('tbody');
    for (const m of RADAR_AXES) {
      const raw = el('td', { class: 'num value' }, '–');
      const now = el('td', { class: 'num score-now' }, '–');
      const mean = evaluation.scores[m];
      const unit = LIMSIM_METRIC_UNITS[m];
      body.append(
        el(
          'tr',
          { 'data-metric': m },
          el('th', {}, m),
          // A ratio (LimSim's orientation, a difference of sines squared) has no unit, and says so.
          el('td', { class: 'unit' }, unit === '1' ? 'unitless' : formatUnit(unit)),
          raw,
          now,
          el('td', { class: 'num' }, mean === undefined ? '–' : mean.toFixed(2)),
        ),
      );
      this.rows.set(m, { raw, now });
    }
    this.root.append(
      el(
        'div',
        { class: 'score', 'data-testid': 'run-score' },
        el('span', { class: 'score-value' }, formatNumber(evaluation.score)),
        el('span', {}, ' / 100 '),
        el('span', { class: 'hint' }, 'higher is better'),
        ...(evaluation.collided ? [el('span', { class: 'collided' }, ' · collided: halved')] : []),
      ),
      el(
        'p',
        { class: 'hint' },
        `${source} of ${evaluation.actor ?? 'the run'}, ${evaluation.frames} frames.`,
      ),
      this.radar.canvas,
      el('p', { class: 'hint' }, 'Scores 1 (centre, best) to 4 (rim, worst), as LimSim draws them.'),
      el(
        'table',
        { class: 'kpis', 'data-testid': 'kpis' },
        el(
          'thead',
          {},
          el(
            'tr',
            {},
            el('th', {}, 'metric'),
            el('th', {}, 'unit'),
            el('th', {}, 'value now'),
            el('th', {}, 'score now'),
            el('th', {}, 'run mean'),
          ),
        ),
        body,
      ),
      this.absent,
    );
    // The run's means until a frame's scores come, drawn after the page's first frame: the radar is
    // not what a page opening on a moment waits for.
    void afterNextPaint().then(() => {
      if (!this.shown) this.radar.draw(evaluation.scores);
    });
  }

  /**
   * The frame at the cursor (none before the first). `absent` says why there is none now although
   * frames came before: the scored actor has left the scene (or is not yet in it).
   */
  show(sample: Sample | undefined, absent?: string): void {
    if (!this.rows.size) return;
    if (absent !== undefined) sample = undefined;
    // Playing at 1x draws several frames per sample of the evaluation: each rewrite of the same text
    // would lay the panel out again and redraw its radar for nothing.
    if (this.shown && this.shown.sample === sample && this.shown.absent === absent) return;
    this.shown = { sample, absent };
    this.absent.hidden = absent === undefined;
    this.absent.textContent = absent ?? '';
    const scores = sample ? frameScores(sample) : {};
    this.radar.draw(scores);
    for (const [m, row] of this.rows) {
      const raw = sample?.[m];
      row.raw.textContent = typeof raw === 'number' ? formatQuantity(raw, LIMSIM_METRIC_UNITS[m]) : '–';
      row.now.textContent = scores[m] === undefined ? '–' : scores[m].toFixed(2);
    }
  }
}
