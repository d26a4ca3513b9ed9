import { createRequire } from 'node:module';
import protobuf from 'protobufjs';
import descriptor from 'protobufjs/ext/descriptor.js';

/**
 * The part of ASAM OSI 3.8.0 (package osi3) that simrec writes: a GroundTruth with moving and
 * stationary objects, traffic lights, lanes and lane boundaries. Written for simrec from OSI's
 * message reference; message names, field names, numbers and enum values are OSI's (the wire
 * format), so OSI's own .proto files decode it, and any field simrec leaves out is simply absent.
 * Enums list only the values simrec uses, and each enum's 0 (UNKNOWN) and 1 (OTHER).
 *
 * A reader that decodes with the schema the trace carries and fills in defaults (Lichtblick, for
 * asam-osi-converter) finds only the fields declared here: the ones that converter reads are declared
 * even where simrec writes nothing into them (traffic signs, road markings, reference lines, logical
 * lanes, light states...), so that they read as empty, not as missing (docs/formats/osi.md).
 */
const OSI3_SUBSET = `
syntax = "proto2";
package osi3;

message InterfaceVersion {
  optional uint32 version_major = 1;
  optional uint32 version_minor = 2;
  optional uint32 version_patch = 3;
}
message Timestamp {
  optional int64 seconds = 1;
  optional uint32 nanos = 2;
}
message Identifier {
  optional uint64 value = 1;
}
message ExternalReference {
  optional string reference = 1;
  optional string type = 2;
  repeated string identifier = 3;
}
message Vector3d {
  optional double x = 1;
  optional double y = 2;
  optional double z = 3;
}
message Dimension3d {
  optional double length = 1;
  optional double width = 2;
  optional double height = 3;
}
message Orientation3d {
  optional double roll = 1;
  optional double pitch = 2;
  optional double yaw = 3;
}
message BaseStationary {
  optional Dimension3d dimension = 1;
  optional Vector3d position = 2;
  optional Orientation3d orientation = 3;
}
message BaseMoving {
  optional Dimension3d dimension = 1;
  optional Vector3d position = 2;
  optional Orientation3d orientation = 3;
  optional Vector3d velocity = 4;
  optional Vector3d acceleration = 5;
  optional Orientation3d orientation_rate = 6;
}
message MovingObject {
  optional Identifier id = 1;
  optional BaseMoving base = 2;
  optional Type type = 3;
  repeated Identifier assigned_lane_id = 4;
  optional VehicleClassification vehicle_classification = 6;
  optional string model_reference = 7;
  optional MovingObjectClassification moving_object_classification = 9;
  repeated ExternalReference source_reference = 10;
  enum Type {
    TYPE_UNKNOWN = 0;
    TYPE_OTHER = 1;
    TYPE_VEHICLE = 2;
    TYPE_PEDESTRIAN = 3;
  }
  message MovingObjectClassification {
    repeated Identifier assigned_lane_id = 1;
  }
  message VehicleClassification {
    optional Type type = 1;
    optional LightState light_state = 2;
    message LightState {
      optional IndicatorState indicator_state = 1;
      optional BrakeLightState brake_light_state = 7;
      enum IndicatorState {
        INDICATOR_STATE_UNKNOWN = 0;
        INDICATOR_STATE_OTHER = 1;
      }
      enum BrakeLightState {
        BRAKE_LIGHT_STATE_UNKNOWN = 0;
        BRAKE_LIGHT_STATE_OTHER = 1;
      }
    }
    enum Type {
      TYPE_UNKNOWN = 0;
      TYPE_OTHER = 1;
      TYPE_CAR = 4;
      TYPE_DELIVERY_VAN = 6;
      TYPE_HEAVY_TRUCK = 7;
      TYPE_MOTORBIKE = 10;
      TYPE_BICYCLE = 11;
      TYPE_BUS = 12;
      TYPE_TRAM = 13;
      TYPE_TRAIN = 14;
    }
  }
}
message StationaryObject {
  optional Identifier id = 1;
  optional BaseStationary base = 2;
  optional Classification classification = 3;
  repeated ExternalReference source_reference = 5;
  message Classification {
    optional Type type = 1;
    optional Material material = 2;
    optional Density density = 3;
    optional Color color = 4;
    enum Type {
      TYPE_UNKNOWN = 0;
      TYPE_OTHER = 1;
    }
    enum Material {
      MATERIAL_UNKNOWN = 0;
      MATERIAL_OTHER = 1;
    }
    enum Density {
      DENSITY_UNKNOWN = 0;
      DENSITY_OTHER = 1;
    }
    enum Color {
      COLOR_UNKNOWN = 0;
      COLOR_OTHER = 1;
    }
  }
}
message TrafficLight {
  optional Identifier id = 1;
  optional BaseStationary base = 2;
  optional Classification classification = 3;
  repeated ExternalReference source_reference = 5;
  message Classification {
    optional Color color = 1;
    optional Icon icon = 2;
    optional Mode mode = 3;
    repeated Identifier assigned_lane_id = 5;
    optional bool is_out_of_service = 6;
    enum Color {
      COLOR_UNKNOWN = 0;
      COLOR_OTHER = 1;
      COLOR_RED = 2;
      COLOR_YELLOW = 3;
      COLOR_GREEN = 4;
    }
    enum Icon {
      ICON_UNKNOWN = 0;
      ICON_OTHER = 1;
      ICON_NONE = 2;
      ICON_PEDESTRIAN = 15;
    }
    enum Mode {
      MODE_UNKNOWN = 0;
      MODE_OTHER = 1;
      MODE_OFF = 2;
      MODE_CONSTANT = 3;
      MODE_FLASHING = 4;
    }
  }
}
message LaneBoundary {
  optional Identifier id = 1;
  repeated BoundaryPoint boundary_line = 2;
  optional Classification classification = 3;
  repeated ExternalReference source_reference = 4;
  message BoundaryPoint {
    optional Vector3d position = 1;
    optional double width = 2;
    optional double height = 3;
    optional Dash dash = 4;
    enum Dash {
      DASH_UNKNOWN = 0;
      DASH_OTHER = 1;
    }
  }
  message Classification {
    optional Type type = 1;
    optional Color color = 2;
    enum Type {
      TYPE_UNKNOWN = 0;
      TYPE_OTHER = 1;
      TYPE_NO_LINE = 2;
      TYPE_SOLID_LINE = 3;
      TYPE_DASHED_LINE = 4;
      TYPE_BOTTS_DOTS = 5;
      TYPE_ROAD_EDGE = 6;
      TYPE_GRASS_EDGE = 8;
      TYPE_CURB = 12;
    }
    enum Color {
      COLOR_UNKNOWN = 0;
      COLOR_OTHER = 1;
      COLOR_NONE = 2;
      COLOR_WHITE = 3;
      COLOR_YELLOW = 4;
      COLOR_RED = 5;
      COLOR_BLUE = 6;
      COLOR_GREEN = 7;
    }
  }
}
message Lane {
  optional Identifier id = 1;
  optional Classification classification = 2;
  repeated ExternalReference source_reference = 3;
  message Classification {
    optional Type type = 1;
    optional bool is_host_vehicle_lane = 2;
    repeated Vector3d centerline = 3;
    optional bool centerline_is_driving_direction = 4;
    repeated Identifier left_adjacent_lane_id = 5;
    repeated Identifier right_adjacent_lane_id = 6;
    repeated LanePairing lane_pairing = 7;
    repeated Identifier right_lane_boundary_id = 8;
    repeated Identifier left_lane_boundary_id = 9;
    optional Subtype subtype = 12;
    enum Type {
      TYPE_UNKNOWN = 0;
      TYPE_OTHER = 1;
      TYPE_DRIVING = 2;
      TYPE_NONDRIVING = 3;
      TYPE_INTERSECTION = 4;
    }
    enum Subtype {
      SUBTYPE_UNKNOWN = 0;
      SUBTYPE_OTHER = 1;
      SUBTYPE_NORMAL = 2;
      SUBTYPE_BIKING = 3;
      SUBTYPE_SIDEWALK = 4;
      SUBTYPE_PARKING = 5;
      SUBTYPE_STOP = 6;
      SUBTYPE_RESTRICTED = 7;
      SUBTYPE_BORDER = 8;
      SUBTYPE_SHOULDER = 9;
    }
    message LanePairing {
      optional Identifier antecessor_lane_id = 1;
      optional Identifier successor_lane_id = 2;
    }
  }
}
message TrafficSign {
  optional Identifier id = 1;
}
message RoadMarking {
  optional Identifier id = 1;
}
message ReferenceLine {
  optional Identifier id = 1;
}
message LogicalLaneBoundary {
  optional Identifier id = 1;
}
message LogicalLane {
  optional Identifier id = 1;
}
message GroundTruth {
  optional InterfaceVersion version = 1;
  optional Timestamp timestamp = 2;
  optional Identifier host_vehicle_id = 3;
  repeated StationaryObject stationary_object = 4;
  repeated MovingObject moving_object = 5;
  repeated TrafficSign traffic_sign = 6;
  repeated TrafficLight traffic_light = 7;
  repeated RoadMarking road_marking = 8;
  repeated LaneBoundary lane_boundary = 9;
  repeated Lane lane = 10;
  optional string proj_string = 14;
  repeated ReferenceLine reference_line = 17;
  repeated LogicalLaneBoundary logical_lane_boundary = 18;
  repeated LogicalLane logical_lane = 19;
  optional ProjFrameOffset proj_frame_offset = 20;
  message ProjFrameOffset {
    optional Vector3d position = 1;
    optional double yaw = 2;
  }
}
`;

