import type { ActorInfo, RoadNetwork } from './api.js';
import { el, formatQuantity } from './format.js';
import type { Pose } from './playback-data.js';

/** Actor colours: LimSim's ego orange and vehicle blue, so its users find their way at once. */
export const KIND_COLORS: Record<string, string> = {
  ego: 'rgb(211,84,0)',
  vehicle: 'rgb(41,128,185)',
  pedestrian: 'rgb(39,174,96)',
  cyclist: 'rgb(142,68,173)',
};
export const OTHER_COLOR = 'rgb(127,140,141)';
export const LIGHT_COLORS: Record<string, string> = {
  r: '#e74c3c',
  y: '#f1c40f',
  g: '#2ecc71',
  G: '#27ae60',
  u: '#e67e22',
  o: '#95a5a6',
  O: '#95a5a6',
  s: '#c0392b',
};

/** The light states a legend names (SUMO's characters, as LimSim and simrec store them). */
export const LIGHT_NAMES: [string, string][] = [
  ['r', 'red'],
  ['y', 'yellow'],
  ['G', 'green (priority)'],
  ['g', 'green (yield), dashed'],
  ['o', 'off'],
];

/**
 * States drawn dashed, in metres drawn and left out: a green that must yield (SUMO's `g`) is told from
 * a green with priority (`G`) by its gaps, not by a shade of green alone.
 */
export const LIGHT_DASHES: Record<string, [number, number]> = { g: [1.2, 0.8] };

/**
 * Actors are never drawn smaller than this on screen (px): a car at true size is a few pixels when a
 * whole network is in view. Far out the minimum shrinks, so the roads still show between the actors.
 */
const MIN_PX = { near: { length: 14, width: 7 }, far: { length: 8, width: 4 } };
/** Below this zoom (px per metre) the `far` minimum applies. */
const FAR_SCALE = 1;
/** How far into the junction a light's state is drawn (m), from the stop line: a stub, not the whole path. */
const LIGHT_STUB_METRES = 4;

/** The first `metres` of a polyline. */
function head(points: readonly (readonly number[])[], metres: number): number[][] {
  const out: number[][] = [[points[0]![0]!, points[0]![1]!]];
  let left = metres;
  for (let i = 1; i < points.length && left > 0; i++) {
    const [ax, ay] = [points[i - 1]![0]!, points[i - 1]![1]!];
    const [bx, by] = [points[i]![0]!, points[i]![1]!];
    const d = Math.hypot(bx - ax, by - ay);
    if (d <= left) out.push([bx, by]);
    else out.push([ax + ((bx - ax) * left) / d, ay + ((by - ay) * left) / d]);
    left -= d;
  }
  return out;
}

/** A round length for a scale bar: 1, 2 or 5 times a power of ten, about `target` metres or less. */
export function niceLength(target: number): number {
  const p = 10 ** Math.floor(Math.log10(target));
  return [5, 2, 1].map((m) => m * p).find((v) => v <= target) ?? p;
}

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

/**
 * The world's transform, then an actor's pose: what translate() and rotate() inside a save() would make,
 * set at once (a save and a restore per actor copied the context's whole state at every frame).
 */
function setPoseTransform(ctx: CanvasRenderingContext2D, world: DOMMatrix, pose: Pose): void {
  const cos = Math.cos(pose.yaw);
  const sin = Math.sin(pose.yaw);
  ctx.setTransform(
    world.a * cos + world.c * sin,
    world.b * cos + world.d * sin,
    world.c * cos - world.a * sin,
    world.d * cos - world.b * sin,
    world.a * pose.x + world.c * pose.y + world.e,
    world.b * pose.x + world.d * pose.y + world.f,
  );
}

export interface MapState {
  /** The moment drawn (microseconds since the epoch). */
  t: number;
  poses: Map<string, Pose>;
  actors: Map<string, ActorInfo>;
  selected: string | null;
  /** Actors to ring (those of the event picked in the list). */
  highlighted: Set<string>;
  lightStates: Map<string, string>;
  trails: Map<string, [number, number][]>;
  futures: Map<string, [number, number][]>;
  /** Another run's actors at the same time from its start (a comparison), drawn as outlines. */
  ghosts?: Map<string, Pose>;
  ghostActors?: Map<string, ActorInfo>;
}

/** The zoom (px per metre) that shows [min, max] in `width` x `height` pixels, with a margin. */
function fittedScale(min: [number, number], max: [number, number], width: number, height: number): number {
  return Math.max(
    0.05,
    Math.min(width / Math.max(1, max[0] - min[0]), height / Math.max(1, max[1] - min[1])) * 0.9,
  );
}

