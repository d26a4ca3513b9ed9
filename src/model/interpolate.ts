import type { FieldDecl, Sample } from './stream.js';
import { lerpAngle } from './units.js';

/** Linear interpolation of numeric fields; fields in radians along the shorter arc; others held. */
export function interpolateSample(a: Sample, b: Sample, t: number, fields: readonly FieldDecl[]): Sample {
  if (b.t <= a.t) return a;
  const u = (t - a.t) / (b.t - a.t);
  const out: Sample = { ...a, t };
  const unitOf = new Map(fields.map((f) => [f.name, f.unit]));
  for (const key in a) {
    if (key === 't' || key === 'step') continue;
    const va = a[key];
    const vb = b[key];
    if (typeof va !== 'number' || typeof vb !== 'number') continue;
    out[key] = unitOf.get(key) === 'rad' ? lerpAngle(va, vb, u) : va + (vb - va) * u;
  }
  return out;
}
