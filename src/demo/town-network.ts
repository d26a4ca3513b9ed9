/**
 * The demo's default road network, generated here rather than copied: none of the fixture networks
 * has traffic lights or pedestrian areas, and the ones that ship with LimSim are GPL. It is written as
 * a SUMO .net.xml document and read back through simrec's own SUMO reader, so the run keeps a real
 * source text and the model is exactly what any other SUMO network would give.
 *
 * A grid of signalised crossroads, one lane each way (lane 1) with a sidewalk on the right (lane 0),
 * stubs out to dead ends on the fringe, a zebra crossing over every arm of every crossroads and a
 * walking area at every corner, each crossroads with a four-phase program and offsets for a green wave.
 */

type Vec = readonly [number, number];

export interface TownOptions {
  /** Crossroads west to east and south to north (default 3 x 2). */
  columns?: number;
  rows?: number;
  /** Metres between crossroads centres (default 160) and from the fringe crossroads to the dead ends (120). */
  block?: number;
  stub?: number;
  /** m/s (default 13.89, 50 km/h). */
  speed?: number;
}

const LANE_WIDTH = 3.2;
const SIDEWALK_WIDTH = 2;
/** From a crossroads centre to its stop lines. */
const BOX = 13;
const CROSSING_CENTRE = 10.5;
const CROSSING_WIDTH = 4;
const GREEN = 25;
const YELLOW = 3;
// Slower than SUMO's own turn speeds would allow, so that turning cars look like turning cars.
const RIGHT_TURN_SPEED = 6;
const LEFT_TURN_SPEED = 8;

const add = (a: Vec, b: Vec, k = 1): Vec => [a[0] + b[0] * k, a[1] + b[1] * k];
const sub = (a: Vec, b: Vec): Vec => [a[0] - b[0], a[1] - b[1]];
const unit = (v: Vec): Vec => {
  const l = Math.hypot(v[0], v[1]);
  return [v[0] / l, v[1] / l];
};
const leftOf = (v: Vec): Vec => [-v[1], v[0]];
const rightOf = (v: Vec): Vec => [v[1], -v[0]];
const fmt = (n: number): string => (Math.round(n * 100) / 100 + 0).toFixed(2);
const shape = (points: readonly Vec[]): string => points.map((p) => `${fmt(p[0])},${fmt(p[1])}`).join(' ');
const lineLength = (points: readonly Vec[]): number => {
  let l = 0;
  for (let i = 1; i < points.length; i++)
    l += Math.hypot(points[i]![0] - points[i - 1]![0], points[i]![1] - points[i - 1]![1]);
  return l;
};

/** Where two lines (point, direction) meet; the midpoint when they are parallel. */
function intersect(p: Vec, u: Vec, q: Vec, v: Vec): Vec {
  const det = u[0] * v[1] - u[1] * v[0];
  if (Math.abs(det) < 1e-9) return [(p[0] + q[0]) / 2, (p[1] + q[1]) / 2];
  const t = ((q[0] - p[0]) * v[1] - (q[1] - p[1]) * v[0]) / det;
  return add(p, u, t);
}

function bezier(p: Vec, c: Vec, q: Vec, segments = 10): Vec[] {
  const points: Vec[] = [];
  for (let i = 0; i <= segments; i++) {
    const t = i / segments;
    const a = (1 - t) * (1 - t);
    const b = 2 * (1 - t) * t;
    const d = t * t;
    points.push([a * p[0] + b * c[0] + d * q[0], a * p[1] + b * c[1] + d * q[1]]);
  }
  return points;
}

interface Node {
  id: string;
  at: Vec;
  signalised: boolean;
}

interface Edge {
  id: string;
  from: Node;
  to: Node;
  drive: Vec[];
  sidewalk: Vec[];
}

