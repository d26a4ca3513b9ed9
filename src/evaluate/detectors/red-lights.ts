import type { EvaluationEvent } from '../evaluation-types.js';
import { isRed, signalStateAt, type RoadContext, type SignalStates } from '../road-context.js';
import type { Detector, Frame } from './detector.js';
import { EpisodeTracker } from './episodes.js';

/** Red-light violations: entering a signalled junction lane on red. */
export class RedLights implements Detector {
  private readonly episodes = new EpisodeTracker('red_light');
  private readonly actorId: string;
  private readonly road: RoadContext;
  private readonly signals: SignalStates;
  private previousLane: string | null = null;

  constructor(actorId: string, road: RoadContext, signals: SignalStates) {
    this.actorId = actorId;
    this.road = road;
    this.signals = signals;
  }

  frame({ t, x, y, position }: Frame): void {
    if (position) {
      const lane = position.lane;
      if (lane.id !== this.previousLane) {
        const c = this.road.signalOfVia.get(lane.id);
        const ch = c ? signalStateAt(this.signals.get(c.trafficLight!), t)?.[c.linkIndex!] : undefined;
        if (c && isRed(ch)) {
          this.episodes.hold(
            `${t}`,
            t,
            { x, y },
            [this.actorId, c.trafficLight!],
            `entered ${lane.id} on ${ch} (light ${c.trafficLight}, link ${c.linkIndex})`,
          );
        }
      }
      this.previousLane = lane.id;
    }
    this.episodes.endFrame(t);
  }

  finish(end: number): EvaluationEvent[] {
    return this.episodes.finish(end);
  }
}
