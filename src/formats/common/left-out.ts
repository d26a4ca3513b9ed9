import type { StreamInfo } from '../../model/stream.js';

/**
 * What an export leaves out of a run, said in warnings: a writer never drops a stream or a field
 * without a word. The writer tells, for each stream it looked at, what it wrote of it; this says the
 * rest, one warning per stream name (`control`, `events`...) and one per stream name whose fields it
 * wrote only in part, each naming the actors and fields concerned, so that the command line's
 * summary (a count per kind) still names every one.
 */
export class LeftOut {
  /** Streams written whole, in part (the fields present in them that were written), or not at all. */
  private readonly kept = new Map<string, { stream: StreamInfo; fields: ReadonlySet<string> | 'all' }>();
  private readonly present = new Map<string, Set<string>>();

  /** The stream is written whole. */
  all(stream: StreamInfo): void {
    this.kept.set(stream.id, { stream, fields: 'all' });
  }

  /** The stream is written, these of its fields only (whichever its samples have). */
  fields(stream: StreamInfo, written: Iterable<string>): void {
    this.kept.set(stream.id, { stream, fields: new Set(written) });
  }

  /** The fields the stream's samples have: what its writer read of it. */
  saw(stream: StreamInfo, sample: Readonly<Record<string, unknown>>): void {
    let seen = this.present.get(stream.id);
    if (!seen) this.present.set(stream.id, (seen = new Set()));
    for (const key in sample) if (key !== 't' && key !== 'step' && sample[key] !== undefined) seen.add(key);
  }

  /**
   * Warns for every stream of `streams` with samples that was neither written whole nor in part
   * (except those in `said`, left out with a warning of their own), and for the fields of those
   * written in part. `why` says why a stream has no place in the format, `whyFields` what it keeps.
   */
  warn(
    streams: readonly StreamInfo[],
    warn: (message: string) => void,
    why: (name: string) => string,
    whyFields: (name: string) => string,
    said: ReadonlySet<string> = new Set(),
  ): void {
    const dropped = new Map<string, string[]>();
    const droppedFields = new Map<string, { actors: string[]; fields: Set<string> }>();
    for (const s of streams) {
      if (s.samples === 0 || said.has(s.id)) continue;
      const kept = this.kept.get(s.id);
      if (!kept) {
        dropped.set(s.name, [...(dropped.get(s.name) ?? []), s.actor ?? '']);
        continue;
      }
      if (kept.fields === 'all') continue;
      const written = kept.fields;
      const lost = [...(this.present.get(s.id) ?? [])].filter((f) => !written.has(f));
      if (!lost.length) continue;
      const entry = droppedFields.get(s.name) ?? { actors: [], fields: new Set<string>() };
      entry.actors.push(s.actor ?? '');
      for (const f of lost) entry.fields.add(f);
      droppedFields.set(s.name, entry);
    }
    for (const [name, actors] of dropped) warn(`stream ${name} ${ofWhom(actors)} left out: ${why(name)}`);
    for (const [name, { actors, fields }] of droppedFields)
      warn(`stream ${name} ${ofWhom(actors)}: fields ${[...fields].join(', ')} left out: ${whyFields(name)}`);
  }
}

/** `of ego`, `of the run` (a run-level stream), `of 16 actors (ped1, ped2, ped3, ...)`. */
function ofWhom(actors: string[]): string {
  if (actors.length === 1) return actors[0] === '' ? 'of the run' : `of ${actors[0]}`;
  const named = actors.map((a) => a || 'the run');
  return `of ${actors.length} actors (${named.slice(0, 3).join(', ')}${actors.length > 3 ? ', ...' : ''})`;
}
