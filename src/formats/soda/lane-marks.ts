import { invalid } from '../../model/errors.js';
import { LANE_MARK_TYPES, type LaneMark, type LaneMarkType, type RoadPoint } from '../../model/roadnet.js';
import { canonicalLocationToUnreal, unrealLocationToCanonical } from '../../model/units.js';
import { array, string, toVec3, vec3, type BsonDoc } from './bson-fields.js';
import type { KeyValuePairs } from './duplicate-keys.js';

/** SODA.Sim's lane marks as simrec keeps them with a run (canonical metres), beside the network. */
export const LANE_MARKS_ATTACHMENT = 'soda/lane-marks.json';

/** OpenDRIVE spells mark types with spaces ("solid broken"); the model with underscores. */
function markType(sodaType: string): LaneMarkType {
  const t = sodaType.trim().replace(/\s+/g, '_');
  return (LANE_MARK_TYPES as readonly string[]).includes(t) ? (t as LaneMarkType) : 'custom';
}

/**
 * The marks of `road_lanes_marks`, every `type`/`points` pair of every road (SODA.Sim repeats both
 * keys in one road document). Points are Unreal centimetres with y mirrored, as SODA.Sim converts
 * them from the OpenDRIVE file.
 */
export function roadsToLaneMarks(roads: KeyValuePairs[], where: string): LaneMark[] {
  const marks: LaneMark[] = [];
  roads.forEach((pairs, r) => {
    let type: string | undefined;
    let k = 0;
    for (const [key, value] of pairs) {
      const at = `${where}[${r}].${key} (pair ${k})`;
      if (key === 'type') type = string(value, at);
      else if (key === 'points') {
        if (type === undefined) throw invalid(`${at}: points come before their type`);
        const shape = array(value, at).map((p, i): RoadPoint => {
          const [x, y, z] = vec3(p, `${at}[${i}]`);
          const c = unrealLocationToCanonical({ x, y, z });
          return [c.x + 0, c.y + 0, c.z + 0];
        });
        const mark: LaneMark = { id: `road${r}.mark${k}`, type: markType(type), shape, extra: { road: r } };
        if (mark.type === 'custom' || type !== mark.type.replace(/_/g, ' ')) mark.extra!.sodaType = type;
        marks.push(mark);
        k++;
        type = undefined;
      } else throw invalid(`${at}: a road's lane marks hold only type and points`);
    }
  });
  return marks;
}

/**
 * The `road_lanes_marks` simrec writes: one road document per mark. SODA.Sim's road documents carry
 * no road id, so splitting a road's marks into documents of their own says the same thing without
 * repeating keys, which every reader but a raw-BSON one would silently drop.
 */
export function laneMarksToRoads(marks: readonly LaneMark[]): BsonDoc[] {
  return marks.map((mark) => {
    const sodaType = mark.extra?.sodaType;
    return {
      type: typeof sodaType === 'string' ? sodaType : mark.type.replace(/_/g, ' '),
      points: mark.shape.map(([x, y, z]) => {
        const u = canonicalLocationToUnreal({ x, y, z: z ?? 0 });
        return toVec3([u.x, u.y, u.z]);
      }),
    };
  });
}
