import type { LaneMark, RoadLane, RoadNetwork, RoadPoint } from '../model/roadnet.js';

/**
 * Lane borders drawn from the lanes themselves, for networks that declare no lane marks (SUMO's:
 * a SUMO lane is a centre line and a width). Each edge's lanes, side by side from the right (index
 * 0), share their borders: the rightmost lane's right edge and the leftmost lane's left edge are
 * solid lines, the borders between lanes dashed. Internal lanes, crossings and walking areas get none.
 */
export interface LaneBorder {
  mark: LaneMark;
  /** The lane it is the left border of, and the lane it is the right border of. */
  leftOf?: string;
  rightOf?: string;
}

/** The network's lane marks as borders, or, when it declares none, borders drawn from its lanes. */
export function laneBordersOf(network: RoadNetwork): LaneBorder[] {
  if (network.laneMarks.length)
    return network.laneMarks.map((mark) => ({
      mark,
      ...(mark.lane && mark.side === 'left' ? { leftOf: mark.lane } : {}),
      ...(mark.lane && mark.side === 'right' ? { rightOf: mark.lane } : {}),
    }));
  return drawnBorders(network);
}

function drawnBorders(network: RoadNetwork): LaneBorder[] {
  const byEdge = new Map<string, RoadLane[]>();
  for (const lane of network.lanes)
    if (lane.function === 'normal') byEdge.set(lane.edge, [...(byEdge.get(lane.edge) ?? []), lane]);
  const borders: LaneBorder[] = [];
  for (const [edge, lanes] of byEdge) {
    lanes.sort((a, b) => a.index - b.index);
    lanes.forEach((lane, i) => {
      if (lane.centerLine.length < 2) return;
      const mark = (side: 'left' | 'right', n: number, type: LaneMark['type']): LaneMark => ({
        id: `${edge}#${n}`,
        type,
        color: 'white',
        shape: offsetLine(lane.centerLine, ((side === 'left' ? 1 : -1) * lane.width) / 2),
        lane: lane.id,
        side,
      });
      if (i === 0) borders.push({ mark: mark('right', 0, 'solid'), rightOf: lane.id });
      const last = i === lanes.length - 1;
      const next = lanes[i + 1];
      borders.push({
        mark: mark('left', i + 1, last ? 'solid' : 'broken'),
        leftOf: lane.id,
        ...(next ? { rightOf: next.id } : {}),
      });
    });
  }
  return borders;
}

/** The polyline moved sideways by `by` metres (positive: to its left), each vertex along the mean normal. */
function offsetLine(line: readonly RoadPoint[], by: number): RoadPoint[] {
  const normal = (a: RoadPoint, b: RoadPoint): [number, number] => {
    const dx = b[0] - a[0];
    const dy = b[1] - a[1];
    const length = Math.hypot(dx, dy) || 1;
    return [-dy / length, dx / length];
  };
  return line.map((p, i) => {
    const before = i > 0 ? normal(line[i - 1]!, p) : undefined;
    const after = i < line.length - 1 ? normal(p, line[i + 1]!) : undefined;
    let [nx, ny] = before && after ? [before[0] + after[0], before[1] + after[1]] : (before ?? after)!;
    const length = Math.hypot(nx, ny) || 1;
    // A corner's offset point lies on the bisector, farther out the sharper the turn (capped at 2x).
    const cos = before && after ? Math.max(0.5, (before[0] * after[0] + before[1] * after[1] + 1) / 2) : 1;
    const scale = by / length / Math.sqrt(cos);
    [nx, ny] = [nx * scale, ny * scale];
    return p.length > 2 ? [p[0] + nx, p[1] + ny, p[2]!] : [p[0] + nx, p[1] + ny];
  });
}
