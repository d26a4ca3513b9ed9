import type { ActorInfo, RoadNetwork } from './api.js';
import type { Pose } from './playback-data.js';

/** Actor colours: LimSim's ego orange and vehicle blue, so its users find their way at once. */
export const KIND_COLORS: Record<string, string> = {
  ego: 'rgb(211,84,0)',
  vehicle: 'rgb(41,128,185)',
  pedestrian: 'rgb(39,174,96)',
  cyclist: 'rgb(142,68,173)',
};
const OTHER_COLOR = 'rgb(127,140,141)';
const LIGHT_COLORS: Record<string, string> = {
  r: '#e74c3c',
  y: '#f1c40f',
  g: '#2ecc71',
  G: '#27ae60',
  u: '#e67e22',
  o: '#95a5a6',
  O: '#95a5a6',
  s: '#c0392b',
};

interface RoadLayer {
  lanes: { path: Path2D; width: number; kind: string }[];
  junctions: Path2D[];
  marks: { path: Path2D; dashed: boolean; double: boolean }[];
  /** Junction lanes controlled by a traffic light: which light and which character of its state. */
  signalled: { path: Path2D; width: number; light: string; index: number }[];
}

function polyline(points: readonly (readonly number[])[], close = false): Path2D {
  const path = new Path2D();
  points.forEach((p, i) => (i === 0 ? path.moveTo(p[0]!, p[1]!) : path.lineTo(p[0]!, p[1]!)));
  if (close) path.closePath();
  return path;
}

export interface MapState {
  poses: Map<string, Pose>;
  actors: Map<string, ActorInfo>;
  selected: string | null;
  lightStates: Map<string, string>;
  trails: Map<string, [number, number][]>;
  futures: Map<string, [number, number][]>;
}

/** The top-down map: road network, traffic-light colours and actors as oriented boxes; pan and zoom. */
export class MapView {
  readonly canvas: HTMLCanvasElement;
  private readonly ctx: CanvasRenderingContext2D;
  private road: RoadLayer | null = null;
  /** World -> screen: screen = (world - center) * scale, y flipped (north up). */
  center = { x: 0, y: 0 };
  scale = 4;
  follow: string | null = null;
  onSelect: (actor: string | null) => void = () => {};
  private state: MapState | null = null;

  constructor(canvas: HTMLCanvasElement) {
    this.canvas = canvas;
    this.ctx = canvas.getContext('2d')!;
    let drag: { x: number; y: number; moved: boolean } | null = null;
    canvas.addEventListener('pointerdown', (e) => {
      drag = { x: e.clientX, y: e.clientY, moved: false };
      canvas.setPointerCapture(e.pointerId);
    });
    canvas.addEventListener('pointermove', (e) => {
      if (!drag) return;
      const dx = e.clientX - drag.x;
      const dy = e.clientY - drag.y;
      if (Math.abs(dx) + Math.abs(dy) > 2) drag.moved = true;
      if (!drag.moved) return;
      this.center.x -= dx / this.scale;
      this.center.y += dy / this.scale;
      drag.x = e.clientX;
      drag.y = e.clientY;
      this.follow = null;
      this.draw();
    });
    canvas.addEventListener('pointerup', (e) => {
      if (drag && !drag.moved) this.onSelect(this.actorAt(e.offsetX, e.offsetY));
      drag = null;
    });
    canvas.addEventListener(
      'wheel',
      (e) => {
        e.preventDefault();
        const before = this.toWorld(e.offsetX, e.offsetY);
        this.scale = Math.min(200, Math.max(0.05, this.scale * Math.exp(-e.deltaY * 0.001)));
        const after = this.toWorld(e.offsetX, e.offsetY);
        this.center.x += before.x - after.x;
        this.center.y += before.y - after.y;
        this.draw();
      },
      { passive: false },
    );
    new ResizeObserver(() => this.resize()).observe(canvas);
  }

  private resize(): void {
    const ratio = window.devicePixelRatio || 1;
    this.canvas.width = Math.max(1, Math.round(this.canvas.clientWidth * ratio));
    this.canvas.height = Math.max(1, Math.round(this.canvas.clientHeight * ratio));
    this.draw();
  }

  toWorld(sx: number, sy: number): { x: number; y: number } {
    return {
      x: this.center.x + (sx - this.canvas.clientWidth / 2) / this.scale,
      y: this.center.y - (sy - this.canvas.clientHeight / 2) / this.scale,
    };
  }

  toScreen(x: number, y: number): { x: number; y: number } {
    return {
      x: (x - this.center.x) * this.scale + this.canvas.clientWidth / 2,
      y: -(y - this.center.y) * this.scale + this.canvas.clientHeight / 2,
    };
  }

  setRoad(net: RoadNetwork): void {
    const viaLight = new Map<string, { light: string; index: number }>();
    for (const c of net.connections)
      if (c.trafficLight !== undefined && c.linkIndex !== undefined)
        viaLight.set(c.via ?? c.fromLane, { light: c.trafficLight, index: c.linkIndex });
    this.road = {
      lanes: net.lanes
        .filter((l) => l.centerLine.length > 1)
        .map((l) => ({ path: polyline(l.centerLine), width: l.width || 3.2, kind: l.function })),
      junctions: net.junctions.filter((j) => j.outline.length > 2).map((j) => polyline(j.outline, true)),
      marks: net.laneMarks
        .filter((m) => m.shape.length > 1)
        .map((m) => ({
          path: polyline(m.shape),
          dashed: m.type.startsWith('broken') || m.type === 'botts_dots',
          double: m.type.includes('_') && m.type !== 'botts_dots',
        })),
      signalled: net.lanes
        .filter((l) => viaLight.has(l.id) && l.centerLine.length > 1)
        .map((l) => ({
          path: polyline(l.centerLine),
          width: Math.min(l.width || 3.2, 1.5),
          ...viaLight.get(l.id)!,
        })),
    };
    this.fit(net.boundary.min, net.boundary.max);
  }

