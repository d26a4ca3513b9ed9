/**
 * DI-drive's bird's-eye view, drawn from a simrec scene with DI-drive's own geometry
 * (core/utils/simulator_utils/map_utils.py `BeVWrapper`/`ModuleWorld`, carla_utils.py `get_birdview`):
 *
 * - The map is drawn at `pixels_per_meter` 5 on a square of 320 / 0.9 pixels whose centre lies
 *   `pixels_ahead_vehicle` 100 pixels ahead of the hero; that square is rotated so the hero heads up
 *   and zoomed by 0.9 (pygame `rotozoom`) into the 320 x 320 image. So the image has 4.5 pixels a
 *   metre, the hero sits at column 160, row 250, and its left is the image's left.
 * - `get_birdview` stacks nine 0/1 channels: road, lane lines, red, yellow and green lights (the
 *   traffic surface's R, G and B), vehicles, pedestrians, hero, route. DI-drive's collectors keep the
 *   first seven in the LMDB (`birdview[..., :7]` in demo/lbc/lbc_collect_data.py and the latent-RL
 *   env); LBC's loaders reshape `birdview_%05d` to 320 x 320 x 7.
 * - Sizes as map_utils draws them at 5 pixels a metre: the road is every driving lane's polygon plus
 *   its 10-pixel outline (1 m more on each side); lane lines 2 pixels (0.4 m) wide, broken ones 1 m
 *   drawn and 2 m left out (20 waypoints 0.05 m apart, every third run); a light a disc of
 *   `world_to_pixel_width(1.5)` = 7 pixels (1.4 m); actors their bounding boxes; the route a line half
 *   a lane wide.
 *
 * Coordinates here are simrec's (x east, y north, yaw counter-clockwise); CARLA's mirrored y and its
 * clockwise yaw give the same picture, since the view is drawn relative to the hero.
 */
import type { RoadPoint } from '../../model/roadnet.js';

export const BIRDVIEW_SIZE = 320;
/** BeVWrapper's defaults, and what DI-drive's LBC configs set: the `obs` entry metainfo.json carries. */
export const BIRDVIEW_OBS = { type: 'bev', size: [320, 320], pixels_per_meter: 5, pixels_ahead_vehicle: 100 };
const ROTOZOOM = 0.9;
export const BIRDVIEW_PIXELS_PER_METER = BIRDVIEW_OBS.pixels_per_meter * ROTOZOOM;
export const HERO_COLUMN = BIRDVIEW_SIZE / 2;
export const HERO_ROW = BIRDVIEW_SIZE / 2 + BIRDVIEW_OBS.pixels_ahead_vehicle * ROTOZOOM;

export const CHANNELS = [
  'road',
  'lane',
  'red_light',
  'yellow_light',
  'green_light',
  'vehicle',
  'pedestrian',
  'hero',
  'route',
] as const;
export type Channel = (typeof CHANNELS)[number];
export const CHANNEL = Object.fromEntries(CHANNELS.map((c, i) => [c, i])) as Record<Channel, number>;
/** What DI-drive's collectors store per frame: the first seven channels. */
export const LMDB_CHANNELS = 7;

/** Widths and radii in metres, from map_utils' pixel sizes at 5 pixels a metre. */
const ROAD_OUTLINE = 1;
const LANE_LINE_WIDTH = 0.4;
const DASH_ON = 1;
const DASH_OFF = 2;
const LIGHT_RADIUS = 1.4;

export interface Pose {
  x: number;
  y: number;
  /** Radians, counter-clockwise from +x. */
  yaw: number;
}

export interface BoxActor extends Pose {
  length: number;
  width: number;
}

export interface BirdviewScene {
  hero: BoxActor;
  /** Driving lanes: centre line and width, whether their borders are lane lines, broken or solid. */
  lanes: {
    centerLine: RoadPoint[];
    width: number;
    leftLine?: 'solid' | 'broken';
    rightLine?: 'solid' | 'broken';
  }[];
  /** Junction areas, part of the road. */
  areas: RoadPoint[][];
  vehicles: BoxActor[];
  pedestrians: BoxActor[];
  lights: { x: number; y: number; channel: 'red_light' | 'yellow_light' | 'green_light' }[];
  /** Where the hero is going, and the width of the line drawn along it. */
  route: { points: RoadPoint[]; width: number };
}

/** A 320 x 320 x 9 image, row-major with the channels interleaved (numpy's HWC), values 0 or 1. */
export class Birdview {
  readonly data = new Uint8Array(BIRDVIEW_SIZE * BIRDVIEW_SIZE * CHANNELS.length);

  at(channel: Channel, column: number, row: number): number {
    return this.data[(row * BIRDVIEW_SIZE + column) * CHANNELS.length + CHANNEL[channel]]!;
  }

