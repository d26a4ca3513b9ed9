import { SIGNAL_STREAM, STATE_FIELDS } from '../../model/standard-streams.js';
import type { FieldDecl } from '../../model/stream.js';
import { MICROS_PER_SECOND, wrapAngle } from '../../model/units.js';

/** LimSim steps SUMO at 0.1 s: frame f is f tenths of a second after simINFO.startTime. */
export const FRAME_MICROS = 100_000;
export const FRAME_HZ = MICROS_PER_SECOND / FRAME_MICROS;

export { SIGNAL_STREAM };
/** LimSim's stored evaluationINFO rows; simrec's own `simrec eval` writes `evaluation`. */
export const LIMSIM_EVALUATION_STREAM = 'limsim_evaluation';
export const EVALUATION_STREAM = 'evaluation';
export const LIMSIM_QA_STREAM = 'limsim_qa';
export const EVALUATION_COLUMNS = [
  'offset',
  'discomfort',
  'collision',
  'orientation',
  'consumption',
] as const;

/** A vehicle's state as LimSim's frameINFO has it: the standard state, plus LimSim's own columns. */
export const LIMSIM_STATE_FIELDS: FieldDecl[] = [
  ...STATE_FIELDS,
  {
    name: 'routeIdx',
    type: 'i32',
    optional: true,
    description: "LimSim: index into the vehicle's route (on a junction lane, the edge it came from)",
  },
  { name: 'vtag', type: 'string', optional: true, description: "LimSim's tag: ego, AoI or outOfAoI" },
  {
    name: 'yawTurns',
    type: 'i32',
    optional: true,
    description:
      "LimSim's yaw less yaw, in whole turns, when LimSim's is outside (90 - SUMO angle) degrees' range (-3pi/2, pi/2]",
  },
];

export const SIGNAL_FIELDS: FieldDecl[] = [
  {
    name: 'state',
    type: 'string',
    optional: true,
    description: 'the phase: one character per link index (r y g G o O u s); LimSim currPhase',
  },
  {
    name: 'nextPhase',
    type: 'string',
    optional: true,
    description: 'LimSim: the next phase in program order',
  },
  { name: 'switchTime', type: 'f64', unit: 's', optional: true, description: 'seconds to the next switch' },
];

/**
 * LimSim's yaw is (90 - SUMO angle) degrees in radians, with SUMO's angle in [0, 360): it lies in
 * (-3pi/2, pi/2], not wrapped to (-pi, pi]. Vehicles LimSim plans for get the planner's yaw, which can
 * be anything; the whole turns between the two are kept so an export writes LimSim's value back.
 */
export function limSimYaw(yaw: number, turns = 0): number {
  const inRange = yaw > Math.PI / 2 ? yaw - 2 * Math.PI : yaw;
  return turns === 0 ? inRange : inRange + 2 * Math.PI * turns;
}

export function yawFromLimSim(raw: number): { yaw: number; turns: number } {
  const yaw = wrapAngle(raw);
  const turns = Math.round((raw - limSimYaw(yaw)) / (2 * Math.PI));
  return { yaw, turns };
}
