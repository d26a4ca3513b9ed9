import { eventColor, type RunEvent } from './event-list.js';
import { el, seconds } from './format.js';

export const SPEEDS = [0.1, 0.25, 0.5, 1, 2, 5, 10];
/** The slider's steps over the run; events of a kind in one step share a mark on the track. */
export const SLIDER_STEPS = 1000;

/** Play, pause, step, speed and scrub over [begin, end]; events marked along the track. */
export class Timeline {
  readonly root = el('div', { class: 'timeline' });
  private readonly play = el('button', { 'data-testid': 'play', title: 'play / pause (space)' }, '▶ play');
  private readonly back = el(
    'button',
    { 'data-testid': 'step-back', title: 'step back (←, shift: ten steps)' },
    '◀ step',
  );
  private readonly forward = el(
    'button',
    { 'data-testid': 'step-forward', title: 'step forward (→, shift: ten steps)' },
    'step ▶',
  );
  private readonly speed = el(
    'select',
    { 'data-testid': 'speed' },
    ...SPEEDS.map((s) => el('option', { value: String(s) }, `${s}x`)),
  );
  readonly slider = el('input', {
    type: 'range',
    min: '0',
    max: String(SLIDER_STEPS),
    step: '1',
    value: '0',
    'data-testid': 'scrub',
  });
  private readonly label = el('span', { class: 'time', 'data-testid': 'time' });
  private readonly marks = el('div', { class: 'marks' });
  /** A strip of the run's captures, under the track. */
  private readonly strip = el('div', { class: 'capture-strip', 'data-testid': 'capture-strip' });
  begin: number;
  end: number;
  t: number;
  /** Microseconds per step button press. */
  stepMicros = 100_000;
  playing = false;
  onChange: (t: number) => void = () => {};
  onPick: (event: RunEvent) => void = () => {};
  private lastFrame = 0;

  constructor(begin: number, end: number) {
    this.begin = begin;
    this.end = Math.max(end, begin + 1);
    this.t = begin;
    this.speed.value = '1';
    this.root.append(
      this.back,
      this.play,
      this.forward,
      this.speed,
      el('div', { class: 'track' }, this.slider, this.marks, this.strip),
      this.label,
    );
    this.play.addEventListener('click', () => this.toggle());
    this.back.addEventListener('click', () => this.seek(this.t - this.stepMicros));
    this.forward.addEventListener('click', () => this.seek(this.t + this.stepMicros));
    this.slider.addEventListener('input', () =>
      this.seek(this.begin + (Number(this.slider.value) / SLIDER_STEPS) * (this.end - this.begin)),
    );
    this.update();
  }

  setRange(begin: number, end: number): void {
    this.begin = begin;
    this.end = Math.max(end, begin + 1);
    this.update();
    // The marks stand at fractions of the range: placed again on the new one.
    this.mark(this.events);
    this.markCaptures(this.captureTimes);
  }

  private at(t: number): string {
    return `${((t - this.begin) / (this.end - this.begin)) * 100}%`;
  }

  /** Events along the track, in their kind's colour; a click picks one. */
  private events: RunEvent[] = [];
  private captureTimes: number[] = [];

  mark(events: RunEvent[]): void {
    this.events = events;
    // Events of a kind within one slider step of each other share a mark: a mark is wider than a step,
    // and a long run's tens of thousands of events would otherwise be as many buttons.
    const slots = new Map<string, RunEvent[]>();
    for (const e of events) {
      const key = `${e.kind} ${this.stepOf(e.t)}`;
      const slot = slots.get(key);
      if (slot) slot.push(e);
      else slots.set(key, [e]);
    }
    this.marks.replaceChildren(
      ...[...slots.values()].map((group) => {
        const first = group[0]!;
        const mark = el('button', {
          class: 'mark',
          'data-testid': 'event-mark',
          'data-kind': first.kind,
          'data-count': String(group.length),
          title:
            group.length === 1
              ? `${seconds(first.t - this.begin)} s: ${first.kind} ${first.actors.join(', ')}: ${first.detail}`
              : `${seconds(first.t - this.begin)} to ${seconds(group.at(-1)!.t - this.begin)} s: ${group.length} ${first.kind} events, the first ${first.actors.join(', ')}: ${first.detail}`,
        });
        // Through the style object: the server's CSP refuses style attributes.
        mark.style.left = this.at(first.t);
        mark.style.background = eventColor(first.kind);
        mark.addEventListener('click', () => this.onPick(first));
        return mark;
      }),
      ...(this.divergenceMark ? [this.divergenceMark] : []),
    );
  }

  /** A comparison's first divergence, a mark of its own on the track (a click goes there). */
  markDivergence(t: number, title: string): void {
    const mark = el('button', { class: 'mark divergence-mark', 'data-testid': 'divergence-mark', title });
    mark.style.left = this.at(t);
    mark.addEventListener('click', () => this.seek(t));
    this.divergenceMark?.remove();
    this.divergenceMark = mark;
    this.marks.append(mark);
  }
  private divergenceMark: HTMLElement | null = null;

  /**
   * The run's captures as ticks under the track, at the times given: the viewer gives the first of each
   * slider step that holds any (the server's /capture-times), since a camera's hour is a hundred
   * thousand images.
   */
  markCaptures(times: number[]): void {
    this.captureTimes = times;
    this.strip.replaceChildren(
      ...times.map((t) => {
        const tick = el('span', { class: 'capture-tick' });
        tick.style.left = this.at(t);
        return tick;
      }),
    );
  }

  /** The slider step a time falls in. */
  private stepOf(t: number): number {
    return Math.round(((t - this.begin) / (this.end - this.begin)) * SLIDER_STEPS);
  }

  /** Times real time the cursor moves at: the speed chosen while playing, 0 while paused. */
  get rate(): number {
    return this.playing ? Number(this.speed.value) : 0;
  }

  toggle(): void {
    this.playing = !this.playing;
    if (this.playing && this.t >= this.end) this.t = this.begin;
    this.play.textContent = this.playing ? '■ pause' : '▶ play';
    this.lastFrame = performance.now();
    if (this.playing) requestAnimationFrame((now) => this.tick(now));
  }

  private tick(now: number): void {
    if (!this.playing) return;
    const elapsed = now - this.lastFrame;
    this.lastFrame = now;
    const next = this.t + elapsed * 1000 * Number(this.speed.value);
    if (next >= this.end) {
      this.seek(this.end);
      this.toggle();
      return;
    }
    this.seek(next);
    requestAnimationFrame((n) => this.tick(n));
  }

  seek(t: number): void {
    this.t = Math.min(this.end, Math.max(this.begin, t));
    this.update();
    this.onChange(this.t);
  }

  private update(): void {
    this.slider.value = String(Math.round(((this.t - this.begin) / (this.end - this.begin)) * SLIDER_STEPS));
    this.label.textContent = `${seconds(this.t - this.begin)} / ${seconds(this.end - this.begin)} s`;
  }
}
