import type { LaneMark, RoadLane, RoadNetwork, RoadPoint } from '../../../model/roadnet.js';
import type { ActorInfo, RunInfo } from '../../../model/run.js';
import { wrapAngle } from '../../../model/units.js';
import { laneBordersOf } from '../../../roadnet/lane-borders.js';
import { headHeight, signalLamp, type SignalHead } from '../../../roadnet/signal-heads.js';
import {
  GroundTruthType,
  groundTruthDescriptorSet,
  OSI_VERSION,
  OSI_VERSION_TEXT,
  PROTOBUF_VERSION,
} from './osi3-schema.js';
import { extentsOf, latest, num, presentSample, type LightTrack, type Track } from '../scene-tracks.js';

/*
 * ASAM OSI ground truth in the MCAP export (`--osi`), as OSI 3.8.0's multi-channel trace format
 * asks (doc/architecture/trace_file_formats.adoc): one osi3.GroundTruth per recorded frame on a
 * protobuf channel whose schema is a FileDescriptorSet, the channel's OSI and protobuf versions in
 * its metadata, and a `net.asam.osi.trace` metadata record for the file.
 */

export const OSI_TOPIC = '/osi/ground_truth';
export const OSI_SCHEMA_NAME = 'osi3.GroundTruth';
export const OSI_TRACE_METADATA = 'net.asam.osi.trace';
/** ExternalReference.type of what simrec names: actors, lanes and lane marks by their simrec ids. */
export const SIMREC_REFERENCE_TYPE = 'org.simrec.id';

export interface OsiChannel {
  schema: { name: string; encoding: 'protobuf'; data: Uint8Array };
  topic: string;
  channelMetadata: Map<string, string>;
  fileMetadata: Map<string, string>;
  /** The ground truth at a frame's time. */
  encode: (t: number) => Uint8Array;
}

interface Identifier {
  value: number;
}
type Vector3d = { x: number; y: number; z: number };

/** SUMO's vehicle classes as OSI's vehicle classification types (CAR when the class says no more). */
const VEHICLE_TYPES: Record<string, number> = {
  passenger: 4,
  private: 4,
  taxi: 4,
  evehicle: 4,
  delivery: 6,
  truck: 7,
  trailer: 7,
  bus: 12,
  coach: 12,
  moped: 10,
  motorcycle: 10,
  bicycle: 11,
  tram: 13,
  rail_urban: 14,
  rail: 14,
  rail_electric: 14,
  rail_fast: 14,
};
const VEHICLE = { type: 2, car: 4, bicycle: 11 };
const PEDESTRIAN = 3;
const OTHER = 1;
const NOT_OBJECTS = new Set(['traffic_light', 'sensor', 'map']);

const LANE_TYPE = { driving: 2, nondriving: 3, intersection: 4 };
const LANE_SUBTYPE: Record<string, number> = {
  driving: 2,
  biking: 3,
  sidewalk: 4,
  walking: 4,
  parking: 5,
  stop: 6,
  restricted: 7,
  border: 8,
  shoulder: 9,
};
const BOUNDARY_TYPE: Record<string, number> = {
  solid: 3,
  solid_solid: 3,
  broken: 4,
  broken_broken: 4,
  solid_broken: 3,
  broken_solid: 4,
  botts_dots: 5,
  edge: 6,
  grass: 8,
  curb: 12,
};
const BOUNDARY_COLOUR: Record<string, number> = {
  standard: 3,
  white: 3,
  yellow: 4,
  red: 5,
  blue: 6,
  green: 7,
};
const LAMP = { red: 2, yellow: 3, green: 4 } as const;
const MODE = { off: 2, constant: 3, flashing: 4 };
const ICON = { none: 2, pedestrian: 15 };

/**
 * Builds the OSI channel of a run. Identifiers are numbers given once per export, unique across all
 * of a frame's entities (actors first, in the run's order, then lanes, lane boundaries and lamps);
 * each entity's simrec id is its source reference.
 */
