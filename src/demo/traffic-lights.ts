import type { TrafficLight, TrafficLightProgram } from '../model/roadnet.js';

export interface SignalState {
  /** One character per link index, as SUMO writes it. */
  state: string;
  phase: number;
  program: string;
  /** Seconds until the next phase begins. */
  timeToSwitch: number;
}

/**
 * Runs a light's program on the simulation clock. Phases follow each other by duration; the program
 * starts its first phase at time `offset`, as SUMO does. Actuated and delay-based programs run as
 * fixed-time ones with their phases' `duration` (there are no detectors here to extend them).
 */
export class SignalController {
  readonly id: string;
  private readonly program: TrafficLightProgram;
  private readonly cycle: number;

  private constructor(id: string, program: TrafficLightProgram) {
    this.id = id;
    this.program = program;
    this.cycle = program.phases.reduce((sum, p) => sum + p.duration, 0);
  }

  /** A controller for the light's first program, or undefined when it has no timed phases. */
  static of(light: TrafficLight): SignalController | undefined {
    const program = light.programs.find((p) => p.phases.reduce((s, ph) => s + ph.duration, 0) > 0);
    return program ? new SignalController(light.id, program) : undefined;
  }

  at(seconds: number): SignalState {
    const phases = this.program.phases;
    let inCycle = (((seconds - this.program.offset) % this.cycle) + this.cycle) % this.cycle;
    for (let i = 0; i < phases.length; i++) {
      const phase = phases[i]!;
      if (inCycle < phase.duration)
        return {
          state: phase.state,
          phase: i,
          program: this.program.programId,
          timeToSwitch: phase.duration - inCycle,
        };
      inCycle -= phase.duration;
    }
    const last = phases[phases.length - 1]!;
    return { state: last.state, phase: phases.length - 1, program: this.program.programId, timeToSwitch: 0 };
  }
}

/** What a signal character asks of a vehicle or pedestrian at the stop line. */
export type SignalRule = 'go' | 'yield' | 'stop_if_able' | 'stop';

export function signalRule(ch: string | undefined): SignalRule {
  switch (ch) {
    case 'G':
    case 'O':
    case undefined:
      return 'go';
    case 'g':
    case 'o':
    case 's':
      return 'yield';
    case 'y':
    case 'Y':
      return 'stop_if_able';
    default:
      // r, R, u (red-yellow: about to turn green, still a stop).
      return 'stop';
  }
}
