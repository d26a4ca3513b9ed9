import { readFile } from 'node:fs/promises';
import { describeValue, invalid, SimrecError } from '../model/errors.js';
import type { RoadNetwork, RoadNetworkFormat } from '../model/roadnet.js';
import { readOpenDrive, type OpenDriveReadOptions } from './opendrive/opendrive-reader.js';
import { readSumoNet } from './sumo/sumo-net-reader.js';
import type { ReadResult } from './xml/xml-source.js';

export type RoadNetworkReadOptions = OpenDriveReadOptions;

/**
 * The format of a road-network document, from its root element: `<net>` is SUMO, `<OpenDRIVE>` is
 * OpenDRIVE. File names are not trusted (netconvert output is often renamed, and .xml says nothing).
 */
export function detectRoadNetworkFormat(text: string): RoadNetworkFormat | undefined {
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  // Skip the XML declaration, comments (netconvert writes its whole configuration into one) and DOCTYPE.
  for (;;) {
    while (i < text.length && /\s/.test(text[i]!)) i++;
    if (text.startsWith('<?', i)) i = text.indexOf('?>', i) + 2;
    else if (text.startsWith('<!--', i)) i = text.indexOf('-->', i) + 3;
    else if (text.startsWith('<!', i)) i = text.indexOf('>', i) + 1;
    else break;
    if (i <= 2) return undefined;
  }
  const root = /^<([A-Za-z_][\w.:-]*)/.exec(text.slice(i, i + 100))?.[1];
  if (root === 'net') return 'sumo';
  if (root === 'OpenDRIVE') return 'opendrive';
  return undefined;
}

/** Reads a SUMO .net.xml or an OpenDRIVE .xodr given as text, whichever it is. */
export function readRoadNetwork(text: string, options: RoadNetworkReadOptions = {}): ReadResult<RoadNetwork> {
  // Neither SUMO nor OpenDRIVE uses a DTD; entity declarations in one are how "billion laughs" and
  // external-entity attacks on XML readers start, so they are refused before any parsing.
  const dtd = /<!DOCTYPE[^>[]*\[|<!ENTITY/i.exec(text);
  if (dtd)
    throw invalid(
      `${options.file ?? '(input)'}: refused: the document declares entities (${describeValue(dtd[0])}); road networks need no DTD, and entity expansion is an attack on XML readers`,
    );
  const format = detectRoadNetworkFormat(text);
  if (format === 'sumo') return readSumoNet(text, options);
  if (format === 'opendrive') return readOpenDrive(text, options);
  const start = text
    .replace(/^\uFEFF/, '')
    .trimStart()
    .slice(0, 40);
  throw invalid(
    `${options.file ?? '(input)'}: not a road network: expected a SUMO <net> or an <OpenDRIVE> document, got ${describeValue(start)}`,
  );
}

export async function readRoadNetworkFile(
  path: string,
  options: Omit<RoadNetworkReadOptions, 'file'> = {},
): Promise<ReadResult<RoadNetwork>> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new SimrecError('not_found', `${path}: no such file`);
    throw new SimrecError('io', `${path}: cannot read: ${(error as Error).message}`, { cause: error });
  }
  return readRoadNetwork(text, { ...options, file: path });
}