export function osiGroundTruth(
  run: RunInfo,
  stateTracks: readonly Track[],
  lights: readonly LightTrack[],
  network: RoadNetwork | undefined,
  warn: (message: string) => void,
): OsiChannel {
  let nextId = 1;
  const newId = (): Identifier => ({ value: nextId++ });
  const objects = stateTracks
    .filter((t) => !NOT_OBJECTS.has(t.actor.kind))
    .map((track) => ({ track, id: newId() }));
  const ego = objects.find((o) => o.track.actor.kind === 'ego');
  const { lanes, boundaries, laneIds } = network
    ? roadGroundTruth(network, newId)
    : { lanes: [], boundaries: [], laneIds: new Map<string, Identifier>() };
  const lamps = lights.flatMap((light) =>
    light.heads.flatMap((head) =>
      (['red', 'yellow', 'green'] as const).map((colour) => ({ light, head, colour, id: newId() })),
    ),
  );
  const geo = network?.geoReference;
  const offset = geo?.offset;
  if (offset?.heading)
    warn(`the network's offset turns it by ${offset.heading} rad; proj_frame_offset omits the turn`);

  // The road is the same in every frame, and each frame carries it: a reader may start anywhere. Its
  // fields (9 and up) follow the changing ones (7 and below), so its bytes, encoded once, are appended
  // to each frame's: the message is the one encoding every field at once gives, byte for byte.
  const road = GroundTruthType.encode({
    lane_boundary: boundaries,
    lane: lanes,
    ...(geo?.projection ? { proj_string: geo.projection } : {}),
    ...(offset
      ? { proj_frame_offset: { position: { x: -offset.x, y: -offset.y, z: -(offset.z ?? 0) } } }
      : {}),
  }).finish();

  const encode = (t: number): Uint8Array => {
    const moving = [];
    const stationary = [];
    for (const { track, id } of objects) {
      const s = presentSample(track, t);
      if (!s) continue;
      const actor = track.actor;
      const size = extentsOf(actor);
      // OSI places an object at the centre of its box; simrec's z is where it stands.
      const position = { x: num(s.x), y: num(s.y), z: num(s.z) + size.height / 2 };
      // OSI's angles lie in [-pi, pi]; simrec keeps what the source recorded (SUMO's turn to 3pi/2).
      const orientation = {
        roll: wrapAngle(num(s.roll)),
        pitch: wrapAngle(num(s.pitch)),
        yaw: wrapAngle(num(s.yaw)),
      };
      const dimension = { length: size.length, width: size.width, height: size.height };
      const source_reference = [reference(`run ${run.id} actor`, actor.id)];
      if (actor.kind === 'static') {
        stationary.push({
          id,
          base: { dimension, position, orientation },
          classification: { type: OTHER },
          source_reference,
        });
        continue;
      }
      const lane = typeof s.lane === 'string' ? laneIds.get(s.lane) : undefined;
      moving.push({
        id,
        base: {
          dimension,
          position,
          orientation,
          ...vector('velocity', s.vx, s.vy, s.vz),
          ...vector('acceleration', s.ax, s.ay, s.az),
          // simrec's angular velocity is about the world's axes; for a level vehicle (roll and pitch
          // near zero, as every source simrec reads) it is the rate of roll, pitch and yaw.
          ...(typeof s.wz === 'number'
            ? { orientation_rate: { roll: num(s.wx), pitch: num(s.wy), yaw: s.wz } }
            : {}),
        },
        type: movingType(actor),
        // OSI 3.5 moved an object's lanes into its classification (which asam-osi-converter shows);
        // the deprecated field stays for readers of older versions.
        ...(lane
          ? { assigned_lane_id: [lane], moving_object_classification: { assigned_lane_id: [lane] } }
          : {}),
        ...(movingType(actor) === VEHICLE.type
          ? { vehicle_classification: { type: vehicleType(actor) } }
          : {}),
        source_reference,
      });
    }
    const traffic_light = [];
    for (const lamp of lamps) {
      const state = latest(lamp.light, t)?.state;
      const shows = signalLamp(typeof state === 'string' ? state[lamp.head.linkIndex] : undefined);
      traffic_light.push(trafficLamp(lamp.head, lamp.colour, shows, lamp.id, laneIds));
    }
    const changing = GroundTruthType.encode({
      version: OSI_VERSION,
      timestamp: osiTimestamp(t),
      ...(ego ? { host_vehicle_id: ego.id } : {}),
      stationary_object: stationary,
      moving_object: moving,
      traffic_light,
    }).finish();
    return Buffer.concat([changing, road]);
  };

  const versions = {
    osi: OSI_VERSION_TEXT,
    protobuf: PROTOBUF_VERSION,
  };
  return {
    schema: { name: OSI_SCHEMA_NAME, encoding: 'protobuf', data: groundTruthDescriptorSet() },
    topic: OSI_TOPIC,
    channelMetadata: new Map([
      ['net.asam.osi.trace.channel.osi_version', versions.osi],
      ['net.asam.osi.trace.channel.protobuf_version', versions.protobuf],
      ['net.asam.osi.trace.channel.description', `simrec run ${run.id}: ground truth per recorded frame`],
    ]),
    fileMetadata: new Map([
      ['version', versions.osi],
      ['min_osi_version', versions.osi],
      ['max_osi_version', versions.osi],
      ['min_protobuf_version', versions.protobuf],
      ['max_protobuf_version', versions.protobuf],
      // The run's clock is Unix time: time 0 of every timestamp is the epoch.
      ['zero_time', '1970-01-01T00:00:00Z'],
      ['creation_time', new Date(run.begin / 1000).toISOString()],
      ['description', run.description ? `simrec run ${run.id}: ${run.description}` : `simrec run ${run.id}`],
      ['data_sources', simulatorName(run)],
    ]),
    encode,
  };
}

