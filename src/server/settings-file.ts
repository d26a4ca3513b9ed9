import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { SimrecError } from '../model/errors.js';
import { RecordingSettings, type RecordingSettingsValues } from './recording-settings.js';
import { SodaConnectionSettings, type SodaConnectionValues } from '../record/soda-connection-settings.js';

/**
 * The server's switches, kept in one JSON file so that a restarted `simrec serve` comes back as it
 * was left (SODA.Sim keeps its user settings in its config the same way):
 *
 *     { "recording": { "recordEveryRun": true },
 *       "mongodb": { "url": "mongodb://localhost:27017", "database": "sodasim", "autoConnect": false } }
 *
 * The URL may hold a password, so the file is written readable by its owner only.
 */
export interface ServerSettings {
  recording: RecordingSettings;
  mongodb: SodaConnectionSettings;
}

/** `$SIMREC_SETTINGS`, else `$XDG_CONFIG_HOME/simrec/settings.json` (`~/.config/...`): per user, as SODA.Sim's. */
export function defaultSettingsPath(): string {
  if (process.env.SIMREC_SETTINGS) return process.env.SIMREC_SETTINGS;
  const config = process.env.XDG_CONFIG_HOME || join(homedir(), '.config');
  return join(config, 'simrec', 'settings.json');
}

/**
 * Reads the settings at `path` (a missing file gives the defaults) and writes them back there on
 * every change. A malformed file is refused with its path and field, not silently replaced.
 */
export function loadSettingsFile(path: string, recording?: RecordingSettings): ServerSettings {
  let text: string | undefined;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT')
      throw new SimrecError('io', `${path}: cannot read the settings: ${(error as Error).message}`);
  }
  let saved: { recording?: Partial<RecordingSettingsValues>; mongodb?: Partial<SodaConnectionValues> } = {};
  if (text !== undefined) {
    try {
      saved = JSON.parse(text) as typeof saved;
    } catch (error) {
      throw new SimrecError('invalid', `${path}: the settings are not JSON: ${(error as Error).message}`);
    }
    if (typeof saved !== 'object' || saved === null || Array.isArray(saved))
      throw new SimrecError('invalid', `${path}: expected an object {"recording": {...}, "mongodb": {...}}`);
    for (const key of Object.keys(saved))
      if (key !== 'recording' && key !== 'mongodb')
        throw new SimrecError('invalid', `${path}: ${key}: unknown section (known: recording, mongodb)`);
  }
  const settings: ServerSettings = {
    recording: recording ?? new RecordingSettings(),
    mongodb: new SodaConnectionSettings(saved.mongodb, `${path}: mongodb`),
  };
  if (!recording && saved.recording !== undefined) {
    try {
      settings.recording.update(saved.recording);
    } catch (error) {
      throw new SimrecError('invalid', `${path}: ${(error as Error).message}`);
    }
  }
  const save = (): void => saveSettings(path, settings);
  settings.recording.onChange(save);
  settings.mongodb.onChange(save);
  return settings;
}

/** Writes the whole file beside itself and renames it into place: a crash never leaves half a file. */
function saveSettings(path: string, settings: ServerSettings): void {
  // The MongoDB section only once someone set it: a file with SODA.Sim's defaults would read as configured.
  const text = `${JSON.stringify(
    {
      recording: settings.recording.get(),
      ...(settings.mongodb.configured ? { mongodb: settings.mongodb.get() } : {}),
    },
    null,
    2,
  )}\n`;
  const partial = `${path}.partial`;
  try {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    writeFileSync(partial, text, { mode: 0o600 });
    renameSync(partial, path);
  } catch (error) {
    rmSync(partial, { force: true });
    throw new SimrecError('io', `${path}: cannot save the settings: ${(error as Error).message}`, {
      cause: error,
    });
  }
}
