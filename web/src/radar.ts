import { el } from './format.js';

/** LimSim's five evaluation axes, in its order. */
export const RADAR_AXES = ['offset', 'discomfort', 'collision', 'orientation', 'consumption'] as const;

/** LimSim's radar: five axes, four rings, each value in [1, 4] (normalised for display). */
export class Radar {
  readonly canvas = el('canvas', { width: '220', height: '200', 'data-testid': 'radar' });

  draw(values: Partial<Record<(typeof RADAR_AXES)[number], number>>): void {
    const ctx = this.canvas.getContext('2d')!;
    const cx = 110;
    const cy = 105;
    const ring = 20;
    ctx.clearRect(0, 0, 220, 200);
    ctx.strokeStyle = '#555';
    ctx.fillStyle = '#aaa';
    ctx.font = '10px sans-serif';
    const angle = (i: number): number => -Math.PI / 2 + (i * 2 * Math.PI) / RADAR_AXES.length;
    for (let r = 1; r <= 4; r++) {
      ctx.beginPath();
      RADAR_AXES.forEach((_, i) =>
        ctx.lineTo(cx + Math.cos(angle(i)) * r * ring, cy + Math.sin(angle(i)) * r * ring),
      );
      ctx.closePath();
      ctx.stroke();
    }
    RADAR_AXES.forEach((axis, i) =>
      ctx.fillText(axis, cx + Math.cos(angle(i)) * 88 - 24, cy + Math.sin(angle(i)) * 92 + 3),
    );
    ctx.beginPath();
    RADAR_AXES.forEach((axis, i) => {
      const v = Math.min(4, Math.max(1, values[axis] ?? 1));
      ctx.lineTo(cx + Math.cos(angle(i)) * v * ring, cy + Math.sin(angle(i)) * v * ring);
    });
    ctx.closePath();
    ctx.fillStyle = 'rgba(52,152,219,0.4)';
    ctx.fill();
    ctx.strokeStyle = '#3498db';
    ctx.stroke();
  }
}