const simulatorName = (run: RunInfo): string =>
  [run.simulator.name, run.simulator.version].filter(Boolean).join(' ') || 'simrec';

/** Microseconds since the epoch as OSI's Timestamp (nanos always 0 <= n < 1e9). */
export function osiTimestamp(micros: number): { seconds: number; nanos: number } {
  const seconds = Math.floor(micros / 1e6);
  return { seconds, nanos: (micros - seconds * 1e6) * 1000 };
}

function reference(what: string, id: string) {
  return { reference: `simrec ${what}`, type: SIMREC_REFERENCE_TYPE, identifier: [id] };
}

function vector(name: string, x: unknown, y: unknown, z: unknown): Record<string, Vector3d> {
  if (typeof x !== 'number' || typeof y !== 'number') return {};
  return { [name]: { x, y, z: num(z) } };
}

function movingType(actor: ActorInfo): number {
  if (actor.kind === 'pedestrian') return PEDESTRIAN;
  if (actor.kind === 'ego' || actor.kind === 'vehicle' || actor.kind === 'cyclist') return VEHICLE.type;
  return OTHER;
}

function vehicleType(actor: ActorInfo): number {
  const vClass = actor.attributes.vClass;
  if (typeof vClass === 'string' && vClass in VEHICLE_TYPES) return VEHICLE_TYPES[vClass]!;
  return actor.kind === 'cyclist' ? VEHICLE.bicycle : VEHICLE.car;
}

/** One lamp of a signal head: OSI's TrafficLight is a single bulb, red above yellow above green. */
function trafficLamp(
  head: SignalHead,
  colour: 'red' | 'yellow' | 'green',
  shows: ReturnType<typeof signalLamp>,
  id: Identifier,
  laneIds: ReadonlyMap<string, Identifier>,
) {
  const lit =
    shows === colour ||
    (shows === 'red_yellow' && (colour === 'red' || colour === 'yellow')) ||
    (shows === 'flashing_yellow' && colour === 'yellow');
  const mode = !lit ? MODE.off : shows === 'flashing_yellow' ? MODE.flashing : MODE.constant;
  const base = headHeight(head);
  const rise = { red: 0.3, yellow: 0, green: -0.3 }[colour];
  const lane = laneIds.get(head.lane);
  return {
    id,
    base: {
      dimension: { length: 0.1, width: 0.3, height: 0.3 },
      position: { x: head.position[0], y: head.position[1], z: head.position[2] + base + rise },
      // A lamp faces the traffic it governs: against that traffic's direction of travel.
      orientation: { roll: 0, pitch: 0, yaw: wrapAngle(head.heading + Math.PI) },
    },
    classification: {
      color: LAMP[colour],
      icon: head.pedestrian ? ICON.pedestrian : ICON.none,
      mode,
      ...(lane ? { assigned_lane_id: [lane] } : {}),
      is_out_of_service: false,
    },
    source_reference: [reference('traffic light', `${head.light}:${head.linkIndex}`)],
  };
}

const point = (p: RoadPoint): Vector3d => ({ x: p[0], y: p[1], z: p[2] ?? 0 });

