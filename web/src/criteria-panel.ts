import { CRITERIA_STREAM } from '../../src/model/standard-streams.js';
import { api, type RunDetail, type Sample } from './api.js';
import { el, formatNumber } from './format.js';

/** ScenarioRunner's words for a criterion that did not pass. */
const FAILED = new Set(['FAILURE']);

/**
 * The criteria a scenario was judged by (ScenarioRunner's, imported with a CARLA recording), as its
 * own results table prints them: each criterion, its status, its actual and expected values, and the
 * verdict of the whole. Shown only for a run that has them.
 */
export class CriteriaPanel {
  readonly root = el('div', { class: 'criteria', 'data-testid': 'criteria' });

  static has(detail: RunDetail): boolean {
    return detail.streams.some((s) => s.id === CRITERIA_STREAM && s.samples > 0);
  }

  async load(runId: number): Promise<void> {
    const { samples } = await api.samples(runId, CRITERIA_STREAM);
    this.show(samples);
  }

  private show(criteria: Sample[]): void {
    const failed = criteria.filter((c) => FAILED.has(String(c.status)) && c.optional !== true);
    const verdict = failed.length ? 'FAILURE' : 'SUCCESS';
    const body = el('tbody');
    for (const c of criteria) {
      const status = String(c.status ?? '–');
      body.append(
        el(
          'tr',
          { 'data-criterion': String(c.name), class: FAILED.has(status) ? 'failed' : 'passed' },
          el('th', {}, String(c.name)),
          el('td', { class: 'status' }, status),
          el('td', { class: 'num' }, value(c.actual)),
          el('td', { class: 'num' }, value(c.expected)),
          el('td', { class: 'num' }, value(c.acceptable)),
          el('td', {}, c.optional === true ? 'optional' : ''),
        ),
      );
    }
    this.root.append(
      el(
        'p',
        {
          class: `verdict ${verdict === 'FAILURE' ? 'failed' : 'passed'}`,
          'data-testid': 'criteria-verdict',
        },
        `ScenarioRunner: ${verdict}`,
        failed.length ? ` (${failed.map((c) => String(c.name)).join(', ')} failed)` : '',
      ),
      el(
        'table',
        { class: 'kpis' },
        el(
          'thead',
          {},
          el(
            'tr',
            {},
            ...['criterion', 'status', 'actual', 'expected', 'acceptable', ''].map((h) => el('th', {}, h)),
          ),
        ),
        body,
      ),
    );
  }
}

const value = (v: unknown): string =>
  typeof v === 'number' ? formatNumber(v) : v === undefined || v === null ? '–' : String(v);