/** Outlines of the other run's actors in a comparison (compare-panel.ts uses it for its line too). */
export const GHOST_COLOR = '#ff4fd8';

/** The top-down map: road network, traffic-light colours and actors as oriented boxes; pan and zoom. */
export class MapView {
  readonly canvas: HTMLCanvasElement;
  private readonly ctx: CanvasRenderingContext2D;
  private road: RoadLayer | null = null;
  /** The roads drawn for one view (RoadLayer without its lights), and that view's key. */
  private roadImage: { ctx: CanvasRenderingContext2D; view: string } | null = null;
  /** The view the last frame was drawn at. */
  private lastView = '';
  /** How many times the road network was drawn (a view held still draws it once: the tests check). */
  roadsPainted = 0;
  /** World -> screen: screen = (world - center) * scale, y flipped (north up). */
  center = { x: 0, y: 0 };
  scale = 4;
  follow: string | null = null;
  onSelect: (actor: string | null) => void = () => {};
  /** The user moved or zoomed the map (so a follow is dropped, and a link can say where). */
  onMove: () => void = () => {};
  /** Hover: an actor's id, kind and speed beside the pointer. */
  readonly tooltip = el('div', { class: 'map-tooltip', 'data-testid': 'map-tooltip', hidden: '' });
  private state: MapState | null = null;
  private bounds: { min: [number, number]; max: [number, number] } | null = null;
  /** What the last frame drew, for the tests that read the map back: labels and the scale bar. */
  drawn = { labels: [] as string[], scaleBar: { metres: 0, pixels: 0 } };
  /**
   * The canvas's size in CSS pixels as the ResizeObserver last saw it (null before it first has). Read
   * from the canvas at every frame, it forced the page's layout: a frame changes the page's text (the
   * time, the inspector) before the map draws, so each read laid the page out again, three times a
   * frame while playing (performance-history.md).
   */
  private laidOut: { width: number; height: number } | null = null;
  /**
   * What the map was last fitted to, until the user moves or zooms it: every size the canvas is laid
   * out at fits it again, so the panels that arrive after a page opens, or a window made smaller,
   * leave everything still in view. A fit asked for before the first layout takes its scale there
   * (reading the size sooner would lay the page out once more than its first frame needs).
   */
  private fitted: { min: [number, number]; max: [number, number] } | null = null;
  /** Whether the last state given (render) is yet to be drawn. */
  private stateToDraw = false;
  /** A state given with `render` was drawn (at once, or at the canvas's first layout). */
  onDrawn: (state: MapState) => void = () => {};

  constructor(canvas: HTMLCanvasElement) {
    this.canvas = canvas;
    this.ctx = canvas.getContext('2d')!;
    let drag: { x: number; y: number; moved: boolean } | null = null;
    canvas.addEventListener('pointerdown', (e) => {
      drag = { x: e.clientX, y: e.clientY, moved: false };
      canvas.setPointerCapture(e.pointerId);
    });
    canvas.addEventListener('pointermove', (e) => {
      if (!drag) {
        this.hover(e.offsetX, e.offsetY);
        return;
      }
      const dx = e.clientX - drag.x;
      const dy = e.clientY - drag.y;
      if (Math.abs(dx) + Math.abs(dy) > 2) drag.moved = true;
      if (!drag.moved) return;
      this.center.x -= dx / this.scale;
      this.center.y += dy / this.scale;
      drag.x = e.clientX;
      drag.y = e.clientY;
      this.follow = null;
      this.fitted = null;
      this.tooltip.hidden = true;
      this.draw();
      this.onMove();
    });
    canvas.addEventListener('pointerleave', () => (this.tooltip.hidden = true));
    canvas.addEventListener('pointerup', (e) => {
      if (drag && !drag.moved) this.onSelect(this.actorAt(e.offsetX, e.offsetY));
      drag = null;
    });
    canvas.addEventListener(
      'wheel',
      (e) => {
        e.preventDefault();
        this.zoom(Math.exp(-e.deltaY * 0.001), e.offsetX, e.offsetY);
      },
      { passive: false },
    );
    new ResizeObserver((entries) => {
      const box = entries[entries.length - 1]!.contentRect;
      this.resize(box.width, box.height);
    }).observe(canvas);
  }

  /** Called by the ResizeObserver with the size it observed: nothing is read from the page. */
  private resize(width: number, height: number): void {
    this.laidOut = { width, height };
    this.applyFit();
    const ratio = window.devicePixelRatio || 1;
    this.canvas.width = Math.max(1, Math.round(this.laidOut.width * ratio));
    this.canvas.height = Math.max(1, Math.round(this.laidOut.height * ratio));
    this.draw();
  }

