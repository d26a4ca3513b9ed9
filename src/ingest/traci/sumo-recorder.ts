import { invalid, SimrecError } from '../../model/errors.js';
import type { RunInfo } from '../../model/run.js';
import { signalStream } from '../../model/standard-streams.js';
import type { StoreBackend } from '../../model/store-port.js';
import { RunRecorder } from '../../record/run-recorder.js';
import { readRoadNetworkFile } from '../../roadnet/read-roadnet.js';
import { attachRoadNetwork } from '../../roadnet/roadnet-attachment.js';
import { sumoSimulation, type SumoSimulationOptions } from './sumo-config.js';
import { SumoProcess } from './sumo-process.js';
import type { SumoArea } from './sumo-step-columns.js';
import { SumoStepping } from './sumo-stepping.js';
import { LIGHT_VARS, num, PERSON_VARS, SIMULATION_VARS, VEHICLE_VARS } from './sumo-variables.js';
import type { TraciClient } from './traci-client.js';
import { VAR } from './traci-protocol.js';

export type { SumoArea } from './sumo-step-columns.js';

/*
 * `simrec record sumo`: what to simulate (sumo-config.ts), the SUMO process (sumo-process.ts), the
 * variables asked of it (sumo-variables.ts) and the stepping loop that records each step
 * (sumo-stepping.ts, its columns sumo-step-columns.ts), put together here.
 */

/** The oldest TraCI API this recorder has been tested with (SUMO 1.15 speaks 20). */
const MIN_TRACI_API = 18;
export interface SumoRecordOptions extends SumoSimulationOptions {
  /** The vehicle recorded as the ego (LimSim's ego tracking). */
  ego?: string;
  /** Every vehicle (default), or those within a radius of the ego (tagged ego / AoI / outOfAoI). */
  area?: SumoArea;
  /** The sumo binary; default $SUMO_BINARY or `sumo` on the PATH. */
  sumoBinary?: string;
  /**
   * After each step: the simulated seconds so far, and the seconds the recording will last when that
   * is known (the config's or `--end`'s end, or `duration`), for a progress bar.
   */
  onStep?: (simSeconds: number, totalSeconds: number | undefined) => void;
  signal?: AbortSignal;
  /**
   * Lowers this process's scheduling priority by this much once SUMO has started (SUMO keeps its own;
   * see lowerProcessPriority): the recording then runs in SUMO's idle time rather than taking turns
   * with it, falling behind instead (by a second at most, which then holds SUMO back: SumoStepping).
   * For every thread of the process, for the rest of its life: `simrec record sumo` uses
   * SUMO_RECORDER_NICE; a library caller decides. Default 0: unchanged.
   */
  recorderNice?: number;
}

export interface SumoRecordResult {
  run: RunInfo;
  steps: number;
  vehicles: number;
  persons: number;
  trafficLights: number;
  /** Vehicle types whose limits, size and class were read (once each). */
  vehicleTypes: number;
  /** What the recording could not do as asked (an `--ego` that never departed, say). */
  warnings: string[];
}

/**
 * Records a live SUMO simulation over TraCI: starts `sumo` headless on a free port, steps it, and
 * records every vehicle (or the ego's area), persons and traffic lights, with the road network from
 * the config's net file. Positions are the vehicle's centre (SUMO reports the front bumper), times
 * are SUMO's step times (the state after a step carries the time the step began, as SUMO's own
 * outputs label it). The run ends `completed` when SUMO has nothing left to simulate or reaches its
 * end time, `user_request` when stopped (duration reached, aborted), `interrupted` when SUMO dies.
 */
