import { advance, boxesOverlap, limsimBoxesOverlap, type Box } from './footprint.js';

export interface MovingBox extends Box {
  speed: number;
}

export interface TtcOptions {
  /** Seconds looked ahead; also the value when no collision is coming (LimSim: 20). */
  horizon: number;
  /** Step of the search (LimSim: 0.1 s). */
  step: number;
  /** Refine the first overlapping step by bisection, to about a millisecond. */
  refine: boolean;
  /** The footprint test: the ego's box first (LimSim's test depends on the order). */
  overlap: (ego: Box, agent: Box) => boolean;
}

export const LIMSIM_TTC: TtcOptions = { horizon: 20, step: 0.1, refine: false, overlap: limsimBoxesOverlap };
export const SIMREC_TTC: TtcOptions = { horizon: 20, step: 0.1, refine: true, overlap: boxesOverlap };

/**
 * LimSim's "long box": the footprint stretched over the whole path driven in the horizon. If the
 * ego's long box meets no agent's, no collision can happen at constant velocity and heading.
 */
function longBox(b: MovingBox, horizon: number): Box {
  const reach = b.speed * horizon;
  return advance({ ...b, length: b.length + reach }, b.speed, horizon / 2);
}

/**
 * Time to collision (seconds) of `ego` with the first of `agents` its footprint would meet if all kept
 * their speed and heading (nuPlan's method, which LimSim follows); `horizon` when none would.
 * Returns the agent too. 0 means the footprints overlap now.
 */
export function timeToCollision(
  ego: MovingBox,
  agents: readonly (MovingBox & { id: string })[],
  options: TtcOptions,
): { ttc: number; agent: string | null } {
  const egoLong = longBox(ego, options.horizon);
  const candidates = agents.filter((a) => options.overlap(egoLong, longBox(a, options.horizon)));
  if (candidates.length === 0) return { ttc: options.horizon, agent: null };
  const hits = (t: number, a: MovingBox): boolean =>
    options.overlap(advance(ego, ego.speed, t), advance(a, a.speed, t));
  const steps = Math.round(options.horizon / options.step);
  for (let k = 0; k <= steps; k++) {
    const t = k * options.step;
    const agent = candidates.find((a) => hits(t, a));
    if (!agent) continue;
    if (!options.refine || k === 0) return { ttc: t, agent: agent.id };
    let lo = t - options.step;
    let hi = t;
    while (hi - lo > 1e-4) {
      const mid = (lo + hi) / 2;
      if (hits(mid, agent)) hi = mid;
      else lo = mid;
    }
    return { ttc: Math.round(hi * 1000) / 1000, agent: agent.id };
  }
  return { ttc: options.horizon, agent: null };
}
