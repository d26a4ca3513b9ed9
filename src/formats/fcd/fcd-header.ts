/*
 * The comment SUMO writes at the top of each output: when, by which version, and the whole
 * configuration it ran with (`<!-- generated on 2026-12-02 01:15:52 by Eclipse SUMO sumo Version 1.15.0
 * <configuration> ... <fcd-output.geo value="true"/> ... </configuration> -->`). It says what the
 * file's numbers mean: geo coordinates or not, their precision, the step length.
 */

export interface FcdHeader {
  /** `2026-12-02 01:15:52`, as SUMO wrote it (local time, no zone). */
  generated?: string;
  /** `Eclipse SUMO sumo Version 1.15.0`. */
  generator?: string;
  /** Every option of the configuration, by name, as written. */
  options: Record<string, string>;
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };
const unescape = (text: string): string =>
  text.replace(/&(amp|lt|gt|quot|apos|#\d+);/g, (_m, name: string) =>
    name.startsWith('#') ? String.fromCharCode(Number(name.slice(1))) : ENTITIES[name]!,
  );
/** Escaped for an attribute inside a comment, which may not hold `--` either. */
const escape = (text: string): string =>
  text
    .replace(/[&<>"]/g, (c) => `&${Object.keys(ENTITIES).find((k) => ENTITIES[k] === c)};`)
    .replace(/-(?=-)/g, '&#45;');

/** The header in a comment's text, or undefined when the comment is not SUMO's. */
export function parseFcdHeader(comment: string): FcdHeader | undefined {
  const first = /^\s*generated on (.+?) by (.+?)\s*$/m.exec(comment);
  if (!first) return undefined;
  const options: Record<string, string> = {};
  for (const m of comment.matchAll(/<([A-Za-z][\w.-]*)\s+value="([^"]*)"\s*\/>/g))
    options[m[1]!] = unescape(m[2]!);
  return { generated: first[1]!, generator: first[2]!, options };
}

/** SUMO's `YYYY-MM-DD HH:MM:SS` as Unix microseconds (taken as UTC: SUMO names no zone). */
export function headerMicros(generated: string | undefined): number | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})$/.exec(generated?.trim() ?? '');
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s] = m.map(Number) as [number, ...number[]];
  const ms = Date.UTC(y!, mo! - 1, d, h, mi, s);
  return Number.isFinite(ms) ? ms * 1000 : undefined;
}

const pad = (n: number): string => String(n).padStart(2, '0');

/** The comment simrec writes, in SUMO's form so that the importer (simrec's or anyone's) reads it. */
export function formatFcdHeader(
  beginMicros: number,
  generator: string,
  options: Record<string, string>,
): string {
  const d = new Date(Math.floor(beginMicros / 1000));
  const date =
    `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ` +
    `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`;
  const lines = Object.entries(options).map(([k, v]) => `        <${k} value="${escape(v)}"/>\n`);
  return (
    `<!-- generated on ${date} by ${generator}\n<configuration>\n    <output>\n` +
    lines.join('') +
    `    </output>\n</configuration>\n-->\n`
  );
}
