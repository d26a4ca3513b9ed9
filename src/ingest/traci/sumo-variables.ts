import type { JsonObject } from '../../model/json.js';
import { VAR, type TraciValue } from './traci-protocol.js';

/*
 * What simrec asks of SUMO: the variables it subscribes to, each step or once, and how their answers
 * become an actor's attributes.
 */

/** The simulation's own, each step: its time and step length, departures, arrivals, what is left. */
export const SIMULATION_VARS = [
  VAR.TIME,
  VAR.DELTA_T,
  VAR.DEPARTED_VEHICLES_IDS,
  VAR.MIN_EXPECTED_VEHICLES,
  VAR.DEPARTED_PERSONS_IDS,
  VAR.ARRIVED_VEHICLES_IDS,
  VAR.ARRIVED_PERSONS_IDS,
  VAR.TELEPORT_STARTING_VEHICLES_IDS,
];

/** What says, in a step's simulation results, that actors left the road during it. */
export const ARRIVAL_VARS = [
  VAR.ARRIVED_VEHICLES_IDS,
  VAR.ARRIVED_PERSONS_IDS,
  VAR.TELEPORT_STARTING_VEHICLES_IDS,
] as const;

export const VEHICLE_VARS = [
  VAR.POSITION3D,
  VAR.ANGLE,
  VAR.SPEED,
  VAR.ACCELERATION,
  VAR.LANE_ID,
  VAR.LANEPOSITION,
  VAR.ROUTE_INDEX,
  VAR.SIGNALS,
];
/**
 * Asked once, when a vehicle departs: its whole route and its type, whose limits LimSim's recorder keeps
 * in vehicleINFO (routes, maxAccel, maxDecel, maxSpeed) and its planner needs, and its own speed factor
 * (drawn by SUMO from its type's speedFactor and speedDev: it drives up to that times a lane's limit),
 * which the evaluator's speeding events respect.
 */
export const VEHICLE_ONCE_VARS = [VAR.EDGES, VAR.TYPE, VAR.SPEED_FACTOR];
/**
 * Asked once per vehicle type, when its first vehicle departs: its limits and size, which every vehicle
 * of the type shares (kept as each vehicle's attributes and extents).
 */
export const TYPE_VARS = [VAR.ACCEL, VAR.DECEL, VAR.MAXSPEED, VAR.LENGTH, VAR.WIDTH, VAR.VEHICLECLASS];
export const PERSON_VARS = [VAR.POSITION3D, VAR.ANGLE, VAR.SPEED, VAR.TYPE, VAR.LENGTH, VAR.WIDTH];
export const LIGHT_VARS = [
  VAR.TL_RED_YELLOW_GREEN_STATE,
  VAR.TL_CURRENT_PHASE,
  VAR.TL_CURRENT_PROGRAM,
  VAR.TL_NEXT_SWITCH,
];

/** A TraCI value as a number, or undefined when it is not one. */
export const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);

/**
 * The vType, and for a vehicle seen departing its route, its own speed factor, its type's limits and
 * its class (a person has none of them).
 */
export function vehicleAttributes(
  values: ReadonlyMap<number, TraciValue>,
  type?: ReadonlyMap<number, TraciValue>,
): JsonObject {
  const attributes: JsonObject = { vType: String(values.get(VAR.TYPE) ?? '') };
  const route = values.get(VAR.EDGES);
  if (Array.isArray(route)) attributes.route = route.map(String);
  const speedFactor = num(values.get(VAR.SPEED_FACTOR));
  if (speedFactor !== undefined) attributes.speedFactor = speedFactor;
  for (const [name, id] of [
    ['maxAccel', VAR.ACCEL],
    ['maxDecel', VAR.DECEL],
    ['maxSpeed', VAR.MAXSPEED],
  ] as const) {
    const v = num(type?.get(id));
    if (v !== undefined) attributes[name] = v;
  }
  const vClass = type?.get(VAR.VEHICLECLASS);
  if (typeof vClass === 'string') attributes.vClass = vClass;
  return attributes;
}
