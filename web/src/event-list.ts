import { el, formatNumber, seconds } from './format.js';

/** An event of the run's `events` stream, as the viewer lists it. */
export interface RunEvent {
  t: number;
  kind: string;
  actors: string[];
  detail: string;
  duration?: number;
  /** Where it happened (m), when the evaluator said. */
  x?: number;
  y?: number;
}

/** One colour per event kind, the same in the list and on the timeline; the worst are red. */
export const EVENT_COLORS: Record<string, string> = {
  collision: '#e74c3c',
  near_miss: '#e67e22',
  red_light: '#c0392b',
  hard_braking: '#f1c40f',
  lane_departure: '#9b59b6',
  speeding: '#e84393',
  blocked: '#3498db',
};
export const eventColor = (kind: string): string => EVENT_COLORS[kind] ?? '#95a5a6';

/**
 * The run's events beside the timeline: a row per event (time, kind, actors, detail), filtered by
 * kind; a click picks the event (the view jumps to it and rings its actors).
 */
export class EventList {
  readonly root = el('div', { class: 'event-list', 'data-testid': 'event-list' });
  private readonly filters = el('div', { class: 'event-filters' });
  private readonly list = el('ol', { class: 'events' });
  private readonly hidden = new Set<string>();
  private events: RunEvent[] = [];
  private begin = 0;
  onPick: (event: RunEvent) => void = () => {};
  /** The kinds shown changed (the timeline marks follow). */
  onFilter: (shown: RunEvent[]) => void = () => {};

  constructor() {
    this.root.append(this.filters, this.list);
  }

  set(events: RunEvent[], begin: number): void {
    this.events = events;
    this.begin = begin;
    const counts = new Map<string, number>();
    for (const e of events) counts.set(e.kind, (counts.get(e.kind) ?? 0) + 1);
    this.filters.replaceChildren(
      ...[...counts].map(([kind, n]) => {
        const box = el('input', { type: 'checkbox', 'data-kind': kind, 'data-testid': 'event-filter' });
        box.checked = !this.hidden.has(kind);
        box.addEventListener('change', () => {
          if (box.checked) this.hidden.delete(kind);
          else this.hidden.add(kind);
          this.render();
        });
        const swatch = el('span', { class: 'swatch' });
        swatch.style.background = eventColor(kind);
        return el('label', {}, box, swatch, ` ${kind} (${n})`);
      }),
    );
    this.render();
  }

  get shown(): RunEvent[] {
    return this.events.filter((e) => !this.hidden.has(e.kind));
  }

  private render(): void {
    const shown = this.shown;
    this.list.replaceChildren(
      ...shown.map((e) => {
        const swatch = el('span', { class: 'swatch' });
        swatch.style.background = eventColor(e.kind);
        const row = el(
          'li',
          { 'data-testid': 'event-row', 'data-kind': e.kind, tabindex: '0', title: e.detail },
          el('span', { class: 'num' }, `${seconds(e.t - this.begin)} s`),
          swatch,
          el('b', {}, e.kind),
          el('span', {}, e.actors.join(', ')),
          el(
            'span',
            { class: 'detail' },
            e.duration ? `${e.detail} (${formatNumber(e.duration)} s)` : e.detail,
          ),
        );
        row.addEventListener('click', () => this.pick(e, row));
        row.addEventListener('keydown', (k) => {
          if (k.key === 'Enter') this.pick(e, row);
        });
        return row;
      }),
    );
    if (!this.events.length) this.list.append(el('li', { class: 'empty' }, 'No events in this run.'));
    this.onFilter(shown);
  }

  private pick(event: RunEvent, row: HTMLElement): void {
    for (const r of this.list.querySelectorAll('.picked')) r.classList.remove('picked');
    row.classList.add('picked');
    this.onPick(event);
  }
}
