/**
 * Recording overhead on a real SUMO: the same simulation run plain (SUMO alone) and recorded by simrec
 * over TraCI, steps per second of each, and simrec's recorded actor-states per second beside LimSim's
 * write ceiling (its writer thread inserts at most 1,000 rows a second). Measured in a process of its
 * own, which records as `simrec record sumo` does: below SUMO's priority (SUMO_RECORDER_NICE), which
 * lasts for the rest of the process.
 */
import { execFile, execFileSync, spawn, spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { TraciClient } from '../src/ingest/traci/traci-client.js';
import { VAR } from '../src/ingest/traci/traci-protocol.js';
import { recordSumo } from '../src/ingest/traci/sumo-recorder.js';
import { SUMO_RECORDER_NICE } from '../src/record/process-priority.js';
import { VEHICLE_VARS } from '../src/ingest/traci/sumo-variables.js';
import { openStore } from '../src/store/open-store.js';

const LIMSIM_ROWS_PER_SECOND = 1000;

export interface SumoOverhead {
  skipped?: string;
  simulatedSeconds?: number;
  steps?: number;
  plainStepsPerSecond?: number;
  /** SUMO stepped over TraCI with the recorder's subscriptions, steps sent ahead, decoded and dropped: the floor. */
  traciStepsPerSecond?: number;
  /**
   * SUMO writing its own floating car data (`--fcd-output` with accelerations, at its default precision
   * of a centimetre) to a file: how SUMO's users record a run without TraCI, and what recording costs SUMO
   * when it formats the same variables itself.
   */
  fcdStepsPerSecond?: number;
  recordedStepsPerSecond?: number;
  actorStatesPerSecond?: number;
  limsimCeilingRatio?: number;
}

export async function measureSumoOverhead(
  scratch: string,
  repoRoot: string,
  quick: boolean,
): Promise<SumoOverhead> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [fileURLToPath(import.meta.url), 'child', scratch, repoRoot, String(quick)],
    { maxBuffer: 1 << 20 },
  );
  return JSON.parse(stdout) as SumoOverhead;
}

async function measureSumoOverheadHere(
  scratch: string,
  repoRoot: string,
  quick: boolean,
): Promise<SumoOverhead> {
  try {
    execFileSync('sumo', ['--version'], { stdio: 'pipe' });
  } catch {
    return { skipped: 'sumo is not installed (apt-get install sumo sumo-tools)' };
  }
  const fixtures = join(repoRoot, 'test', 'fixtures', 'limsim-networks', 'bigInter');
  const net = join(fixtures, 'bigInter.net.xml');
  const routes = join(fixtures, 'bigInter.rou.xml');
  const seconds = quick ? 60 : 600;
  const stepLength = 0.1;
  const env = { ...process.env, SUMO_HOME: process.env.SUMO_HOME ?? '/usr/share/sumo' };
  const plainStart = performance.now();
  // The same simulation for every peer: SUMO alone, the TraCI floor, simrec.
  const simulation = ['-n', net, '-r', routes, '--step-length', String(stepLength), '--no-step-log', 'true'];
  const plain = spawnSync('sumo', [...simulation, '--end', String(seconds)], { env, stdio: 'pipe' });
  if (plain.status !== 0) return { skipped: `sumo failed: ${plain.stderr.toString().slice(0, 200)}` };
  const plainSeconds = (performance.now() - plainStart) / 1000;
  const fcdFile = join(scratch, 'sumo-overhead.fcd.xml');
  const fcdStart = performance.now();
  const fcd = spawnSync(
    'sumo',
    [...simulation, '--end', String(seconds), '--fcd-output', fcdFile, '--fcd-output.acceleration', 'true'],
    { env, stdio: 'pipe' },
  );
  const fcdSeconds = (performance.now() - fcdStart) / 1000;
  rmSync(fcdFile, { force: true });
  if (fcd.status !== 0)
    return { skipped: `sumo --fcd-output failed: ${fcd.stderr.toString().slice(0, 200)}` };
  const traciStepsPerSecond = await traciFloor(simulation, Math.round(seconds / stepLength), env);
  const store = await openStore(join(scratch, 'sumo-overhead.db'));
  try {
    const start = performance.now();
    const result = await recordSumo(store, {
      net,
      routes: [routes],
      stepLength,
      duration: seconds - stepLength,
      recorderNice: SUMO_RECORDER_NICE,
    });
    const recordedSeconds = (performance.now() - start) / 1000;
    const samples = (await store.listRuns())[0]!.samples;
    const steps = Math.round(seconds / stepLength);
    const statesPerSecond = samples / recordedSeconds;
    return {
      simulatedSeconds: seconds,
      steps: result.steps,
      plainStepsPerSecond: Math.round(steps / plainSeconds),
      traciStepsPerSecond,
      fcdStepsPerSecond: Math.round(steps / fcdSeconds),
      recordedStepsPerSecond: Math.round(result.steps / recordedSeconds),
      actorStatesPerSecond: Math.round(statesPerSecond),
      limsimCeilingRatio: Math.round((statesPerSecond / LIMSIM_ROWS_PER_SECOND) * 10) / 10,
    };
  } finally {
    await store.close();
  }
}