  /** The canvas's width in CSS pixels (read from it only before the first layout was observed). */
  private get width(): number {
    return this.laidOut?.width ?? this.canvas.clientWidth;
  }

  private get height(): number {
    return this.laidOut?.height ?? this.canvas.clientHeight;
  }

  /** Zooms by `factor` about a screen point (the centre by default), keeping that point still. */
  zoom(factor: number, sx = this.width / 2, sy = this.height / 2): void {
    const before = this.toWorld(sx, sy);
    this.fitted = null;
    this.scale = Math.min(200, Math.max(0.05, this.scale * factor));
    const after = this.toWorld(sx, sy);
    this.center.x += before.x - after.x;
    this.center.y += before.y - after.y;
    this.draw();
    this.onMove();
  }

  private hover(sx: number, sy: number): void {
    const id = this.actorAt(sx, sy);
    const pose = id ? this.state?.poses.get(id) : undefined;
    if (!id || !pose) {
      this.tooltip.hidden = true;
      return;
    }
    const kind = this.state?.actors.get(id)?.kind ?? 'other';
    this.tooltip.replaceChildren(el('b', {}, id), ` · ${kind} · ${formatQuantity(pose.speed, 'm/s')}`);
    Object.assign(this.tooltip.style, { left: `${sx + 14}px`, top: `${sy + 10}px` });
    this.tooltip.hidden = false;
  }

  toWorld(sx: number, sy: number): { x: number; y: number } {
    return {
      x: this.center.x + (sx - this.width / 2) / this.scale,
      y: this.center.y - (sy - this.height / 2) / this.scale,
    };
  }