  fit(min: [number, number], max: [number, number]): void {
    this.center = { x: (min[0] + max[0]) / 2, y: (min[1] + max[1]) / 2 };
    const w = this.canvas.clientWidth || 800;
    const h = this.canvas.clientHeight || 600;
    this.scale = Math.max(
      0.05,
      Math.min(w / Math.max(1, max[0] - min[0]), h / Math.max(1, max[1] - min[1])) * 0.9,
    );
  }

  render(state: MapState): void {
    this.state = state;
    if (this.follow) {
      const pose = state.poses.get(this.follow);
      if (pose) this.center = { x: pose.x, y: pose.y };
    }
    this.draw();
  }

  private actorAt(sx: number, sy: number): string | null {
    if (!this.state) return null;
    const p = this.toWorld(sx, sy);
    let best: string | null = null;
    let bestDistance = Math.max(3, 8 / this.scale);
    for (const [id, pose] of this.state.poses) {
      const d = Math.hypot(pose.x - p.x, pose.y - p.y);
      if (d < bestDistance) {
        best = id;
        bestDistance = d;
      }
    }
    return best;
  }

  draw(): void {
    const { ctx, canvas } = this;
    const ratio = window.devicePixelRatio || 1;
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.fillStyle = '#1e2326';
    ctx.fillRect(0, 0, canvas.width, canvas.height);
    // World transform: metres to device pixels, north up.
    ctx.setTransform(
      this.scale * ratio,
      0,
      0,
      -this.scale * ratio,
      (canvas.clientWidth / 2 - this.center.x * this.scale) * ratio,
      (canvas.clientHeight / 2 + this.center.y * this.scale) * ratio,
    );
    const px = 1 / this.scale;
    if (this.road) {
      ctx.lineCap = 'butt';
      ctx.lineJoin = 'round';
      ctx.fillStyle = '#4a5055';
      for (const j of this.road.junctions) ctx.fill(j);
      for (const lane of this.road.lanes) {
        ctx.strokeStyle = lane.kind === 'walkingarea' || lane.kind === 'crossing' ? '#6b7378' : '#4a5055';
        ctx.lineWidth = lane.width;
        ctx.stroke(lane.path);
      }
      ctx.strokeStyle = '#d8d8d8';
      for (const mark of this.road.marks) {
        ctx.lineWidth = Math.max(0.12, px);
        ctx.setLineDash(mark.dashed ? [3, 6] : []);
        ctx.stroke(mark.path);
      }
      ctx.setLineDash([]);
      const lights = this.state?.lightStates;
      for (const s of this.road.signalled) {
        const ch = lights?.get(s.light)?.[s.index];
        if (!ch) continue;
        ctx.strokeStyle = LIGHT_COLORS[ch] ?? '#888';
        ctx.lineWidth = s.width;
        ctx.stroke(s.path);
      }
    }
    const state = this.state;
    if (!state) return;
    const drawPath = (points: [number, number][], color: string, dash: number[]): void => {
      if (points.length < 2) return;
      ctx.strokeStyle = color;
      ctx.lineWidth = Math.max(0.3, 2 * px);
      ctx.setLineDash(dash.map((d) => d * px));
      ctx.stroke(polyline(points));
      ctx.setLineDash([]);
    };
    for (const [, points] of state.trails) drawPath(points, 'rgba(255,255,255,0.35)', []);
    for (const [, points] of state.futures) drawPath(points, 'rgba(241,196,15,0.8)', [6, 4]);
    for (const [id, pose] of state.poses) {
      const actor = state.actors.get(id);
      const kind = actor?.kind ?? 'other';
      const length = actor?.extents?.length || (kind === 'pedestrian' ? 0.6 : 4.5);
      const width = actor?.extents?.width || (kind === 'pedestrian' ? 0.6 : 1.9);
      ctx.save();
      ctx.translate(pose.x, pose.y);
      ctx.rotate(pose.yaw);
      // Never smaller than a few pixels, so a whole city still shows where its actors are.
      const l = Math.max(length, 4 * px);
      const w = Math.max(width, 3 * px);
      ctx.fillStyle = KIND_COLORS[kind] ?? OTHER_COLOR;
      if (kind === 'pedestrian') {
        ctx.beginPath();
        ctx.arc(0, 0, w / 2, 0, 2 * Math.PI);
        ctx.fill();
      } else {
        ctx.fillRect(-l / 2, -w / 2, l, w);
        ctx.fillStyle = 'rgba(255,255,255,0.7)';
        ctx.fillRect(l / 2 - Math.min(0.8, l / 4), -w / 2, Math.min(0.8, l / 4), w);
      }
      if (id === state.selected) {
        ctx.strokeStyle = '#ffffff';
        ctx.lineWidth = 2 * px;
        ctx.strokeRect(-l / 2 - 3 * px, -w / 2 - 3 * px, l + 6 * px, w + 6 * px);
      }
      ctx.restore();
    }
  }
}
