/** How commands print: JSON for machines, aligned tables for people, progress only on a terminal. */

import { toJson } from '../model/json.js';

export function printJson(value: unknown): void {
  process.stdout.write(`${toJson(value)}\n`);
}

export function formatTable(headers: string[], rows: unknown[][]): string {
  const cells = rows.map((row) => row.map((v) => (v === null || v === undefined ? '-' : String(v))));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((r) => r[i]?.length ?? 0)));
  const line = (values: string[]): string =>
    values
      .map((v, i) => v.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(headers), ...cells.map(line)].join('\n');
}

export function printTable(headers: string[], rows: unknown[][]): void {
  process.stdout.write(`${formatTable(headers, rows)}\n`);
}

export const formatTime = (micros: number | null): string =>
  micros === null ? '-' : new Date(micros / 1000).toISOString();
export const formatSeconds = (micros: number | null): string =>
  micros === null ? '-' : (micros / 1e6).toFixed(3);
export const formatNumber = (v: unknown): string =>
  typeof v === 'number'
    ? Number.isInteger(v)
      ? String(v)
      : v.toFixed(3)
    : Array.isArray(v) || (typeof v === 'object' && v !== null)
      ? JSON.stringify(v)
      : String(v);

/**
 * A one-line progress indicator on stderr, drawn only when stderr is a terminal, so piped output and
 * CI logs stay clean.
 */
export class Progress {
  private readonly enabled = Boolean(process.stderr.isTTY) && !process.env.CI;
  private lastDraw = 0;
  private readonly label: string;
  constructor(label: string) {
    this.label = label;
  }

  update(fraction: number, detail = ''): void {
    if (!this.enabled) return;
    const now = Date.now();
    if (now - this.lastDraw < 100 && fraction < 1) return;
    this.lastDraw = now;
    const width = 30;
    const filled = Math.round(Math.max(0, Math.min(1, fraction)) * width);
    process.stderr.write(
      `\r${this.label} [${'#'.repeat(filled)}${' '.repeat(width - filled)}] ${(fraction * 100).toFixed(0).padStart(3)}% ${detail}`,
    );
  }

  done(): void {
    if (this.enabled && this.lastDraw > 0) process.stderr.write('\n');
    this.lastDraw = 0;
  }
}