  /** How many pixels of a channel are set. */
  count(channel: Channel): number {
    let n = 0;
    for (let i = CHANNEL[channel]; i < this.data.length; i += CHANNELS.length) n += this.data[i]!;
    return n;
  }

  /** The bytes of DI-drive's `birdview_%05d` LMDB value: uint8 320 x 320 x 7. */
  lmdbValue(): Uint8Array {
    const n = BIRDVIEW_SIZE * BIRDVIEW_SIZE;
    const out = new Uint8Array(n * LMDB_CHANNELS);
    for (let p = 0; p < n; p++)
      for (let c = 0; c < LMDB_CHANNELS; c++)
        out[p * LMDB_CHANNELS + c] = this.data[p * CHANNELS.length + c]!;
    return out;
  }

  /** An RGB picture with DI-drive's `visualize_birdview` colours, later channels drawn over earlier. */
  rgb(): Uint8Array {
    const n = BIRDVIEW_SIZE * BIRDVIEW_SIZE;
    const out = new Uint8Array(n * 3);
    for (let p = 0; p < n; p++)
      for (let c = 0; c < CHANNELS.length; c++)
        if (this.data[p * CHANNELS.length + c]) out.set(VISUAL_COLOURS[c]!, p * 3);
    return out;
  }
}

/** carla_utils.py `visualize_birdview`'s colours, channel by channel. */
export const VISUAL_COLOURS: readonly (readonly [number, number, number])[] = [
  [85, 87, 83],
  [211, 215, 207],
  [255, 0, 0],
  [255, 255, 0],
  [0, 255, 0],
  [252, 175, 62],
  [173, 74, 168],
  [32, 74, 207],
  [41, 239, 41],
];

/** Where a world point falls in the image: fractional column and row. */
export function toPixel(hero: Pose, x: number, y: number): [number, number] {
  const dx = x - hero.x;
  const dy = y - hero.y;
  const c = Math.cos(hero.yaw);
  const s = Math.sin(hero.yaw);
  const forward = dx * c + dy * s;
  const left = -dx * s + dy * c;
  return [HERO_COLUMN - left * BIRDVIEW_PIXELS_PER_METER, HERO_ROW - forward * BIRDVIEW_PIXELS_PER_METER];
}

/** Farther than this from the hero nothing can reach the image (its far corner is ~66 m away). */
const VIEW_RADIUS = Math.hypot(HERO_COLUMN, HERO_ROW) / BIRDVIEW_PIXELS_PER_METER + 5;

export function renderBirdview(scene: BirdviewScene): Birdview {
  const view = new Birdview();
  const canvas = new Canvas(view, scene.hero);
  for (const lane of scene.lanes) {
    if (!canvas.near(lane.centerLine)) continue;
    canvas.line(CHANNEL.road, lane.centerLine, lane.width / 2 + ROAD_OUTLINE);
  }
  for (const area of scene.areas) if (canvas.near(area)) canvas.polygon(CHANNEL.road, area);
  for (const lane of scene.lanes) {
    if (!canvas.near(lane.centerLine)) continue;
    for (const [side, kind] of [
      [1, lane.leftLine],
      [-1, lane.rightLine],
    ] as const) {
      if (!kind) continue;
      const border = offsetLine(lane.centerLine, (side * lane.width) / 2);
      const pieces = kind === 'solid' ? [border] : dashes(border, DASH_ON, DASH_OFF);
      for (const piece of pieces) canvas.line(CHANNEL.lane, piece, LANE_LINE_WIDTH / 2);
    }
  }
  for (const light of scene.lights) canvas.disc(CHANNEL[light.channel], light.x, light.y, LIGHT_RADIUS);
  for (const v of scene.vehicles) canvas.polygon(CHANNEL.vehicle, boxCorners(v));
  for (const p of scene.pedestrians) canvas.polygon(CHANNEL.pedestrian, boxCorners(p));
  canvas.polygon(CHANNEL.hero, boxCorners(scene.hero));
  if (scene.route.points.length > 1) canvas.line(CHANNEL.route, scene.route.points, scene.route.width / 2);
  return view;
}

export function boxCorners(b: BoxActor): RoadPoint[] {
  const c = Math.cos(b.yaw);
  const s = Math.sin(b.yaw);
  const hl = b.length / 2;
  const hw = b.width / 2;
  return [
    [hl, hw],
    [hl, -hw],
    [-hl, -hw],
    [-hl, hw],
  ].map(([f, l]) => [b.x + f! * c - l! * s, b.y + f! * s + l! * c] as RoadPoint);
}

