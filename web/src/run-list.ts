import { endReasonInWords } from '../../src/model/run.js';
import type { RunListEntry } from './api.js';
import { date, el, formatNumber, seconds } from './format.js';

/** The run list's columns: header, how rows sort by it (none: not sortable), and whether numeric. */
const COLUMNS: { label: string; sort?: (r: RunListEntry) => number | string; num?: boolean }[] = [
  { label: 'Run', sort: (r) => r.id, num: true },
  { label: 'Simulator', sort: (r) => r.simulator.name },
  { label: 'Begin (UTC)', sort: (r) => r.begin },
  { label: 'Duration s', sort: (r) => (r.end ?? Infinity) - r.begin, num: true },
  { label: 'End reason', sort: (r) => r.endReason ?? '' },
  { label: 'Actors', sort: (r) => r.actorCount, num: true },
  { label: 'Samples', sort: (r) => r.samples, num: true },
  { label: 'Score', sort: (r) => r.score ?? -Infinity, num: true },
  { label: 'Description' },
];

/** The run list: search and filter by simulator, date, duration and end reason; live as runs change. */
export class RunList {
  readonly root = el('section', { class: 'run-list' });
  private runs: RunListEntry[] = [];
  private readonly search = el('input', {
    type: 'search',
    placeholder: 'search description, simulator, metadata',
    'data-testid': 'run-search',
  });
  private readonly simulator = el('select', { 'data-testid': 'filter-simulator' });
  private readonly endReason = el('select', { 'data-testid': 'filter-end-reason' });
  private readonly since = el('input', { type: 'date', title: 'begun on or after' });
  private readonly minDuration = el('input', {
    type: 'number',
    min: '0',
    step: 'any',
    placeholder: 'min s',
    title: 'minimum duration (s)',
  });
  private readonly maxDuration = el('input', {
    type: 'number',
    min: '0',
    step: 'any',
    placeholder: 'max s',
    title: 'maximum duration (s)',
  });
  private readonly body = el('tbody');
  private readonly count = el('span', { class: 'count' });
  private sort: { column: number; descending: boolean } | null = null;
  private readonly sortButtons = new Map<number, HTMLButtonElement>();

  constructor() {
    const filters = el(
      'div',
      { class: 'filters' },
      this.search,
      this.simulator,
      this.endReason,
      this.since,
      this.minDuration,
      this.maxDuration,
      this.count,
    );
    const head = el(
      'thead',
      {},
      el(
        'tr',
        {},
        ...COLUMNS.map((c, i) => {
          if (!c.sort) return el('th', {}, c.label);
          const button = el(
            'button',
            { class: 'sort', 'data-testid': `sort-${c.label.split(' ')[0]!.toLowerCase()}` },
            c.label,
          );
          button.addEventListener('click', () => {
            // A first click sorts a numeric column best-first (highest score, most samples...).
            this.sort =
              this.sort?.column === i
                ? { column: i, descending: !this.sort.descending }
                : { column: i, descending: !!c.num };
            this.render();
          });
          this.sortButtons.set(i, button);
          return el('th', { class: c.num ? 'num' : '' }, button);
        }),
      ),
    );
    this.root.append(
      el('h1', {}, 'Runs'),
      filters,
      el('table', { class: 'runs', 'data-testid': 'run-table' }, head, this.body),
    );
    for (const input of [
      this.search,
      this.simulator,
      this.endReason,
      this.since,
      this.minDuration,
      this.maxDuration,
    ])
      input.addEventListener('input', () => this.render());
  }

  update(runs: RunListEntry[]): void {
    this.runs = runs;
    this.fillSelect(
      this.simulator,
      'all simulators',
      runs.map((r) => r.simulator.name),
    );
    this.fillSelect(
      this.endReason,
      'all end reasons',
      runs.map((r) => r.endReason ?? 'recording'),
      (v) => (v === 'recording' ? v : endReasonInWords(v)),
    );
    this.render();
  }

  private fillSelect(
    select: HTMLSelectElement,
    all: string,
    values: string[],
    label: (value: string) => string = (v) => v,
  ): void {
    const current = select.value;
    select.replaceChildren(
      el('option', { value: '' }, all),
      ...[...new Set(values)].sort().map((v) => el('option', { value: v }, label(v))),
    );
    select.value = current;
  }

  /** A row opens its run when clicked anywhere, not only on its id. */
  private row(r: RunListEntry, ...cells: HTMLElement[]): HTMLElement {
    const tr = el('tr', { 'data-run': String(r.id), class: 'clickable' }, ...cells);
    tr.addEventListener('click', (e) => {
      if ((e.target as HTMLElement).closest('a')) return;
      location.hash = `#/runs/${r.id}`;
    });
    return tr;
  }

  private render(): void {
    const text = this.search.value.trim().toLowerCase();
    const since = this.since.value ? Date.parse(this.since.value) * 1000 : -Infinity;
    const min = this.minDuration.value === '' ? -Infinity : Number(this.minDuration.value) * 1e6;
    const max = this.maxDuration.value === '' ? Infinity : Number(this.maxDuration.value) * 1e6;
    const shown = this.runs.filter((r) => {
      const duration = (r.end ?? Date.now() * 1000) - r.begin;
      const haystack =
        `${r.id} ${r.description} ${r.simulator.name} ${r.simulator.version ?? ''} ${JSON.stringify(r.metadata)}`.toLowerCase();
      return (
        (!text || haystack.includes(text)) &&
        (!this.simulator.value || r.simulator.name === this.simulator.value) &&
        (!this.endReason.value || (r.endReason ?? 'recording') === this.endReason.value) &&
        r.begin >= since &&
        duration >= min &&
        duration <= max
      );
    });
    const sort = this.sort;
    if (sort) {
      const key = COLUMNS[sort.column]!.sort!;
      const sign = sort.descending ? -1 : 1;
      shown.sort((a, b) => {
        const ka = key(a);
        const kb = key(b);
        return (ka < kb ? -1 : ka > kb ? 1 : a.id - b.id) * sign;
      });
    }
    for (const [column, button] of this.sortButtons)
      if (sort?.column === column) button.dataset.sorted = sort.descending ? 'descending' : 'ascending';
      else delete button.dataset.sorted;
    this.count.textContent = `${shown.length} of ${this.runs.length} runs`;
    this.body.replaceChildren(
      ...shown.map((r) =>
        this.row(
          r,
          el('td', {}, el('a', { href: `#/runs/${r.id}` }, String(r.id))),
          el('td', {}, `${r.simulator.name} ${r.simulator.version ?? ''}`),
          el('td', {}, date(r.begin)),
          el('td', { class: 'num' }, r.end === null ? 'recording…' : seconds(r.end - r.begin)),
          el(
            'td',
            r.endReason === null ? {} : { title: `end reason: ${r.endReason}` },
            r.endReason === null
              ? el('span', { class: 'live-badge' }, 'live')
              : endReasonInWords(r.endReason),
          ),
          el('td', { class: 'num' }, String(r.actorCount)),
          el('td', { class: 'num' }, String(r.samples)),
          el(
            'td',
            { class: 'num score', 'data-testid': 'score' },
            r.score === null ? '–' : formatNumber(r.score),
          ),
          el('td', {}, r.description),
        ),
      ),
    );
    if (shown.length === 0)
      this.body.append(
        el(
          'tr',
          {},
          el(
            'td',
            { colspan: String(COLUMNS.length), class: 'empty' },
            this.runs.length ? 'No run matches the filters.' : 'No runs yet: record one with `simrec demo`.',
          ),
        ),
      );
  }
}