  toScreen(x: number, y: number): { x: number; y: number } {
    return {
      x: (x - this.center.x) * this.scale + this.width / 2,
      y: -(y - this.center.y) * this.scale + this.height / 2,
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
          path: polyline(head(l.centerLine, LIGHT_STUB_METRES)),
          width: Math.min(l.width || 3.2, 0.8),
          ...viaLight.get(l.id)!,
        })),
    };
    if (this.roadImage) this.roadImage.view = ''; // drawn for the network before
    this.bounds = { min: net.boundary.min, max: net.boundary.max };
    this.fit(net.boundary.min, net.boundary.max);
  }

  get hasSignals(): boolean {
    return (this.road?.signalled.length ?? 0) > 0;
  }

  /**
   * Everything in view: the road network, or without one the actors present now (at least 40 m
   * across). The Fit button and the `f` key.
   */
  fitAll(): void {
    this.follow = null;
    if (this.bounds) this.fit(this.bounds.min, this.bounds.max);
    else {
      const poses = [...(this.state?.poses.values() ?? [])];
      if (!poses.length) return;
      const xs = poses.map((p) => p.x);
      const ys = poses.map((p) => p.y);
      const cx = (Math.min(...xs) + Math.max(...xs)) / 2;
      const cy = (Math.min(...ys) + Math.max(...ys)) / 2;
      const half = Math.max(
        20,
        (Math.max(...xs) - Math.min(...xs)) / 2,
        (Math.max(...ys) - Math.min(...ys)) / 2,
      );
      this.fit([cx - half, cy - half], [cx + half, cy + half]);
    }
    this.draw();
    this.onMove();
  }

  fit(min: [number, number], max: [number, number]): void {
    this.center = { x: (min[0] + max[0]) / 2, y: (min[1] + max[1]) / 2 };
    this.fitted = { min, max };
    if (!this.awaitingLayout()) this.applyFit();
  }

  /**
   * The fit's scale at the size the map draws at (the one `toScreen` uses): a size the page has
   * taken since is fitted again when the ResizeObserver reports it, before that frame is painted.
   */
  private applyFit(): void {
    if (!this.fitted) return;
    const { min, max } = this.fitted;
    this.scale = fittedScale(min, max, this.width || 800, this.height || 600);
  }

  /** Centres the map on a point, zoomed in to at least `minScale`: the user's view from then on. */
  lookAt(x: number, y: number, minScale: number): void {
    this.follow = null;
    this.fitted = null;
    this.center = { x, y };
    this.scale = Math.max(this.scale, minScale);
  }

  /**
   * Whether the canvas is in the page and not laid out yet: what it would draw now has no size to be
   * drawn at (its backing store is still the default), and the ResizeObserver draws it at the first
   * layout. A canvas out of the page draws as it is asked (nothing observes it).
   */
  private awaitingLayout(): boolean {
    return this.laidOut === null && this.canvas.isConnected;
  }

  render(state: MapState): void {
    this.state = state;
    this.stateToDraw = true;
    if (this.follow) {
      const pose = state.poses.get(this.follow);
      if (pose) {
        this.center = { x: pose.x, y: pose.y };
        this.fitted = null;
      }
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

  /** Draws now, unless the canvas awaits its first layout (which draws it). */
  draw(): void {
    if (this.awaitingLayout()) return;
    this.drawNow();
    if (this.stateToDraw && this.state) {
      this.stateToDraw = false;
      this.onDrawn(this.state);
    }
  }

  private drawNow(): void {
    const { ctx, canvas } = this;
    const ratio = window.devicePixelRatio || 1;
    const view = `${canvas.width}x${canvas.height} ${this.width}x${this.height} ${ratio} ${this.scale} ${this.center.x},${this.center.y}`;
    // A view held since the last frame has its roads drawn once into an image, copied at each frame
    // after: a town's lanes and marks do not change while a run plays, and stroking them again at every
    // frame was a page's largest drawing. A view that moves at every frame (following the ego) draws
    // them directly, as an image would be drawn anew at each frame.
    if (this.road && (this.roadImage?.view === view || this.lastView === view)) this.copyRoads(view, ratio);
    else this.paintRoads(ctx, ratio);
    this.lastView = view;
    this.setWorldTransform(ctx, ratio);
    const px = 1 / this.scale;
    if (this.road) {
      ctx.lineCap = 'butt';
      ctx.lineJoin = 'round';
      const lights = this.state?.lightStates;
      for (const s of this.road.signalled) {
        const ch = lights?.get(s.light)?.[s.index];
        if (!ch) continue;
        ctx.strokeStyle = LIGHT_COLORS[ch] ?? '#888';
        ctx.lineWidth = Math.max(s.width, 2 * px);
        ctx.setLineDash(LIGHT_DASHES[ch] ?? []);
        ctx.stroke(s.path);
      }
      ctx.setLineDash([]);
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
    const min = this.scale >= FAR_SCALE ? MIN_PX.near : MIN_PX.far;
    const world = ctx.getTransform();
    for (const [id, pose] of state.poses) {
      const actor = state.actors.get(id);
      const kind = actor?.kind ?? 'other';
      const length = actor?.extents?.length || (kind === 'pedestrian' ? 0.6 : 4.5);
      const width = actor?.extents?.width || (kind === 'pedestrian' ? 0.6 : 1.9);
      setPoseTransform(ctx, world, pose);
      // True size when zoomed in; never smaller than a readable few pixels.
      const l = Math.max(length, min.length * px);
      const w = Math.max(width, min.width * px);
      ctx.fillStyle = KIND_COLORS[kind] ?? OTHER_COLOR;
      ctx.strokeStyle = 'rgba(0,0,0,0.6)';
      ctx.lineWidth = px;
      if (kind === 'pedestrian') {
        ctx.beginPath();
        ctx.arc(0, 0, w / 2, 0, 2 * Math.PI);
        ctx.fill();
        ctx.stroke();
      } else {
        ctx.fillRect(-l / 2, -w / 2, l, w);
        ctx.strokeRect(-l / 2, -w / 2, l, w);
        // The front: a light band, so the heading shows at any size.
        const nose = Math.max(Math.min(0.8, l / 4), 3 * px);
        ctx.fillStyle = 'rgba(255,255,255,0.75)';
        ctx.fillRect(l / 2 - nose, -w / 2, nose, w);
      }
      if (id === state.selected) {
        ctx.strokeStyle = '#ffffff';
        ctx.lineWidth = 2 * px;
        ctx.strokeRect(-l / 2 - 3 * px, -w / 2 - 3 * px, l + 6 * px, w + 6 * px);
      }
      if (state.highlighted.has(id)) {
        ctx.strokeStyle = '#f1c40f';
        ctx.lineWidth = 2 * px;
        ctx.beginPath();
        ctx.arc(0, 0, Math.max(l, w) / 2 + 6 * px, 0, 2 * Math.PI);
        ctx.stroke();
      }
    }
    ctx.setTransform(world);
    if (state.ghosts) {
      ctx.strokeStyle = GHOST_COLOR;
      ctx.lineWidth = 2 * px;
      for (const [id, pose] of state.ghosts) {
        const actor = state.ghostActors?.get(id) ?? state.actors.get(id);
        const kind = actor?.kind ?? 'other';
        const l = Math.max(actor?.extents?.length || (kind === 'pedestrian' ? 0.6 : 4.5), min.length * px);
        const w = Math.max(actor?.extents?.width || (kind === 'pedestrian' ? 0.6 : 1.9), min.width * px);
        setPoseTransform(ctx, world, pose);
        ctx.strokeRect(-l / 2, -w / 2, l, w);
      }
      ctx.setTransform(world);
    }
    this.drawOverlay(state);
  }

  /** World (metres, north up) to device pixels. */
  private setWorldTransform(target: CanvasRenderingContext2D, ratio: number): void {
    target.setTransform(
      this.scale * ratio,
      0,
      0,
      -this.scale * ratio,
      (this.width / 2 - this.center.x * this.scale) * ratio,
      (this.height / 2 + this.center.y * this.scale) * ratio,
    );
  }

  /** Copies the roads drawn for `view` onto the map, drawing them into the image first if need be. */
  private copyRoads(view: string, ratio: number): void {
    const { canvas, ctx } = this;
    this.roadImage ??= { ctx: document.createElement('canvas').getContext('2d')!, view: '' };
    const image = this.roadImage;
    if (image.view !== view) {
      if (image.ctx.canvas.width !== canvas.width || image.ctx.canvas.height !== canvas.height) {
        image.ctx.canvas.width = canvas.width;
        image.ctx.canvas.height = canvas.height;
      }
      this.paintRoads(image.ctx, ratio);
      image.view = view;
    }
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.drawImage(image.ctx.canvas, 0, 0);
  }

  /** The background and the road network, its lights left out (they change from frame to frame). */
  private paintRoads(target: CanvasRenderingContext2D, ratio: number): void {
    target.setTransform(1, 0, 0, 1, 0, 0);
    target.fillStyle = '#1e2326';
    target.fillRect(0, 0, target.canvas.width, target.canvas.height);
    if (!this.road) return;
    this.roadsPainted++;
    this.setWorldTransform(target, ratio);
    const px = 1 / this.scale;
    target.lineCap = 'butt';
    target.lineJoin = 'round';
    target.fillStyle = '#4a5055';
    for (const j of this.road.junctions) target.fill(j);
    for (const lane of this.road.lanes) {
      target.strokeStyle = lane.kind === 'walkingarea' || lane.kind === 'crossing' ? '#6b7378' : '#4a5055';
      // Never thinner than 2 px: zoomed out, the network still shows under its traffic.
      target.lineWidth = Math.max(lane.width, 2 * px);
      target.stroke(lane.path);
    }
    target.strokeStyle = '#d8d8d8';
    for (const mark of this.road.marks) {
      target.lineWidth = Math.max(0.12, px);
      target.setLineDash(mark.dashed ? [3, 6] : []);
      target.stroke(mark.path);
    }
    target.setLineDash([]);
  }

  /** Screen-space marks: the labels of the ego and the selected actor, and the scale bar. */
  private drawOverlay(state: MapState): void {
    const { ctx } = this;
    const ratio = window.devicePixelRatio || 1;
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.font = '12px system-ui, sans-serif';
    ctx.textBaseline = 'middle';
    this.drawn.labels = [];
    const labelled = new Set<string>();
    for (const [id, a] of state.actors) if (a.kind === 'ego') labelled.add(id);
    if (state.selected) labelled.add(state.selected);
    for (const id of state.highlighted) labelled.add(id);
    for (const id of labelled) {
      const pose = state.poses.get(id);
      if (!pose) continue;
      const p = this.toScreen(pose.x, pose.y);
      const text = id;
      const w = ctx.measureText(text).width;
      ctx.fillStyle = 'rgba(0,0,0,0.65)';
      ctx.fillRect(p.x + 10, p.y - 17, w + 8, 16);
      ctx.fillStyle = '#fff';
      ctx.fillText(text, p.x + 14, p.y - 9);
      this.drawn.labels.push(id);
    }
    // Scale bar, bottom left: a round length near 120 px.
    const metres = niceLength(120 / this.scale);
    const pixels = metres * this.scale;
    const x0 = 12;
    const y0 = this.height - 16;
    ctx.strokeStyle = '#e6e6e6';
    ctx.lineWidth = 2;
    ctx.beginPath();
    ctx.moveTo(x0, y0 - 5);
    ctx.lineTo(x0, y0);
    ctx.lineTo(x0 + pixels, y0);
    ctx.lineTo(x0 + pixels, y0 - 5);
    ctx.stroke();
    ctx.fillStyle = '#e6e6e6';
    ctx.fillText(metres >= 1000 ? `${metres / 1000} km` : `${metres} m`, x0 + pixels + 6, y0 - 2);
    this.drawn.scaleBar = { metres, pixels };
  }
}