export async function recordSumo(store: StoreBackend, options: SumoRecordOptions): Promise<SumoRecordResult> {
  const simulation = sumoSimulation(options);
  const { stepLength } = simulation;
  const { network } = await readRoadNetworkFile(simulation.net);

  const sumo = await SumoProcess.start(
    options.sumoBinary ?? process.env.SUMO_BINARY ?? 'sumo',
    simulation.args,
    [...(stepLength ? ['--step-length', String(stepLength)] : []), ...(options.sumoArgs ?? [])],
    options.recorderNice,
  );
  const client: TraciClient = await sumo.connect();
  let recorder: RunRecorder | undefined;
  try {
    const version = await client.getVersion();
    if (version.api < MIN_TRACI_API)
      throw new SimrecError(
        'unsupported',
        `TraCI version mismatch: ${version.identifier} speaks API ${version.api}; simrec needs ${MIN_TRACI_API} or newer`,
      );
    await client.setOrder(1);
    const sim = await client.subscribe('simulation', '', SIMULATION_VARS);
    const dt = num(sim?.values.get(VAR.DELTA_T)) ?? stepLength ?? 1;

    const area = options.area ?? { kind: 'all' };
    // Steps come every few hundred microseconds; one fsync each would make SUMO wait on the disk.
    // Commits gather 200 ms of steps (the loop still waits for durability every 100 steps).
    recorder = await RunRecorder.begin(
      store,
      {
        simulator: { name: 'sumo', version: version.identifier.replace(/^SUMO\s*/, '') },
        description: `SUMO ${options.config ?? simulation.net}`,
        metadata: {
          config: options.config ?? null,
          net: simulation.net,
          routes: simulation.routes,
          stepLength: dt,
          traciApi: version.api,
          mode: area.kind === 'ego' ? 'ego tracking' : area.kind === 'local' ? 'local area' : 'all vehicles',
          ...(area.kind !== 'all' ? { radius: area.radius } : {}),
          ...(area.kind === 'local' ? { localPos: [area.x, area.y] } : {}),
          ...(options.ego ? { ego: options.ego } : {}),
        },
      },
      { commitIntervalMs: 200 },
    );
    const rec = recorder;
    await attachRoadNetwork(store, rec.id, network);

    const lights = await client.idList('trafficLight');
    if (lights.length) {
      await rec.declareActors(lights.map((id) => ({ id, kind: 'traffic_light' })));
      await rec.declareStreams(lights.map((id) => signalStream(id, { rateHz: 1 / dt })));
      for (const id of lights) await client.subscribe('trafficLight', id, LIGHT_VARS);
    }

    // Every vehicle and person on the road, each step, from one context subscription per domain
    // around a junction with a range that covers the network: a vehicle is in it from the step it
    // departs, with nothing to subscribe when it does, so steps can be sent ahead (SumoStepping).
    const junctions = await client.idList('junction');
    if (!junctions.length)
      throw invalid(`${simulation.net}: the network has no junction to subscribe around`);
    const { min, max } = network.boundary;
    const range = 2 * Math.hypot(max[0] - min[0], max[1] - min[1]) + 1000;
    await client.subscribeContext('junction', junctions[0]!, 'vehicle', range, VEHICLE_VARS);
    await client.subscribeContext('junction', junctions[0]!, 'person', range, PERSON_VARS);

    const stepping = new SumoStepping(client, rec, sumo, {
      dt,
      area,
      ego: options.ego,
      simBegin: simulation.begin,
      simEnd: simulation.end,
      duration: options.duration,
      totalSeconds: simulation.totalSeconds,
      onStep: options.onStep,
      signal: options.signal,
    });
    const reason = await stepping.run();
    const { declared, persons, undescribed } = stepping;
    const warnings: string[] = [];
    if (undescribed.length) warnings.push(undescribedWarning(undescribed, stepping.inFlightSteps, dt));
    await client.close();
    await sumo.exitedWithin(5000);
    if (reason === 'interrupted')
      await rec
        .attach({
          name: 'sumo/stderr.txt',
          mediaType: 'text/plain',
          data: Buffer.from(sumo.stderr || 'SUMO closed the connection'),
        })
        .catch(() => {});
    const run = await rec.end(reason);
    if (options.ego !== undefined && !declared.has(options.ego))
      warnings.push(
        `--ego ${options.ego}: no vehicle of that id departed in the ${((run.end! - run.begin) / 1e6).toFixed(1)} s recorded, so the run has no ego${area.kind === 'ego' ? ' and, with --area ego, no vehicles' : ''}; check the id in the route files`,
      );
    return {
      run,
      steps: stepping.steps,
      vehicles: [...declared].length - persons,
      persons,
      trafficLights: lights.length,
      vehicleTypes: stepping.types.size,
      warnings,
    };
  } catch (error) {
    // SUMO may accept the connection and then refuse its inputs: its own message says why.
    if (!recorder) await sumo.exitedWithin(2000);
    await client.close().catch(() => {});
    sumo.kill();
    if (recorder) await recorder.end('inner_error').catch(() => {});
    throw (!recorder && sumo.failedToStart()) || error;
  } finally {
    if (!sumo.exited) sumo.kill();
  }
}

/**
 * Vehicles that arrived before simrec's questions about them reached SUMO, said in SUMO's words: what
 * is missing (route, vType, speedFactor, the type's size), how soon they arrived, and what helps.
 */
function undescribedWarning(ids: readonly string[], inFlightSteps: number, dt: number): string {
  const named = ids.slice(0, 5).join(', ') + (ids.length > 5 ? ` and ${ids.length - 5} more` : '');
  const [who, their] =
    ids.length === 1 ? [`vehicle ${named}`, 'its'] : [`${ids.length} vehicles (${named})`, 'their'];
  const seconds = Number((inFlightSteps * dt).toFixed(3));
  return (
    `${who} arrived within ${inFlightSteps} steps (${seconds} s) of departing, before simrec asked SUMO for ${their} route and vType: ` +
    `recorded without route, vType and speedFactor, as 4.5 m long and 1.8 m wide (simrec's questions reach SUMO up to ${inFlightSteps} steps late; a shorter --step-length makes that less simulated time)`
  );
}
