import { ApiError, api, type SqlAnswer } from './api.js';
import { el, formatValue } from './format.js';

/**
 * Find: a question across every run, in SQL over the store's tables (GET /api/sql), with ready-made
 * ones for what people look for first. A row that names a run and a moment (`run` and `t` columns,
 * as every table has them) opens that run at that moment, its actor selected (`actor`, or the first
 * of `actors`).
 */

interface Preset {
  label: string;
  sql: (threshold: number) => string;
}

/** Events come from `simrec eval` (the `events` table): kind, time, the actors involved, a detail. */
const eventQuery = (kind: string): string =>
  `SELECT run, t, actors->>0 AS actor, actors, duration, detail\nFROM events WHERE kind = '${kind}'\nORDER BY run, t`;

export const PRESETS: Record<string, Preset> = {
  collisions: { label: 'Collisions', sql: () => eventQuery('collision') },
  near_misses: { label: 'Near misses', sql: () => eventQuery('near_miss') },
  hard_braking: { label: 'Hard braking', sql: () => eventQuery('hard_braking') },
  blocked: { label: 'Blocked actors', sql: () => eventQuery('blocked') },
  ttc: {
    label: 'Time to collision below',
    sql: (s) =>
      `SELECT run, arg_min(t, collision) AS t, arg_min(actor, collision) AS actor,\n       min(collision) AS ttc_s, count(*) AS frames_below\nFROM evaluation WHERE collision < ${s}\nGROUP BY run ORDER BY ttc_s`,
  },
};

/** DuckDB's text of a TIMESTAMP WITH TIME ZONE in UTC (`2026-12-02 00:49:32.187+00`), in microseconds. */
export function timestampMicros(text: string): number | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?(?:\+00(?::00)?|Z)?$/.exec(
    text,
  );
  if (!m) return null;
  const [, y, mo, d, h, mi, s, fraction = ''] = m;
  const ms = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s));
  return ms * 1000 + Number(fraction.padEnd(6, '0'));
}

/** Where a row leads: its run, moment and actor, when it names them. */
function rowLink(columns: string[], row: unknown[]): string | null {
  const value = (name: string): unknown => row[columns.indexOf(name)];
  const run = value('run');
  if (!columns.includes('run') || typeof run !== 'number') return null;
  const params = new URLSearchParams();
  const t = value('t');
  const micros = typeof t === 'string' ? timestampMicros(t) : null;
  if (micros !== null) params.set('at', String(micros));
  let actor = value('actor');
  if (typeof actor !== 'string') {
    const actors = value('actors');
    const list = typeof actors === 'string' ? safeJson(actors) : actors;
    actor = Array.isArray(list) && typeof list[0] === 'string' ? list[0] : null;
  }
  if (typeof actor === 'string') params.set('actor', actor);
  const query = params.toString();
  return `#/runs/${run}${query ? `?${query}` : ''}`;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

export class FindPanel {
  readonly root = el('section', { class: 'find-view', 'data-testid': 'find' });
  private readonly sql = el('textarea', {
    class: 'find-sql',
    rows: '5',
    spellcheck: 'false',
    'data-testid': 'find-sql',
    'aria-label': 'SQL',
  });
  private readonly threshold = el('input', {
    type: 'number',
    min: '0',
    step: '0.1',
    value: '1.5',
    class: 'find-threshold',
    'data-testid': 'find-ttc',
    title: 'time to collision, seconds',
  });
  private readonly status = el('span', { class: 'find-status', 'data-testid': 'find-status' });
  private readonly results = el('div', { class: 'find-results', 'data-testid': 'find-results' });
  private asked = 0;

  constructor(initialSql?: string) {
    const presets = el('div', { class: 'find-presets' });
    for (const [key, preset] of Object.entries(PRESETS)) {
      const button = el('button', { type: 'button', 'data-testid': `find-preset-${key}` }, preset.label);
      button.addEventListener('click', () => {
        this.sql.value = preset.sql(Number(this.threshold.value) || 0);
        void this.run(); // run shows its answer or its error in the panel, here and below
      });
      presets.append(button);
      if (key === 'ttc') presets.append(this.threshold, ' s');
    }
    const runButton = el('button', { type: 'button', 'data-testid': 'find-run' }, 'Run (Ctrl+Enter)');
    runButton.addEventListener('click', () => void this.run());
    this.sql.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
        e.preventDefault();
        void this.run();
      }
    });
    this.sql.value = initialSql ?? PRESETS.near_misses!.sql(1.5);
    this.root.append(
      el('h1', {}, 'Find across runs'),
      el(
        'p',
        { class: 'find-help' },
        'SQL over every run: a table per stream name (state, control, events, evaluation...) with run, actor and t columns, plus actors and runs. Click a row to open its run at that moment.',
      ),
      presets,
      this.sql,
      el('div', { class: 'find-actions' }, runButton, this.status),
      this.results,
    );
    if (initialSql) void this.run();
  }

  async run(): Promise<void> {
    const sql = this.sql.value;
    const asked = ++this.asked;
    this.status.textContent = 'running…';
    this.status.dataset.state = 'running';
    // Kept in the address: the question can be shared and comes back with the page.
    history.replaceState(null, '', `#/find?${new URLSearchParams({ q: sql }).toString()}`);
    try {
      const answer = await api.sql(sql);
      if (asked !== this.asked) return;
      this.show(answer);
    } catch (error) {
      if (asked !== this.asked) return;
      const message = error instanceof ApiError ? error.message : String(error);
      const hint = /(events|evaluation) does not exist/.test(message)
        ? ' (no run has been evaluated yet: run `simrec eval RUN`)'
        : '';
      this.status.textContent = `${message}${hint}`;
      this.status.dataset.state = 'error';
      this.results.replaceChildren();
    }
  }

  private show(answer: SqlAnswer): void {
    const names = answer.columns.map((c) => c.name);
    const table = el('table', { class: 'find-table' });
    table.append(el('thead', {}, el('tr', {}, ...names.map((n) => el('th', {}, n)))));
    const body = el('tbody');
    for (const row of answer.rows) {
      const link = rowLink(names, row);
      const tr = el(
        'tr',
        { 'data-testid': 'find-row' },
        ...row.map((v) => el('td', {}, v === null ? '' : formatValue(v))),
      );
      if (link) {
        tr.classList.add('link');
        tr.dataset.href = link;
        tr.title = 'open this run at this moment';
        tr.addEventListener('click', () => (location.hash = link));
      }
      body.append(tr);
    }
    table.append(body);
    this.results.replaceChildren(table);
    const n = answer.rows.length;
    this.status.dataset.state = 'done';
    this.status.textContent = `${n} row${n === 1 ? '' : 's'}${answer.truncated ? ` (the first ${answer.limit}; narrow the query for the rest)` : ''} in ${answer.elapsedMs} ms`;
  }
}