/** The OSI release whose messages these are. */
export const OSI_VERSION = { version_major: 3, version_minor: 8, version_patch: 0 } as const;
export const OSI_VERSION_TEXT = '3.8.0';

const root = protobuf.parse(OSI3_SUBSET, { keepCase: true }).root;
export const GroundTruthType = root.lookupType('osi3.GroundTruth');

/** The vehicle types simrec writes (its subset above). */
const VEHICLE_TYPES_WRITTEN = `      TYPE_CAR = 4;
      TYPE_DELIVERY_VAN = 6;
      TYPE_HEAVY_TRUCK = 7;
      TYPE_MOTORBIKE = 10;
      TYPE_BICYCLE = 11;
      TYPE_BUS = 12;
      TYPE_TRAM = 13;
      TYPE_TRAIN = 14;`;
/**
 * Every vehicle type of OSI 3.x, for reading: a text trace (.txth) names its enum values, and a name
 * the reader did not know could not be read at all (OSI 3.8 folds the car sizes into TYPE_CAR; their
 * names stay for traces of older writers). TYPE_CAR before its alias: a number decodes to the first name.
 */
const VEHICLE_TYPES_READ = `      option allow_alias = true;
      TYPE_SMALL_CAR = 2;
      TYPE_COMPACT_CAR = 3;
      TYPE_CAR = 4;
      TYPE_MEDIUM_CAR = 4;
      TYPE_LUXURY_CAR = 5;
      TYPE_DELIVERY_VAN = 6;
      TYPE_HEAVY_TRUCK = 7;
      TYPE_SEMITRAILER = 8;
      TYPE_TRAILER = 9;
      TYPE_MOTORBIKE = 10;
      TYPE_BICYCLE = 11;
      TYPE_BUS = 12;
      TYPE_TRAM = 13;
      TYPE_TRAIN = 14;
      TYPE_WHEELCHAIR = 15;
      TYPE_SEMITRACTOR = 16;
      TYPE_STANDUP_SCOOTER = 17;`;
