import { RunRecorder } from '../record/run-recorder.js';
import { controlStream, stateStream, wheelsStream } from '../model/standard-streams.js';
import type { RunInfo } from '../model/run.js';
import type { StoreBackend } from '../model/store-port.js';
import type { Sample } from '../model/stream.js';
import { MICROS_PER_SECOND, wrapAngle } from '../model/units.js';

export interface SyntheticRunOptions {
  /** Simulated seconds. */
  duration?: number;
  /** Samples per simulated second. */
  rateHz?: number;
  vehicles?: number;
  /** Called after each simulated second with the fraction done. */
  onProgress?: (fraction: number) => void;
}

const RING_RADIUS = 60; // m

/**
 * A small synthetic run recorded through the public recording API: an ego and a few vehicles
 * circling a ring road at different speeds, a pedestrian pacing along the kerb, and a traffic light.
 * It stands in for the demo traffic simulation until that lands; it exercises every field type.
 */
export async function recordSyntheticRun(
  store: StoreBackend,
  options: SyntheticRunOptions = {},
): Promise<RunInfo> {
  const duration = options.duration ?? 60;
  const rateHz = options.rateHz ?? 10;
  const vehicleCount = options.vehicles ?? 5;
  const dt = 1 / rateHz;
  const recorder = await RunRecorder.begin(store, {
    simulator: { name: 'simrec-demo', version: '0.1.0' },
    description: `synthetic ring road: ego, ${vehicleCount} vehicles, a pedestrian, a traffic light`,
    metadata: { town: 'ring', weather: 'clear', seed: 1, rateHz },
  });
  const car = { length: 4.6, width: 1.9, height: 1.5 };
  await recorder.declareActors([
    {
      id: 'ego',
      kind: 'ego',
      sourceClass: 'vehicle.demo.sedan',
      extents: car,
      attributes: { mass: 1500, wheels: 4, maxSpeed: 20 },
    },
    ...Array.from({ length: vehicleCount }, (_, i) => ({
      id: `veh${i + 1}`,
      kind: 'vehicle',
      sourceClass: 'vehicle.demo.sedan',
      extents: car,
      attributes: { vType: 'passenger', maxSpeed: 16 },
    })),
    { id: 'ped1', kind: 'pedestrian', extents: { length: 0.5, width: 0.5, height: 1.8 } },
    { id: 'tl1', kind: 'traffic_light', attributes: { position: [RING_RADIUS, 0] } },
  ]);
  const vehicleIds = ['ego', ...Array.from({ length: vehicleCount }, (_, i) => `veh${i + 1}`)];
  await recorder.declareStreams([
    ...vehicleIds.map((id) => stateStream(id, { rateHz })),
    stateStream('ped1', { rateHz }),
    controlStream('ego', { rateHz }),
    wheelsStream('ego', { rateHz }),
    {
      name: 'phase',
      actor: 'tl1',
      fields: [
        { name: 'state', type: 'string' },
        { name: 'timeToSwitch', type: 'f64', unit: 's' },
      ],
    },
  ]);

  const begin = recorder.run.begin;
  const steps = Math.round(duration * rateHz);
  for (let step = 0; step <= steps; step++) {
    const seconds = step * dt;
    const t = begin + Math.round(seconds * MICROS_PER_SECOND);
    const frame: { stream: string; samples: Sample[] }[] = [];
    vehicleIds.forEach((id, i) => {
      const speed = 8 + 1.5 * i + Math.sin(seconds / 7 + i); // m/s
      const angularSpeed = speed / RING_RADIUS;
      const phase0 = (2 * Math.PI * i) / vehicleIds.length;
      const theta =
        phase0 +
        (8 + 1.5 * i) * (seconds / RING_RADIUS) -
        (7 / RING_RADIUS) * (Math.cos(seconds / 7 + i) - Math.cos(i));
      const accel = Math.cos(seconds / 7 + i) / 7;
      frame.push({
        stream: `${id}/state`,
        samples: [
          {
            t,
            step,
            x: RING_RADIUS * Math.cos(theta),
            y: RING_RADIUS * Math.sin(theta),
            z: 0.5 * Math.sin(theta),
            yaw: wrapAngle(theta + Math.PI / 2),
            speed,
            vx: -speed * Math.sin(theta),
            vy: speed * Math.cos(theta),
            accel,
            wz: angularSpeed,
            lane: 'ring_0',
            lanePos: (((theta % (2 * Math.PI)) + 2 * Math.PI) % (2 * Math.PI)) * RING_RADIUS,
          },
        ],
      });
      if (id === 'ego') {
        const throttle = Math.max(0, Math.min(1, 0.3 + accel));
        frame.push({
          stream: 'ego/control',
          samples: [
            { t, step, throttle, brake: accel < -0.1 ? -accel : 0, steer: 0.08, gear: 3, handbrake: false },
          ],
        });
        const wheelSpeed = speed / 0.33;
        frame.push({
          stream: 'ego/wheels',
          samples: [
            {
              t,
              step,
              wheels: ['fl', 'fr', 'rl', 'rr'].map((position, w) => ({
                position,
                angularVelocity: wheelSpeed * (w % 2 === 0 ? 0.99 : 1.01),
                torque: 120 * throttle,
                brakeTorque: 0,
                steer: w < 2 ? 0.04 : 0,
                suspension: 0.12 + 0.005 * Math.sin(seconds * 3 + w),
                slipLong: 0.01,
                slipLat: 0.002,
              })),
            },
          ],
        });
      }
    });
    const pedX = RING_RADIUS + 6;
    const pedY = 10 * Math.sin(seconds / 6);
    frame.push({
      stream: 'ped1/state',
      samples: [
        {
          t,
          step,
          x: pedX,
          y: pedY,
          yaw: Math.cos(seconds / 6) >= 0 ? Math.PI / 2 : -Math.PI / 2,
          speed: Math.abs((10 / 6) * Math.cos(seconds / 6)),
        },
      ],
    });
    const cycle = seconds % 30;
    const state = cycle < 15 ? 'G' : cycle < 18 ? 'y' : 'r';
    frame.push({
      stream: 'tl1/phase',
      samples: [
        { t, step, state, timeToSwitch: cycle < 15 ? 15 - cycle : cycle < 18 ? 18 - cycle : 30 - cycle },
      ],
    });
    void recorder.appendMany(frame); // not awaited, as a simulator appends: end reports a failed write
    if (step % rateHz === 0) options.onProgress?.(step / steps);
  }
  return recorder.end('scenario_stop_trigger');
}