/** The network's lanes (with their neighbours, boundaries and links) and lane marks as OSI's. */
function roadGroundTruth(network: RoadNetwork, newId: () => Identifier) {
  const laneIds = new Map(network.lanes.map((l) => [l.id, newId()] as const));
  const borders = laneBordersOf(network).map((border) => ({ ...border, id: newId() }));
  const boundaries = borders.map((b) => laneBoundary(b.mark, b.id));
  const sides = new Map<string, { left: Identifier[]; right: Identifier[] }>();
  const side = (lane: string) => sides.get(lane) ?? sides.set(lane, { left: [], right: [] }).get(lane)!;
  for (const b of borders) {
    if (b.leftOf) side(b.leftOf).left.push(b.id);
    if (b.rightOf) side(b.rightOf).right.push(b.id);
  }
  // Links: a connection leads from its lane, across the junction (its internal lane), to the next.
  const before = new Map<string, Set<string>>();
  const after = new Map<string, Set<string>>();
  const link = (from: string, to: string): void => {
    if (!laneIds.has(from) || !laneIds.has(to)) return;
    after.set(from, (after.get(from) ?? new Set()).add(to));
    before.set(to, (before.get(to) ?? new Set()).add(from));
  };
  for (const c of network.connections) {
    if (c.via) {
      link(c.fromLane, c.via);
      link(c.via, c.toLane);
    } else link(c.fromLane, c.toLane);
  }
  const byEdge = new Map<string, RoadLane[]>();
  for (const lane of network.lanes) byEdge.set(lane.edge, [...(byEdge.get(lane.edge) ?? []), lane]);
  const neighbour = (lane: RoadLane, step: number): Identifier[] => {
    const other = byEdge.get(lane.edge)?.find((l) => l.index === lane.index + step);
    return other ? [laneIds.get(other.id)!] : [];
  };

  const lanes = network.lanes.map((lane) => {
    const ids = (set: Set<string> | undefined) => [...(set ?? [])].map((id) => laneIds.get(id)!);
    const antecessors = ids(before.get(lane.id));
    const successors = ids(after.get(lane.id));
    const lane_pairing =
      antecessors.length && successors.length
        ? antecessors.flatMap((a) => successors.map((s) => ({ antecessor_lane_id: a, successor_lane_id: s })))
        : [
            ...antecessors.map((a) => ({ antecessor_lane_id: a })),
            ...successors.map((s) => ({ successor_lane_id: s })),
          ];
    return {
      id: laneIds.get(lane.id)!,
      classification: {
        type: laneType(lane),
        centerline: lane.centerLine.map(point),
        centerline_is_driving_direction: true,
        // SUMO counts lanes from the right: the next index is the lane to the left.
        left_adjacent_lane_id: neighbour(lane, 1),
        right_adjacent_lane_id: neighbour(lane, -1),
        lane_pairing,
        right_lane_boundary_id: sides.get(lane.id)?.right ?? [],
        left_lane_boundary_id: sides.get(lane.id)?.left ?? [],
        ...(laneSubtype(lane) ? { subtype: laneSubtype(lane) } : {}),
      },
      source_reference: [reference('lane', lane.id)],
    };
  });
  return { lanes, boundaries, laneIds };
}

function laneType(lane: RoadLane): number {
  if (lane.function === 'internal') return LANE_TYPE.intersection;
  if (lane.function !== 'normal') return LANE_TYPE.nondriving; // crossings and walking areas
  const type = lane.type ?? 'driving';
  const nonDriving = ['sidewalk', 'walking', 'border', 'shoulder', 'median', 'curb', 'none', 'biking'];
  const pedestrianOnly = lane.allow?.length === 1 && lane.allow[0] === 'pedestrian';
  return nonDriving.includes(type) || pedestrianOnly ? LANE_TYPE.nondriving : LANE_TYPE.driving;
}

function laneSubtype(lane: RoadLane): number | undefined {
  if (lane.allow?.length === 1 && lane.allow[0] === 'pedestrian') return LANE_SUBTYPE.sidewalk;
  if (lane.allow?.length === 1 && lane.allow[0] === 'bicycle') return LANE_SUBTYPE.biking;
  return lane.type ? LANE_SUBTYPE[lane.type] : undefined;
}

function laneBoundary(mark: LaneMark, id: Identifier) {
  return {
    id,
    boundary_line: mark.shape.map((p) => ({
      position: point(p),
      ...(mark.width !== undefined ? { width: mark.width } : {}),
    })),
    classification: {
      type: BOUNDARY_TYPE[mark.type] ?? OTHER,
      color: mark.color ? (BOUNDARY_COLOUR[mark.color] ?? OTHER) : 0,
    },
    source_reference: [reference('lane mark', mark.id)],
  };
}
