import { invalid } from '../model/errors.js';
import type { RunDiff } from './diff-types.js';

/**
 * A team's thresholds, which turn a diff into pass or fail for CI, and the JUnit XML report CI
 * systems show. The thresholds file is JSON:
 *
 *   {
 *     "tolerance": { "x": 0.01, "state.speed": 0.05, "*": 1e-9 },   per field, stream.field or any
 *     "metrics":   { "score": 2, "collision": 0.5 },               the largest allowed |b - a|
 *     "events":    { "collision": 0, "near_miss": 1 },             new events of a kind allowed in B
 *     "presence":  true                                            actors, presence and samples must match
 *   }
 *
 * Every field compared is a check: it passes when no sample differs beyond its tolerance (none:
 * bit for bit). Metrics and event kinds are checked only where named. `presence` (true when absent)
 * checks that both runs have the same actors, presence, streams and sample times.
 */
export interface Thresholds {
  tolerance?: Record<string, number>;
  metrics?: Record<string, number>;
  events?: Record<string, number>;
  presence?: boolean;
}

export interface GateCheck {
  /** `fields`, `metrics`, `events` or `presence`. */
  group: string;
  name: string;
  passed: boolean;
  /** What was found, for a person (and JUnit's failure message). */
  detail: string;
}

export interface GateResult {
  passed: boolean;
  checks: GateCheck[];
}

/** The thresholds in a file's text, checked: a wrong shape names the key and what was expected. */
export function parseThresholds(text: string, file: string): Thresholds {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw invalid(`${file}: not JSON (${(error as Error).message})`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw invalid(`${file}: expected an object with tolerance, metrics, events, presence`);
  const known = new Set(['tolerance', 'metrics', 'events', 'presence']);
  const out: Thresholds = {};
  for (const [key, v] of Object.entries(value)) {
    if (!known.has(key))
      throw invalid(`${file}: unknown key ${JSON.stringify(key)} (expected one of ${[...known].join(', ')})`);
    if (key === 'presence') {
      if (typeof v !== 'boolean')
        throw invalid(`${file}: presence: expected true or false, got ${JSON.stringify(v)}`);
      out.presence = v;
      continue;
    }
    if (typeof v !== 'object' || v === null || Array.isArray(v))
      throw invalid(`${file}: ${key}: expected an object of names to numbers`);
    const numbers: Record<string, number> = {};
    for (const [name, n] of Object.entries(v as Record<string, unknown>)) {
      if (typeof n !== 'number' || !Number.isFinite(n) || n < 0)
        throw invalid(`${file}: ${key}.${name}: expected a number 0 or more, got ${JSON.stringify(n)}`);
      numbers[name] = n;
    }
    out[key as 'tolerance' | 'metrics' | 'events'] = numbers;
  }
  return out;
}

/** Every check of the thresholds on a diff (made with the thresholds' tolerances). */
export function applyThresholds(diff: RunDiff, thresholds: Thresholds): GateResult {
  const checks: GateCheck[] = [];
  const firstOf = new Map<string, RunDiff['divergences'][number]>();
  for (const d of diff.divergences) {
    const key = `${d.stream.split('/').pop()}.${d.field}`;
    if (d.field !== 't' && !firstOf.has(key)) firstOf.set(key, d);
  }
  for (const { name, differing } of diff.streams.fields) {
    const d = firstOf.get(name);
    const first = d
      ? `; first at ${d.offset.toFixed(3)} s, ${d.actor ?? 'run'}: ${show(d.a)} vs ${show(d.b)}`
      : '';
    checks.push({
      group: 'fields',
      name,
      passed: differing === 0,
      detail: differing === 0 ? 'the same' : `${differing} samples differ${first}`,
    });
  }
  for (const [metric, allowed] of Object.entries(thresholds.metrics ?? {})) {
    const row = diff.scores?.find((r) => r.metric === metric);
    const delta = row?.delta ?? null;
    checks.push({
      group: 'metrics',
      name: metric,
      passed: delta !== null && Math.abs(delta) <= allowed,
      detail:
        delta === null
          ? `no ${metric} for ${row?.a === null || !row ? `run ${diff.a.id}` : `run ${diff.b.id}`} (run simrec eval on both)`
          : `${show(row!.a)} -> ${show(row!.b)}: change ${show(delta)}, at most ${allowed} allowed`,
    });
  }
  for (const [kind, allowed] of Object.entries(thresholds.events ?? {})) {
    const added = diff.events.onlyB.filter((e) => e.kind === kind);
    checks.push({
      group: 'events',
      name: kind,
      passed: added.length <= allowed,
      detail: `${added.length} new in run ${diff.b.id}, at most ${allowed} allowed${added.length ? `; first at ${added[0]!.offset.toFixed(3)} s (${added[0]!.actors.join(', ')})` : ''}`,
    });
  }
  if (thresholds.presence !== false) {
    const problems = [
      ...diff.actors.onlyA.map((x) => `${x} only in run ${diff.a.id}`),
      ...diff.actors.onlyB.map((x) => `${x} only in run ${diff.b.id}`),
      ...diff.actors.presence.map((p) => `${p.actor} present otherwise`),
      ...diff.streams.onlyA.map((x) => `stream ${x} only in run ${diff.a.id}`),
      ...diff.streams.onlyB.map((x) => `stream ${x} only in run ${diff.b.id}`),
      ...diff.streams.samples.map(
        (s) =>
          `${s.stream}: ${s.onlyA} samples only in run ${diff.a.id}, ${s.onlyB} only in run ${diff.b.id}`,
      ),
    ];
    checks.push({
      group: 'presence',
      name: 'actors, presence and sample times',
      passed: problems.length === 0,
      detail: problems.length
        ? problems.slice(0, 20).join('; ') +
          (problems.length > 20 ? `; and ${problems.length - 20} more` : '')
        : 'the same',
    });
  }
  return { passed: checks.every((c) => c.passed), checks };
}

const show = (v: unknown): string =>
  typeof v === 'number' ? String(Number(v.toPrecision(6))) : JSON.stringify(v);

const escapeXml = (text: string): string =>
  text.replace(
    /[<>&"']/g,
    (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' })[c]!,
  );

/** JUnit XML (the schema Jenkins, GitLab and GitHub's reporters read): a test case per check. */
export function junitXml(diff: RunDiff, gate: GateResult): string {
  const failures = gate.checks.filter((c) => !c.passed).length;
  const suite = `simrec diff ${diff.a.id} ${diff.b.id}`;
  const cases = gate.checks.map((c) => {
    const open = `    <testcase classname="${escapeXml(`${suite}.${c.group}`)}" name="${escapeXml(c.name)}" time="0">`;
    return c.passed
      ? `${open}</testcase>`
      : `${open}\n      <failure message="${escapeXml(c.detail)}" type="${escapeXml(c.group)}">${escapeXml(c.detail)}</failure>\n    </testcase>`;
  });
  return (
    `<?xml version="1.0" encoding="UTF-8"?>\n` +
    `<testsuites name="simrec diff" tests="${gate.checks.length}" failures="${failures}">\n` +
    `  <testsuite name="${escapeXml(suite)}" tests="${gate.checks.length}" failures="${failures}" errors="0" skipped="0">\n` +
    `${cases.join('\n')}\n` +
    `  </testsuite>\n</testsuites>\n`
  );
}
