import type { RoadLane } from '../../model/roadnet.js';
import { wrapAngle } from '../../model/units.js';
import type { LimSimLanes } from '../../roadnet/limsim/limsim-geometry.js';
import type { EvaluationEvent } from '../evaluation-types.js';
import { offset, orientation } from '../limsim-formulas.js';
import type { RoadContext } from '../road-context.js';
import type { Detector, Frame } from './detector.js';
import { EpisodeTracker } from './episodes.js';

/**
 * Keeping to the lane: the offset from its centre and the orientation against its heading (LimSim's
 * metrics, against LimSim's splines in its mode), and lane departures: a change between two lanes of
 * one edge, or leaving the road.
 */
export class LaneKeeping implements Detector {
  private readonly episodes = new EpisodeTracker('lane_departure');
  private readonly actorId: string;
  private readonly road: RoadContext;
  /** LimSim's lanes: given in LimSim's mode and only then, so they stand for the mode here. */
  private readonly limsimLanes: LimSimLanes | undefined;
  private readonly limsimOrientation = new LimSimOrientation();
  /** The lane heading orientation is measured against, eased over 10 frames after a lane change. */
  private yawRef: number | null = null;
  private easing: { from: number; frames: number } | null = null;
  private previousNormalLane: string | null = null;

  constructor(actorId: string, road: RoadContext, limsimLanes: LimSimLanes | undefined) {
    this.actorId = actorId;
    this.road = road;
    this.limsimLanes = limsimLanes;
  }

  frame({ ego, i, t, x, y, yaw, position, sample }: Frame): void {
    const { actorId, road, limsimLanes } = this;
    if (position) {
      const lane = position.lane;
      const lanePos = Number.isNaN(ego.lanePos[i]!) ? position.s : ego.lanePos[i]!;
      let off = offset(position.t);
      if (limsimLanes && (lanePos > lane.length || lanePos < lane.width / 2)) off = 0;
      sample.offset = off;
      sample.laneOffset = position.t;
      if (lane.function === 'normal') {
        const target = headingAt(lane, Math.min(lanePos, lane.length));
        if (this.previousNormalLane !== null && this.previousNormalLane !== lane.id && this.yawRef !== null)
          this.easing = { from: this.yawRef, frames: 0 };
        if (this.easing && this.easing.frames < 10) {
          this.easing.frames++;
          this.yawRef = this.easing.from + wrapAngle(target - this.easing.from) * (this.easing.frames / 10);
        } else {
          this.easing = null;
          this.yawRef = target;
        }
        // A change between two lanes of one edge is the centre crossing the line between them.
        const before: RoadLane | undefined = this.previousNormalLane
          ? road.lanes.get(this.previousNormalLane)
          : undefined;
        if (before && before.id !== lane.id && before.edge === lane.edge) {
          this.episodes.hold(`${t}`, t, { x, y }, [actorId], `from ${before.id} to ${lane.id}`);
        }
        this.previousNormalLane = lane.id;
      }
      if (this.yawRef !== null) sample.orientation = orientation(yaw, this.yawRef);
      // LimSim's own numbers: against its splines, at the lane and position the run stored.
      const limsimLane = limsimLanes && ego.lane[i] ? ego.lane[i] : undefined;
      const spline = limsimLane === undefined ? undefined : limsimLanes!.spline(limsimLane);
      if (limsimLane !== undefined && spline) {
        const s = Number.isNaN(ego.lanePos[i]!) ? spline.toFrenet(x, y).s : ego.lanePos[i]!;
        // LimSim compares the position with the ego's half width, not the lane's.
        sample.offset = s > spline.length || s < ego.width / 2 ? 0 : offset(spline.toFrenet(x, y).d);
        sample.orientation = this.limsimOrientation.update(limsimLanes!, limsimLane, s, yaw);
      }
    } else {
      this.episodes.hold('off-road', t, { x, y }, [actorId], 'left the road');
    }
    this.episodes.endFrame(t);
  }

  finish(end: number): EvaluationEvent[] {
    return this.episodes.finish(end);
  }
}

/** Heading of a polyline at s metres along it. */
function headingAt(lane: RoadLane, s: number): number {
  const line = lane.centerLine;
  let rest = s;
  for (let i = 1; i < line.length; i++) {
    const a = line[i - 1]!;
    const b = line[i]!;
    const d = Math.hypot(b[0] - a[0], b[1] - a[1]);
    if (rest <= d || i === line.length - 1) return Math.atan2(b[1] - a[1], b[0] - a[0]);
    rest -= d;
  }
  return 0;
}

/**
 * LimSim's orientation reference (RealTimeEvaluation._evaluate_orientation): on a normal lane, the
 * spline's yaw at the stored lane position; within 10 frames of a lane change it moves a tenth of
 * the way per frame from the old reference toward the new lane's, and takes it once within 1e-3.
 * On a junction lane the reference stays. Its state is LimSim's ref_yaw and new_yaw.
 */
class LimSimOrientation {
  private refYaw = 0;
  private newYaw = 0;
  private readonly laneHistory: string[] = [];
  update(lanes: LimSimLanes, lane: string, lanePos: number, yaw: number): number {
    this.laneHistory.push(lane);
    if (this.laneHistory.length > 100) this.laneHistory.shift();
    const spline = lanes.isNormal(lane) ? lanes.spline(lane) : undefined;
    if (spline) {
      const h = this.laneHistory;
      const target = spline.yaw(lanePos);
      if (h.length >= 11 && h[h.length - 1] !== h[h.length - 11]) {
        this.newYaw += 0.1 * (target - this.refYaw);
        if (Math.abs(target - this.newYaw) < 1e-3) this.refYaw = target;
      } else {
        this.refYaw = target;
        this.newYaw = target;
      }
    }
    return orientation(yaw, this.newYaw);
  }
}