/** The network as SUMO .net.xml text. */
export function generateTownNetwork(options: TownOptions = {}): string {
  const columns = options.columns ?? 3;
  const rows = options.rows ?? 2;
  const block = options.block ?? 160;
  const stub = options.stub ?? 120;
  const speed = options.speed ?? 13.89;
  const nodes = new Map<string, Node>();
  const node = (id: string, at: Vec, signalised: boolean): Node => {
    const n = { id, at, signalised };
    nodes.set(id, n);
    return n;
  };
  const grid: Node[][] = [];
  for (let c = 0; c < columns; c++) {
    grid.push([]);
    for (let r = 0; r < rows; r++) grid[c]!.push(node(`J${c}_${r}`, [c * block, r * block], true));
  }
  const links: [Node, Node][] = [];
  for (let c = 0; c < columns; c++)
    for (let r = 0; r < rows; r++) {
      const here = grid[c]![r]!;
      if (c + 1 < columns) links.push([here, grid[c + 1]![r]!]);
      if (r + 1 < rows) links.push([here, grid[c]![r + 1]!]);
      if (c === 0) links.push([node(`W${r}`, [-stub, r * block], false), here]);
      if (c === columns - 1) links.push([here, node(`E${r}`, [c * block + stub, r * block], false)]);
      if (r === 0) links.push([node(`S${c}`, [c * block, -stub], false), here]);
      if (r === rows - 1) links.push([here, node(`N${c}`, [c * block, r * block + stub], false)]);
    }

  const edges: Edge[] = [];
  const makeEdge = (from: Node, to: Node): Edge => {
    const u = unit(sub(to.at, from.at));
    const r = rightOf(u);
    const start = add(from.at, u, from.signalised ? BOX : 0);
    const end = add(to.at, u, to.signalised ? -BOX : 0);
    const offset = (k: number): Vec[] => [add(start, r, k), add(end, r, k)];
    return {
      id: `${from.id}to${to.id}`,
      from,
      to,
      drive: offset(LANE_WIDTH / 2),
      sidewalk: offset(LANE_WIDTH + SIDEWALK_WIDTH / 2),
    };
  };
  for (const [a, b] of links) edges.push(makeEdge(a, b), makeEdge(b, a));

  const xml: string[] = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '',
    '<!-- generated by simrec (src/demo/town-network.ts): a grid of signalised crossroads with sidewalks, crossings and walking areas -->',
    '<net version="1.9" junctionCornerDetail="5" limitTurnSpeed="5.50">',
    `    <location netOffset="0.00,0.00" convBoundary="${[-stub, -stub, (columns - 1) * block + stub, (rows - 1) * block + stub].map(fmt).join(',')}" origBoundary="${[-stub, -stub, (columns - 1) * block + stub, (rows - 1) * block + stub].map(fmt).join(',')}" projParameter="!"/>`,
    '',
  ];
  const internalEdges: string[] = [];
  const junctionXml: string[] = [];
  const connections: string[] = [];
  const logics: string[] = [];
  const cycle = 2 * (GREEN + YELLOW);
  const travelTime = block / speed;

  const signalised = [...nodes.values()].filter((n) => n.signalised);
  for (const j of signalised) {
    const incoming = edges.filter((e) => e.to === j);
    const outgoing = edges.filter((e) => e.from === j);
    // Arms counter-clockwise from east: each arm is the neighbour's direction, with its two edges.
    const arms = incoming
      .map((inEdge) => {
        const a = unit(sub(inEdge.from.at, j.at));
        return {
          a,
          inEdge,
          outEdge: outgoing.find((o) => o.to === inEdge.from)!,
          angle: Math.atan2(a[1], a[0]),
        };
      })
      .sort((x, y) => ((x.angle + 2 * Math.PI) % (2 * Math.PI)) - ((y.angle + 2 * Math.PI) % (2 * Math.PI)));
    const northSouth = (a: Vec): boolean => Math.abs(a[1]) > Math.abs(a[0]);
    const vehicleLinks: { axisNS: boolean; dir: string; id: string }[] = [];
    const intLanes: string[] = [];
    let n = 0;
    for (const arm of arms) {
      const inDir = unit(sub(arm.inEdge.drive[1]!, arm.inEdge.drive[0]!));
      const p = arm.inEdge.drive[1]!;
      const turns = arms
        .filter((o) => o !== arm)
        .map((o) => {
          const outDir = unit(sub(o.outEdge.drive[1]!, o.outEdge.drive[0]!));
          const turn = Math.atan2(
            inDir[0] * outDir[1] - inDir[1] * outDir[0],
            inDir[0] * outDir[0] + inDir[1] * outDir[1],
          );
          const dir = Math.abs(turn) < 0.3 ? 's' : turn > 0 ? 'l' : 'r';
          return { o, outDir, dir, order: turn };
        })
        .sort((x, y) => x.order - y.order);
      for (const { o, outDir, dir } of turns) {
        const q = o.outEdge.drive[0]!;
        const line = dir === 's' ? [p, q] : bezier(p, intersect(p, inDir, q, outDir), q);
        const laneSpeed = dir === 's' ? speed : dir === 'r' ? RIGHT_TURN_SPEED : LEFT_TURN_SPEED;
        const id = `:${j.id}_${n}`;
        internalEdges.push(
          `    <edge id="${id}" function="internal">`,
          `        <lane id="${id}_0" index="0" disallow="pedestrian" speed="${fmt(laneSpeed)}" length="${fmt(lineLength(line))}" width="${fmt(LANE_WIDTH)}" shape="${shape(line)}"/>`,
          '    </edge>',
        );
        intLanes.push(`${id}_0`);
        connections.push(
          `    <connection from="${arm.inEdge.id}" to="${o.outEdge.id}" fromLane="1" toLane="1" via="${id}_0" tl="${j.id}" linkIndex="${n}" dir="${dir}" state="o"/>`,
          `    <connection from="${id}" to="${o.outEdge.id}" fromLane="0" toLane="1" dir="${dir}" state="M"/>`,
        );
        vehicleLinks.push({ axisNS: northSouth(arm.a), dir, id });
        n++;
      }
    }
    const crossingLinks: { axisNS: boolean }[] = [];
    arms.forEach((arm, i) => {
      const left = leftOf(arm.a);
      const centre = add(j.at, arm.a, CROSSING_CENTRE);
      const half = LANE_WIDTH + SIDEWALK_WIDTH / 2;
      const line = [add(centre, left, -half), add(centre, left, half)];
      const id = `:${j.id}_c${i}`;
      internalEdges.push(
        `    <edge id="${id}" function="crossing" crossingEdges="${arm.inEdge.id} ${arm.outEdge.id}">`,
        `        <lane id="${id}_0" index="0" allow="pedestrian" speed="1.00" length="${fmt(lineLength(line))}" width="${fmt(CROSSING_WIDTH)}" shape="${shape(line)}"/>`,
        '    </edge>',
      );
      intLanes.push(`${id}_0`);
      const prev = (i + arms.length - 1) % arms.length;
      connections.push(
        `    <connection from=":${j.id}_w${prev}" to="${id}" fromLane="0" toLane="0" tl="${j.id}" linkIndex="${n + i}" dir="s" state="o"/>`,
        `    <connection from="${id}" to=":${j.id}_w${i}" fromLane="0" toLane="0" dir="s" state="M"/>`,
      );
      crossingLinks.push({ axisNS: northSouth(arm.a) });
    });
    const walkingAreas: string[] = [];
    arms.forEach((arm, i) => {
      const next = arms[(i + 1) % arms.length]!;
      const l = leftOf(arm.a);
      const nl = leftOf(next.a);
      const inner = LANE_WIDTH;
      const outer = LANE_WIDTH + SIDEWALK_WIDTH;
      const polygon: Vec[] = [
        add(add(j.at, arm.a, CROSSING_CENTRE - CROSSING_WIDTH / 2), l, inner),
        add(add(j.at, arm.a, BOX), l, inner),
        add(add(j.at, arm.a, BOX), l, outer),
        add(add(j.at, next.a, BOX), nl, -outer),
        add(add(j.at, next.a, BOX), nl, -inner),
        add(add(j.at, next.a, CROSSING_CENTRE - CROSSING_WIDTH / 2), nl, -inner),
      ];
      const id = `:${j.id}_w${i}`;
      internalEdges.push(
        `    <edge id="${id}" function="walkingarea">`,
        `        <lane id="${id}_0" index="0" allow="pedestrian" speed="1.00" length="${fmt(BOX - CROSSING_CENTRE + SIDEWALK_WIDTH)}" width="${fmt(SIDEWALK_WIDTH)}" shape="${shape(polygon)}"/>`,
        '    </edge>',
      );
      walkingAreas.push(`${id}_0`);
      connections.push(
        `    <connection from="${arm.inEdge.id}" to="${id}" fromLane="0" toLane="0" dir="s" state="M"/>`,
        `    <connection from="${id}" to="${next.outEdge.id}" fromLane="0" toLane="0" dir="s" state="M"/>`,
      );
    });
    const outline: Vec[] = arms.flatMap((arm) => {
      const l = leftOf(arm.a);
      const end = add(j.at, arm.a, BOX);
      return [add(end, l, -(LANE_WIDTH + SIDEWALK_WIDTH)), add(end, l, LANE_WIDTH + SIDEWALK_WIDTH)];
    });
    const incLanes = [...arms.flatMap((a) => [`${a.inEdge.id}_0`, `${a.inEdge.id}_1`]), ...walkingAreas];
    junctionXml.push(
      `    <junction id="${j.id}" type="traffic_light" x="${fmt(j.at[0])}" y="${fmt(j.at[1])}" incLanes="${incLanes.join(' ')}" intLanes="${intLanes.join(' ')}" shape="${shape(outline)}"/>`,
    );
    const phase = (greenNS: boolean | null, yellowNS: boolean | null): string =>
      [
        ...vehicleLinks.map((v) =>
          greenNS !== null && v.axisNS === greenNS
            ? v.dir === 's'
              ? 'G'
              : 'g'
            : yellowNS !== null && v.axisNS === yellowNS
              ? 'y'
              : 'r',
        ),
        // Pedestrians cross the arms parallel to the traffic that has green.
        ...crossingLinks.map((c) => (greenNS !== null && c.axisNS !== greenNS ? 'G' : 'r')),
      ].join('');
    // Offsets make a green wave eastwards and northwards at the speed limit.
    const [c, r] = j.id.slice(1).split('_').map(Number) as [number, number];
    const offset = Math.round((c + r) * travelTime) % cycle;
    logics.push(
      `    <tlLogic id="${j.id}" type="static" programID="0" offset="${offset}">`,
      `        <phase duration="${GREEN}" state="${phase(false, null)}"/>`,
      `        <phase duration="${YELLOW}" state="${phase(null, false)}"/>`,
      `        <phase duration="${GREEN}" state="${phase(true, null)}"/>`,
      `        <phase duration="${YELLOW}" state="${phase(null, true)}"/>`,
      '    </tlLogic>',
    );
  }
  for (const d of [...nodes.values()].filter((x) => !x.signalised)) {
    const inc = edges.filter((e) => e.to === d).flatMap((e) => [`${e.id}_0`, `${e.id}_1`]);
    const out = edges.find((e) => e.from === d)!;
    const r = rightOf(unit(sub(out.to.at, d.at)));
    junctionXml.push(
      `    <junction id="${d.id}" type="dead_end" x="${fmt(d.at[0])}" y="${fmt(d.at[1])}" incLanes="${inc.join(' ')}" intLanes="" shape="${shape([add(d.at, r, LANE_WIDTH + SIDEWALK_WIDTH), add(d.at, r, -(LANE_WIDTH + SIDEWALK_WIDTH))])}"/>`,
    );
  }

  xml.push(...internalEdges);
  for (const e of edges) {
    const length = fmt(lineLength(e.drive));
    xml.push(
      `    <edge id="${e.id}" from="${e.from.id}" to="${e.to.id}" priority="1" type="town.street">`,
      `        <lane id="${e.id}_0" index="0" allow="pedestrian" speed="${fmt(speed)}" length="${length}" width="${fmt(SIDEWALK_WIDTH)}" shape="${shape(e.sidewalk)}"/>`,
      `        <lane id="${e.id}_1" index="1" disallow="pedestrian" speed="${fmt(speed)}" length="${length}" width="${fmt(LANE_WIDTH)}" shape="${shape(e.drive)}"/>`,
      '    </edge>',
    );
  }
  xml.push('', ...logics, '', ...junctionXml, '', ...connections, '</net>', '');
  return xml.join('\n');
}