if (!OSI3_SUBSET.includes(VEHICLE_TYPES_WRITTEN)) throw new Error('osi3-schema: the vehicle types moved');

/**
 * For reading .osi trace files, which carry no schema: a SensorView's fields that hold the world (OSI's
 * numbers), beside the subset above, in a root of its own so that the GroundTruth export's schema
 * record stays as it is.
 */
const READING_SUBSET = `${OSI3_SUBSET.replace(VEHICLE_TYPES_WRITTEN, VEHICLE_TYPES_READ)}
message SensorView {
  optional InterfaceVersion version = 1;
  optional Timestamp timestamp = 2;
  optional GroundTruth global_ground_truth = 7;
  optional Identifier host_vehicle_id = 8;
}`;
const readingRoot = protobuf.parse(READING_SUBSET, { keepCase: true }).root;
export const ReadingTypes = {
  gt: readingRoot.lookupType('osi3.GroundTruth'),
  sv: readingRoot.lookupType('osi3.SensorView'),
} as const;

/**
 * Makes a root's messages skim the road, in place: each lane and lane boundary reduced to its id, and
 * the road's parts simrec does not read (reference lines, logical lanes and their boundaries, road
 * markings) removed, so that protobufjs skips their bytes unread. A trace repeats its road in every
 * message (real traces do, and so does simrec's export), and decoding the road's points again in each
 * was most of the reading of a long trace: a message whose lanes and boundaries are all known already
 * is read this way, and again whole when it brings a new one (OsiRoadCollector.knows). Types the root
 * lacks are left alone: a trace's own schema may be of another OSI version.
 */
