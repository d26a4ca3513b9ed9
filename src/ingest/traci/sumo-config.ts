import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { XMLParser } from 'fast-xml-parser';
import { describeValue, invalid, SimrecError } from '../../model/errors.js';

/** What of `record sumo`'s options says what SUMO simulates. */
export interface SumoSimulationOptions {
  /** A .sumocfg; or `net` (and `routes`) instead. */
  config?: string;
  net?: string;
  routes?: string[];
  /** Seconds per step; SUMO's own (from the config, or 1 s) when absent. */
  stepLength?: number;
  /** Simulated seconds to record at most. */
  duration?: number;
  /** More arguments for SUMO (e.g. `--fcd-output FILE`). */
  sumoArgs?: string[];
}

/**
 * The simulation to run: SUMO's inputs (a .sumocfg, or a network and routes) and its time window, the
 * extra arguments' `--begin` and `--end` winning over the config's.
 */
export interface SumoSimulation {
  net: string;
  routes: string[];
  /** The arguments that give SUMO its inputs. */
  args: string[];
  /** Seconds per step, as asked or as the config has it; SUMO's own (1 s) when undefined. */
  stepLength: number | undefined;
  /** The simulation's begin and end times (seconds). */
  begin: number;
  end: number | undefined;
  /** The seconds the recording will last when that is known (the end's, or the duration), for progress. */
  totalSeconds: number | undefined;
}

export function sumoSimulation(options: SumoSimulationOptions): SumoSimulation {
  const inputs = configInputs(options);
  const stepLength = options.stepLength ?? inputs.stepLength;
  const simBegin = argumentTime(options.sumoArgs ?? [], '--begin', '-b') ?? inputs.begin ?? 0;
  const simEnd = argumentTime(options.sumoArgs ?? [], '--end', '-e') ?? inputs.end;
  // SUMO under TraCI steps on past its end time as long as the client asks: the end is kept here.
  const endAfter = Math.min(
    options.duration ?? Infinity,
    simEnd === undefined ? Infinity : simEnd - simBegin,
  );
  const totalSeconds = Number.isFinite(endAfter) ? endAfter : undefined;
  if (stepLength !== undefined && !(stepLength > 0))
    throw invalid(`--step-length: expected a positive number of seconds, got ${describeValue(stepLength)}`);
  return {
    net: inputs.net,
    routes: inputs.routes,
    args: inputs.args,
    stepLength,
    begin: simBegin,
    end: simEnd,
    totalSeconds,
  };
}

interface SumoInputs {
  net: string;
  routes: string[];
  args: string[];
  stepLength: number | undefined;
  /** The simulation's begin and end times (seconds), from the config's <time>. */
  begin: number | undefined;
  end: number | undefined;
}

/** A time value of SUMO's (seconds, or SUMO's H:M:S form), or undefined. */
function sumoTime(value: string | undefined, where: string): number | undefined {
  if (value === undefined || value === '') return undefined;
  const parts = value.split(':').map(Number);
  const seconds = parts.reduce((sum, p) => sum * 60 + p, 0);
  if (parts.some((p) => !Number.isFinite(p)) || parts.length > 4)
    throw invalid(`${where}: expected a time in seconds (or H:M:S), got ${describeValue(value)}`);
  return seconds;
}

/** `--end`/`-e` (and `--begin`/`-b`) among the extra SUMO arguments: they win over the config's. */
function argumentTime(args: readonly string[], long: string, short: string): number | undefined {
  for (let i = args.length - 2; i >= 0; i--)
    if (args[i] === long || args[i] === short) return sumoTime(args[i + 1], `--sumo-args ${args[i]}`);
  return undefined;
}

function configInputs(options: SumoSimulationOptions): SumoInputs {
  if (options.config) {
    if (!existsSync(options.config))
      throw new SimrecError('not_found', `${options.config}: no such SUMO configuration`);
    const parser = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '' });
    let doc: Record<string, Record<string, Record<string, Record<string, string>>>>;
    try {
      doc = parser.parse(readFileSync(options.config, 'utf8')) as typeof doc;
    } catch (error) {
      throw invalid(`${options.config}: not XML: ${(error as Error).message}`);
    }
    const config = doc.configuration ?? doc.sumoConfiguration;
    const value = (section: string, key: string): string | undefined => config?.[section]?.[key]?.value;
    const net = value('input', 'net-file');
    if (!net)
      throw invalid(
        `${options.config}: <input><net-file value=...> is missing; simrec records the network beside the run`,
      );
    const base = dirname(options.config);
    const step = value('time', 'step-length');
    return {
      net: resolve(base, net),
      routes: (value('input', 'route-files') ?? '')
        .split(',')
        .filter(Boolean)
        .map((r) => resolve(base, r.trim())),
      args: ['-c', options.config],
      stepLength: step === undefined ? undefined : Number(step),
      begin: sumoTime(value('time', 'begin'), `${options.config}: <time><begin>`),
      end: sumoTime(value('time', 'end'), `${options.config}: <time><end>`),
    };
  }
  if (!options.net) throw invalid('record sumo: give a .sumocfg, or --net (and --routes)');
  const routes = options.routes ?? [];
  return {
    net: options.net,
    routes,
    args: ['-n', options.net, ...(routes.length ? ['-r', routes.join(',')] : [])],
    stepLength: undefined,
    begin: undefined,
    end: undefined,
  };
}
