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
 * The height of an event's row, in CSS pixels: `ol.events li` in style.css gives every row this height,
 * so that the rows not in the page can be stood for by spacers of a known height.
 */
export const EVENT_ROW_PX = 20;
/** The list's height (`ol.events`' max-height), until the page has laid it out. */
const LIST_PX = 130;
/** Rows kept in the page beyond those in view, above and below. */
const OVERSCAN_ROWS = 40;

/**
 * The run's events beside the timeline: a row per event (time, kind, actors, detail), filtered by
 * kind; a click (or Enter) picks the event (the view jumps to it and rings its actors), the arrow keys
 * move between rows. A long run can have tens of thousands of events: only the rows in view, and a
 * margin of OVERSCAN_ROWS above and below, are in the page; two spacers stand for the rest, so the
 * page's elements are bounded by the list's height, not by the run.
 */
export class EventList {
  readonly root = el('div', { class: 'event-list', 'data-testid': 'event-list' });
  private readonly filters = el('div', { class: 'event-filters' });
  private readonly list = el('ol', { class: 'events', 'data-testid': 'events' });
  private readonly above = el('li', { class: 'spacer', 'aria-hidden': 'true' });
  private readonly below = el('li', { class: 'spacer', 'aria-hidden': 'true' });
  private readonly hidden = new Set<string>();
  private events: RunEvent[] = [];
  private shownEvents: RunEvent[] = [];
  /** The shown events' rows in the page: [from, to). */
  private drawn = { from: 0, to: 0 };
  private picked: RunEvent | null = null;
  private begin = 0;
  onPick: (event: RunEvent) => void = () => {};
  /** The kinds shown changed (the timeline marks follow). */
  onFilter: (shown: RunEvent[]) => void = () => {};

  constructor() {
    this.root.append(this.filters, this.list);
    this.list.addEventListener('scroll', () => this.draw(false));
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
          this.filter();
        });
        const swatch = el('span', { class: 'swatch' });
        swatch.style.background = eventColor(kind);
        return el('label', {}, box, swatch, ` ${kind} (${n})`);
      }),
    );
    this.filter();
  }

  get shown(): RunEvent[] {
    return this.shownEvents;
  }

  private filter(): void {
    this.shownEvents = this.events.filter((e) => !this.hidden.has(e.kind));
    this.draw(true);
    this.onFilter(this.shownEvents);
  }

  /**
   * The rows around what the list shows; on a scroll, only once the view comes near the edge of the
   * rows drawn (`force`: the events changed, draw in any case).
   */
  private draw(force: boolean): void {
    if (!this.events.length) {
      this.list.replaceChildren(el('li', { class: 'empty' }, 'No events in this run.'));
      return;
    }
    const total = this.shownEvents.length;
    const top = this.list.scrollTop;
    const height = this.list.clientHeight || LIST_PX;
    const first = Math.floor(top / EVENT_ROW_PX);
    const last = Math.ceil((top + height) / EVENT_ROW_PX);
    const { from: drawnFrom, to: drawnTo } = this.drawn;
    const near = OVERSCAN_ROWS / 4;
    if (
      !force &&
      (drawnFrom === 0 || first - drawnFrom >= near) &&
      (drawnTo === total || drawnTo - last >= near)
    )
      return;
    const from = Math.max(0, first - OVERSCAN_ROWS);
    const to = Math.min(total, last + OVERSCAN_ROWS);
    this.drawn = { from, to };
    // Through the style object: the server's CSP refuses style attributes.
    this.above.style.height = `${from * EVENT_ROW_PX}px`;
    this.below.style.height = `${(total - to) * EVENT_ROW_PX}px`;
    const focused = this.focusedIndex();
    const rows: HTMLElement[] = [];
    for (let i = from; i < to; i++) rows.push(this.row(this.shownEvents[i]!, i));
    // The rows go one by one: replacing the list's children at once while one of them has the focus
    // puts Chromium's scroll back at the top.
    if (this.above.parentNode !== this.list) this.list.replaceChildren(this.above, this.below);
    while (this.above.nextSibling !== this.below) this.above.nextSibling!.remove();
    this.below.before(...rows);
    // A row with the keyboard's focus is drawn anew: the focus stays on its event.
    if (focused !== null) this.rowAt(focused)?.focus({ preventScroll: true });
  }

  private row(e: RunEvent, index: number): HTMLElement {
    const swatch = el('span', { class: 'swatch' });
    swatch.style.background = eventColor(e.kind);
    const row = el(
      'li',
      {
        'data-testid': 'event-row',
        'data-kind': e.kind,
        'data-index': String(index),
        tabindex: '0',
        title: e.detail,
      },
      el('span', { class: 'num' }, `${seconds(e.t - this.begin)} s`),
      swatch,
      el('b', {}, e.kind),
      el('span', {}, e.actors.join(', ')),
      el('span', { class: 'detail' }, e.duration ? `${e.detail} (${formatNumber(e.duration)} s)` : e.detail),
    );
    if (e === this.picked) row.classList.add('picked');
    row.addEventListener('click', () => this.pick(index));
    row.addEventListener('keydown', (k) => {
      if (k.key === 'Enter') this.pick(index);
      else if (k.key === 'ArrowDown' || k.key === 'ArrowUp') {
        k.preventDefault();
        this.focusRow(index + (k.key === 'ArrowDown' ? 1 : -1));
      }
    });
    return row;
  }

  private rowAt(index: number): HTMLElement | null {
    return this.list.querySelector<HTMLElement>(`li[data-index="${index}"]`);
  }

  private focusedIndex(): number | null {
    const active = document.activeElement;
    return active instanceof HTMLElement && active.parentElement === this.list && active.dataset.index
      ? Number(active.dataset.index)
      : null;
  }

  /** Moves the keyboard's focus to the shown event `index`, scrolling the list to it if need be. */
  private focusRow(index: number): void {
    if (index < 0 || index >= this.shownEvents.length) return;
    const top = index * EVENT_ROW_PX;
    const height = this.list.clientHeight || LIST_PX;
    if (top < this.list.scrollTop) this.list.scrollTop = top;
    else if (top + EVENT_ROW_PX > this.list.scrollTop + height)
      this.list.scrollTop = top + EVENT_ROW_PX - height;
    this.draw(false);
    this.rowAt(index)?.focus({ preventScroll: true });
  }

  private pick(index: number): void {
    const event = this.shownEvents[index];
    if (!event) return;
    this.picked = event;
    for (const r of this.list.querySelectorAll('.picked')) r.classList.remove('picked');
    this.rowAt(index)?.classList.add('picked');
    this.onPick(event);
  }
}