export function skimRoad(root: protobuf.Root): protobuf.Root {
  for (const name of ['osi3.Lane', 'osi3.LaneBoundary']) {
    const type = root.lookup(name);
    if (type instanceof protobuf.Type)
      for (const field of type.fieldsArray.filter((f) => f.name !== 'id')) type.remove(field);
  }
  const groundTruth = root.lookup('osi3.GroundTruth');
  if (groundTruth instanceof protobuf.Type)
    for (const name of UNREAD_ROAD_FIELDS) {
      const field = groundTruth.fields[name];
      if (field) groundTruth.remove(field);
    }
  return root;
}
const UNREAD_ROAD_FIELDS = ['reference_line', 'logical_lane', 'logical_lane_boundary', 'road_marking'];

/** The reading types above, skimming the road (skimRoad): for .osi trace files (read-osi.ts). */
const skimmingRoot = skimRoad(protobuf.parse(READING_SUBSET, { keepCase: true }).root);
export const SkimmingTypes = {
  gt: skimmingRoot.lookupType('osi3.GroundTruth'),
  sv: skimmingRoot.lookupType('osi3.SensorView'),
} as const;

/**
 * The schema record's data, as OSI's trace format asks: a binary FileDescriptorSet. Type names are
 * made fully qualified (`.osi3.Vector3d`), as protoc writes them, so every protobuf runtime resolves
 * them without scope rules of its own.
 */
export function groundTruthDescriptorSet(): Uint8Array {
  const set = root.toDescriptor('proto2') as unknown as DescriptorSetObject;
  for (const file of set.file) {
    const qualify = (messages: DescriptorMessage[] | undefined, scope: string): void => {
      for (const m of messages ?? []) {
        const inner = `${scope}.${m.name}`;
        for (const f of m.field ?? [])
          if (f.typeName && !f.typeName.startsWith('.')) f.typeName = resolve(f.typeName, inner);
        qualify(m.nestedType, inner);
      }
    };
    qualify(file.messageType, `.${file.package}`);
  }
  return descriptor.FileDescriptorSet.encode(set).finish();
}

interface DescriptorField {
  typeName?: string;
}
interface DescriptorMessage {
  name: string;
  field?: DescriptorField[];
  nestedType?: DescriptorMessage[];
}
interface DescriptorSetObject {
  file: { package: string; messageType?: DescriptorMessage[] }[];
}

/** A relative type name as protobuf resolves it: from the innermost scope outwards. */
function resolve(name: string, scope: string): string {
  for (let s = scope; s; s = s.slice(0, s.lastIndexOf('.'))) {
    const candidate = `${s}.${name}`;
    if (root.lookup(candidate.slice(1))) return candidate;
  }
  return `.${name}`;
}

/** The protobuf implementation that encodes the messages (OSI's trace metadata names it). */
export const PROTOBUF_VERSION: string = (
  createRequire(import.meta.url)('protobufjs/package.json') as { version: string }
).version;
