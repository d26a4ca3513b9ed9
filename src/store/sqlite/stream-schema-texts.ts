import { deepFreeze } from '../../model/json.js';
import type { StreamSchema } from '../../model/stream.js';

/** Distinct schema templates kept; past it the map starts again (a store of many kinds of streams). */
const MAX_TEMPLATES = 1024;

/**
 * Stream schemas parsed from the JSON text the SQLite store keeps, the streams of many actors sharing
 * one parse. The state streams of 200 actors differ only in their `id` and `actor`: their text with
 * those two values taken out is parsed (and its fields frozen) once, and each stream is a shallow copy
 * of that with its own id and actor: a fresh process's first scene spent a tenth of its time parsing
 * the same fields for every actor and freezing them. What is returned shares frozen fields and metadata
 * between streams, as the store's cached lists already did; a text whose `"id":` or `"actor":` appears
 * other than once (a nested object with such a key) is parsed on its own.
 */
export class StreamSchemaTexts {
  private readonly templates = new Map<string, StreamSchema>();

  parse(text: string): StreamSchema {
    const id = onlyValue(text, '"id":');
    const actor = onlyValue(text, '"actor":');
    if (!id || !actor || text[id.start] !== '"') return deepFreezeSchema(JSON.parse(text) as StreamSchema);
    // The two values blanked, in the order they appear (the later first, so the earlier's place holds).
    const [first, second] = id.start < actor.start ? [id, actor] : [actor, id];
    const key =
      text.slice(0, first.start) + '""' + text.slice(first.end, second.start) + '""' + text.slice(second.end);
    let template = this.templates.get(key);
    if (template === undefined) {
      if (this.templates.size >= MAX_TEMPLATES) this.templates.clear();
      template = deepFreezeSchema(JSON.parse(key) as StreamSchema);
      this.templates.set(key, template);
    }
    return {
      ...template,
      id: JSON.parse(text.slice(id.start, id.end)) as string,
      actor: JSON.parse(text.slice(actor.start, actor.end)) as string | null,
    };
  }
}

function deepFreezeSchema(schema: StreamSchema): StreamSchema {
  deepFreeze(schema.fields);
  deepFreeze(schema.metadata);
  return schema;
}

/**
 * Where the value of the one `key` in a JSON text is (a string literal or null), or undefined when the
 * key is not there exactly once or its value is something else.
 */
function onlyValue(text: string, key: string): { start: number; end: number } | undefined {
  const at = text.indexOf(key);
  if (at < 0 || text.indexOf(key, at + key.length) >= 0) return undefined;
  const start = at + key.length;
  if (text.startsWith('null', start)) return { start, end: start + 4 };
  if (text[start] !== '"') return undefined;
  // A JSON string: up to the first quote not escaped.
  for (let i = start + 1; i < text.length; i++) {
    if (text[i] === '\\') i++;
    else if (text[i] === '"') return { start, end: i + 1 };
  }
  return undefined;
}
