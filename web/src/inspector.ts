import { ATTRIBUTE_UNITS } from '../../src/model/units.js';
import type { ActorInfo, StreamInfo } from './api.js';
import { el, formatQuantity, formatValue, seconds } from './format.js';

/**
 * The selected actor: what it is (kind, class, size and its type's attributes, which do not change)
 * apart from its state at the cursor (every field, with its unit). The two are told apart because
 * sources reuse names: LimSim's vehicle type has an `accel` (its maximum) and so has the state (now).
 */
export class Inspector {
  readonly root = el('div', { class: 'inspector', 'data-testid': 'inspector' });

  empty(): void {
    this.root.replaceChildren(el('p', { class: 'empty' }, 'Click an actor on the map to inspect it.'));
  }

  show(
    actor: ActorInfo | undefined,
    id: string,
    state: Record<string, unknown> | undefined,
    stream: StreamInfo | undefined,
    begin: number,
  ): void {
    const units = new Map<string, string | undefined>();
    for (const f of [...(stream?.fields ?? []), ...(stream?.extraFields ?? [])])
      units.set(f.name, 'unit' in f ? f.unit : undefined);
    const row = (k: string, v: string): HTMLElement =>
      el('tr', { 'data-field': k }, el('th', {}, k), el('td', {}, v));
    const what: HTMLElement[] = [row('id', id), row('kind', actor?.kind ?? 'unknown')];
    if (actor?.sourceClass) what.push(row('class', actor.sourceClass));
    if (actor?.extents)
      what.push(
        row(
          'size',
          `${formatQuantity(actor.extents.length, 'm')} × ${formatQuantity(actor.extents.width, 'm')} × ${formatQuantity(actor.extents.height, 'm')}`,
        ),
      );
    // The units of the attributes simulators name alike (maxSpeed in m/s, mass in kg...).
    const attributes = Object.entries(actor?.attributes ?? {}).map(([k, v]) =>
      row(k, ATTRIBUTE_UNITS[k] ? formatQuantity(v, ATTRIBUTE_UNITS[k]) : formatValue(v)),
    );
    const now: HTMLElement[] = [];
    if (state) {
      if (typeof state.t === 'number') now.push(row('t', `${seconds(state.t - begin)} s`));
      for (const [k, v] of Object.entries(state))
        if (!['id', 'kind', 't', 'departed'].includes(k)) now.push(row(k, formatQuantity(v, units.get(k))));
    } else
      now.push(el('tr', {}, el('td', { colspan: '2', class: 'empty' }, 'not in the scene at this time')));
    this.root.replaceChildren(
      el('table', { 'data-testid': 'inspector-actor' }, el('tbody', {}, ...what)),
      ...(attributes.length
        ? [
            el('h4', {}, 'Attributes (of its type, fixed)'),
            el('table', { 'data-testid': 'inspector-attributes' }, el('tbody', {}, ...attributes)),
          ]
        : []),
      el('h4', {}, 'State at the cursor'),
      el('table', { 'data-testid': 'inspector-state' }, el('tbody', {}, ...now)),
    );
  }
}