export function formatSumoOverhead(o: SumoOverhead): string {
  if (o.skipped) return `SUMO recording overhead: skipped: ${o.skipped}`;
  return [
    `SUMO recording overhead (LimSim's bigInter, ${o.simulatedSeconds} s at 0.1 s steps):`,
    `  SUMO alone ${o.plainStepsPerSecond} steps/s; writing its own FCD output (with accelerations) ${o.fcdStepsPerSecond} steps/s (${(o.fcdStepsPerSecond! / o.plainStepsPerSecond!).toFixed(2)}x); stepped over TraCI with the same subscriptions, nothing kept, ${o.traciStepsPerSecond} steps/s; recorded by simrec ${o.recordedStepsPerSecond} steps/s (${(o.recordedStepsPerSecond! / o.plainStepsPerSecond!).toFixed(2)}x SUMO alone, ${(o.recordedStepsPerSecond! / o.traciStepsPerSecond!).toFixed(2)}x the TraCI floor, ${(o.recordedStepsPerSecond! / o.fcdStepsPerSecond!).toFixed(2)}x SUMO writing its FCD output)`,
    `  ${o.actorStatesPerSecond} actor-states/s recorded: ${o.limsimCeilingRatio}x LimSim's ceiling of ${LIMSIM_ROWS_PER_SECOND} rows/s`,
  ].join('\n');
}

/**
 * What any TraCI recorder pays before keeping anything: SUMO stepped over TraCI with the recorder's
 * subscriptions (every vehicle's variables, by a context subscription that covers the network), its
 * steps sent ahead as the recorder sends them, each step's answer decoded and dropped. This is SUMO
 * serving the variables: no client of TraCI records faster.
 */
async function traciFloor(
  simulation: readonly string[],
  steps: number,
  env: NodeJS.ProcessEnv,
): Promise<number> {
  const port = 20000 + Math.floor(Math.random() * 20000);
  const sumo = spawn('sumo', [...simulation, '--remote-port', String(port)], { env, stdio: 'ignore' });
  try {
    const client = await TraciClient.connect(port, {});
    await client.setOrder(1);
    await client.subscribe('simulation', '', [VAR.TIME, VAR.DEPARTED_VEHICLES_IDS]);
    const [junction] = await client.idList('junction');
    await client.subscribeContext('junction', junction!, 'vehicle', 1e7, VEHICLE_VARS);
    const start = performance.now();
    const inFlight: Promise<unknown>[] = [];
    for (let sent = 0, answered = 0; answered < steps; answered++) {
      while (inFlight.length < 16 && sent < steps) {
        inFlight.push(client.simulationStep());
        sent++;
      }
      await inFlight.shift();
    }
    const stepsPerSecond = Math.round(steps / ((performance.now() - start) / 1000));
    await client.close();
    return stepsPerSecond;
  } finally {
    sumo.kill();
  }
}

if (process.argv[2] === 'child')
  process.stdout.write(
    JSON.stringify(
      await measureSumoOverheadHere(process.argv[3]!, process.argv[4]!, process.argv[5] === 'true'),
    ),
  );
