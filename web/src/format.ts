export const seconds = (micros: number): string => (micros / 1e6).toFixed(2);
export const date = (micros: number): string =>
  new Date(micros / 1000).toISOString().replace('T', ' ').slice(0, 19);
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  ...children: (Node | string)[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  node.append(...children);
  return node;
}

/**
 * A number as people read it: four significant digits (a float32's `4.519999980926514` is 4.52),
 * integers whole, and values of 1e-9 and below (float noise around zero) written in exponent form
 * rather than as a row of zeros.
 */
export function formatNumber(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  if (Number.isInteger(v) && Math.abs(v) < 1e15) return String(v);
  const abs = Math.abs(v);
  if (abs !== 0 && (abs < 1e-3 || abs >= 1e7)) return v.toExponential(2);
  return String(Number(v.toPrecision(4)));
}

/** Units as the model writes them (docs/architecture.md) (`m/s^2`), printed with superscripts (`m/s²`). */
export function formatUnit(unit: string | undefined): string {
  if (!unit || unit === '1') return '';
  return unit.replace(/\^(-?\d)/g, (_, d: string) =>
    [...d].map((c) => '⁰¹²³⁴⁵⁶⁷⁸⁹'[Number(c)] ?? (c === '-' ? '⁻' : c)).join(''),
  );
}

/**
 * A value with its unit, and what a person would rather read beside the SI value: degrees beside
 * radians, km/h beside m/s.
 */
export function formatQuantity(v: unknown, unit?: string): string {
  if (typeof v !== 'number') return formatValue(v);
  const shown = `${formatNumber(v)}${unit && unit !== '1' ? ` ${formatUnit(unit)}` : ''}`;
  if (unit === 'rad') return `${shown} (${formatNumber((v * 180) / Math.PI)}°)`;
  if (unit === 'm/s') return `${shown} (${formatNumber(v * 3.6)} km/h)`;
  return shown;
}

export const formatValue = (v: unknown): string =>
  typeof v === 'number'
    ? formatNumber(v)
    : Array.isArray(v) && v.every((x) => typeof x === 'number')
      ? `[${v.map(formatNumber).join(', ')}]`
      : typeof v === 'object' && v !== null
        ? JSON.stringify(v, (_, x: unknown) => (typeof x === 'number' ? Number(formatNumber(x)) : x))
        : String(v);

/**
 * Resolves once the browser has painted its next frame (a task after that frame's rendering): work
 * the first frame need not wait for goes after it.
 */
export function afterNextPaint(): Promise<void> {
  return new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
}
