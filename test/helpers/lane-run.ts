import { stateStream } from '../../src/model/standard-streams.js';
import type { RoadNetwork, RoadPoint } from '../../src/model/roadnet.js';
import type { StoreBackend } from '../../src/model/store-port.js';
import { RunRecorder } from '../../src/record/run-recorder.js';
import { readRoadNetworkFile } from '../../src/roadnet/read-roadnet.js';
import { attachRoadNetwork } from '../../src/roadnet/roadnet-attachment.js';

export const LANE_RUN_BEGIN = 1_750_000_000_000_000;
export const LANE_RUN_SECONDS = 10;

/** The point `s` metres along a polyline, and the heading there. */
export function along(line: readonly RoadPoint[], s: number): { x: number; y: number; yaw: number } {
  let rest = s;
  for (let i = 1; i < line.length; i++) {
    const a = line[i - 1]!;
    const b = line[i]!;
    const d = Math.hypot(b[0] - a[0], b[1] - a[1]);
    if (rest <= d || i === line.length - 1) {
      const u = d > 0 ? Math.min(1, rest / d) : 0;
      return {
        x: a[0] + (b[0] - a[0]) * u,
        y: a[1] + (b[1] - a[1]) * u,
        yaw: Math.atan2(b[1] - a[1], b[0] - a[0]),
      };
    }
    rest -= d;
  }
  const p = line[0]!;
  return { x: p[0], y: p[1], yaw: 0 };
}

/**
 * A run on a real road network: an ego and two vehicles driving along three lanes at 2 m/s for
 * 10 s, and the first traffic light green for 5 s then red. The network is attached to the run.
 */
export async function recordLaneRun(
  store: StoreBackend,
  netFile: string,
): Promise<{ runId: number; net: RoadNetwork; lanes: string[]; light: string | null }> {
  const { network: net } = await readRoadNetworkFile(netFile);
  const lanes = net.lanes.filter((l) => l.function === 'normal' && l.length > 25).slice(0, 3);
  const rec = await RunRecorder.begin(store, {
    simulator: { name: 'lane-run' },
    description: 'actors on lanes',
    begin: LANE_RUN_BEGIN,
  });
  const ids = lanes.map((_, i) => (i === 0 ? 'ego' : `car${i}`));
  await rec.declareActors(
    ids.map((id, i) => ({
      id,
      kind: i === 0 ? 'ego' : 'vehicle',
      extents: { length: 4.5, width: 1.8, height: 1.5 },
    })),
  );
  await rec.declareStreams(ids.map((id) => stateStream(id, { rateHz: 10 })));
  const light = net.trafficLights[0]?.id ?? null;
  const phase = net.trafficLights[0]?.programs[0]?.phases[0]?.state ?? '';
  if (light) {
    await rec.declareActor({ id: light, kind: 'traffic_light' });
    await rec.declareStream({ name: 'signal', actor: light, fields: [{ name: 'state', type: 'string' }] });
  }
  for (let step = 0; step <= LANE_RUN_SECONDS * 10; step++) {
    const t = LANE_RUN_BEGIN + step * 100_000;
    const frame = lanes.map((lane, i) => ({
      stream: `${ids[i]}/state`,
      samples: [{ t, step, ...along(lane.centerLine, 5 + step * 0.2), speed: 2 }],
    }));
    if (light)
      frame.push({
        stream: `${light}/signal`,
        samples: [{ t, step, state: (step < 50 ? 'G' : 'r').repeat(phase.length) } as never],
      });
    await rec.appendMany(frame);
  }
  await rec.end('completed');
  await attachRoadNetwork(store, rec.id, net);
  return { runId: rec.id, net, lanes: lanes.map((l) => l.id), light };
}