/** The polyline moved sideways by `offset` metres (positive: to the left of its direction). */
export function offsetLine(points: RoadPoint[], offset: number): RoadPoint[] {
  return points.map((p, i) => {
    const a = points[Math.max(0, i - 1)]!;
    const b = points[Math.min(points.length - 1, i + 1)]!;
    const dx = b[0] - a[0];
    const dy = b[1] - a[1];
    const n = Math.hypot(dx, dy) || 1;
    return [p[0] - (dy / n) * offset, p[1] + (dx / n) * offset] as RoadPoint;
  });
}

/** Pieces of the polyline `on` metres long with `off` metres left out between them. */
function dashes(points: RoadPoint[], on: number, off: number): RoadPoint[][] {
  const out: RoadPoint[][] = [];
  let current: RoadPoint[] | null = [points[0]!];
  let along = 0;
  let nextSwitch = on;
  for (let i = 1; i < points.length; i++) {
    const a = points[i - 1]!;
    const b = points[i]!;
    const length = Math.hypot(b[0] - a[0], b[1] - a[1]);
    let done = 0;
    while (along + (length - done) >= nextSwitch) {
      const k = (done + nextSwitch - along) / length;
      const p: RoadPoint = [a[0] + (b[0] - a[0]) * k, a[1] + (b[1] - a[1]) * k];
      done += nextSwitch - along;
      along = nextSwitch;
      if (current) {
        current.push(p);
        out.push(current);
        current = null;
        nextSwitch += off;
      } else {
        current = [p];
        nextSwitch += on;
      }
    }
    along += length - done;
    if (current) current.push(b);
  }
  if (current && current.length > 1) out.push(current);
  return out;
}

/** Fills pixels whose centres (integer column, row) lie inside shapes given in world metres. */
class Canvas {
  private readonly view: Birdview;
  private readonly hero: Pose;

  constructor(view: Birdview, hero: Pose) {
    this.view = view;
    this.hero = hero;
  }

  near(points: RoadPoint[]): boolean {
    return points.some((p) => Math.hypot(p[0] - this.hero.x, p[1] - this.hero.y) < VIEW_RADIUS + 50);
  }

  /** A polyline `half` metres either side, with round joints and ends as pygame's wide lines nearly are. */
  line(channel: number, points: RoadPoint[], half: number): void {
    for (let i = 1; i < points.length; i++) {
      const a = points[i - 1]!;
      const b = points[i]!;
      const dx = b[0] - a[0];
      const dy = b[1] - a[1];
      const n = Math.hypot(dx, dy);
      if (n === 0) continue;
      const ox = (-dy / n) * half;
      const oy = (dx / n) * half;
      this.polygon(channel, [
        [a[0] + ox, a[1] + oy],
        [b[0] + ox, b[1] + oy],
        [b[0] - ox, b[1] - oy],
        [a[0] - ox, a[1] - oy],
      ]);
    }
    for (const p of points) this.disc(channel, p[0], p[1], half);
  }

  disc(channel: number, x: number, y: number, radius: number): void {
    const [cx, cy] = toPixel(this.hero, x, y);
    const r = radius * BIRDVIEW_PIXELS_PER_METER;
    for (
      let row = Math.max(0, Math.ceil(cy - r));
      row <= Math.min(BIRDVIEW_SIZE - 1, Math.floor(cy + r));
      row++
    ) {
      const h = Math.sqrt(Math.max(0, r * r - (row - cy) ** 2));
      this.span(channel, row, cx - h, cx + h);
    }
  }

  /** Even-odd scanline fill of a polygon (closed implicitly). */
  polygon(channel: number, points: RoadPoint[]): void {
    const px = points.map((p) => toPixel(this.hero, p[0], p[1]));
    let top = Infinity;
    let bottom = -Infinity;
    for (const [, r] of px) {
      top = Math.min(top, r);
      bottom = Math.max(bottom, r);
    }
    const first = Math.max(0, Math.ceil(top));
    const last = Math.min(BIRDVIEW_SIZE - 1, Math.floor(bottom));
    const crossings: number[] = [];
    for (let row = first; row <= last; row++) {
      crossings.length = 0;
      for (let i = 0; i < px.length; i++) {
        const [x0, y0] = px[i]!;
        const [x1, y1] = px[(i + 1) % px.length]!;
        if (y0 <= row === y1 <= row) continue;
        crossings.push(x0 + ((row - y0) / (y1 - y0)) * (x1 - x0));
      }
      crossings.sort((a, b) => a - b);
      for (let k = 0; k + 1 < crossings.length; k += 2)
        this.span(channel, row, crossings[k]!, crossings[k + 1]!);
    }
  }

  private span(channel: number, row: number, from: number, to: number): void {
    const a = Math.max(0, Math.ceil(from));
    const b = Math.min(BIRDVIEW_SIZE - 1, Math.floor(to));
    const stride = CHANNELS.length;
    for (let col = a; col <= b; col++) this.view.data[(row * BIRDVIEW_SIZE + col) * stride + channel] = 1;
  }
}
