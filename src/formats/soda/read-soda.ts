import { SimrecError, describeValue, invalid } from '../../model/errors.js';
import type { JsonObject } from '../../model/json.js';
import type { Scenario, VehicleConfig } from '../../model/catalog.js';
import type { RunInfo } from '../../model/run.js';
import type { RunTarget } from '../../model/run-ports.js';
import { binary, doc, int32, int64, string, toPlainJson, type BsonDoc } from './bson-fields.js';
import { readDataset, type DatasetRef } from './read-soda-dataset.js';
import { collectionRole, datasetCollection, FILE_TYPES } from './soda-layout.js';
import type { SodaSource } from './soda-source.js';

export interface SodaImportOptions {
  /** Import this dataset only (G1/G2 `datasets._id`, or G3 `dataset_<N>`'s N). */
  dataset?: number;
  warn?: (message: string) => void;
  onProgress?: (done: number, total: number) => void;
}

export interface SodaImportResult {
  runs: { dataset: number; collection: string; run: RunInfo }[];
  scenarios: number;
  vehicles: number;
}

/** Collections a simrec store keeps beside SODA.Sim's in one database, and MongoDB's own. */
const NOT_SODA_BUT_EXPECTED = /^(simrec_|system\.)/;

/**
 * Imports SODA.Sim datasets (each as a run), scenarios and vehicle configurations. Any collection
 * SODA.Sim does not write is refused before anything is imported.
 */
export async function importSoda(
  into: RunTarget,
  source: SodaSource,
  options: SodaImportOptions = {},
): Promise<SodaImportResult> {
  const warn = options.warn ?? (() => {});
  const names = (await source.collections()).filter((n) => !NOT_SODA_BUT_EXPECTED.test(n));
  for (const name of names)
    if (!collectionRole(name))
      throw invalid(
        `${source.location}: collection ${describeValue(name)} is not in SODA.Sim's layout (datasets, dataset<ID>, dataset_<N>, scenarios, vehicles, files)`,
      );
  const refs: DatasetRef[] = [];
  if (names.includes('datasets'))
    for await (const descriptor of source.documents('datasets', { laneMarks: true })) {
      const id = int64(descriptor.doc._id, `${descriptor.where}._id`);
      refs.push({ id, collection: datasetCollection(id), descriptor, generation: 'G1/G2' });
    }
  for (const name of names) {
    const role = collectionRole(name);
    if (role?.role !== 'dataset') continue;
    if (role.selfDescribed) {
      if (options.dataset !== undefined && options.dataset !== role.id) continue;
      const descriptor = await findDescriptor(source, name);
      refs.push({ id: role.id, collection: name, descriptor, generation: 'G3' });
    } else if (!refs.some((r) => r.collection === name))
      warn(`${source.location}: ${name} has no document in datasets; it is not imported`);
  }
  const selected = refs.filter((r) => options.dataset === undefined || r.id === options.dataset);
  if (options.dataset !== undefined && selected.length === 0)
    throw new SimrecError('not_found', `${source.location}: no dataset ${options.dataset}`);
  const result: SodaImportResult = { runs: [], scenarios: 0, vehicles: 0 };
  for (const [i, ref] of selected.entries()) {
    options.onProgress?.(i, selected.length);
    // A dataset whose recorder inserted no batch yet has no collection; its run has no samples.
    const from = names.includes(ref.collection) ? source : withoutCollection(source, ref.collection);
    const run = await readDataset(into, from, ref, { warn });
    result.runs.push({ dataset: ref.id, collection: ref.collection, run });
  }
  options.onProgress?.(selected.length, selected.length);
  if (names.includes('scenarios'))
    for await (const { doc: d, where } of source.documents('scenarios')) {
      await into.scenarios.put(scenarioFromDoc(d, where));
      result.scenarios++;
    }
  if (names.includes('vehicles'))
    for await (const { doc: d, where } of source.documents('vehicles')) {
      await into.vehicles.put(vehicleFromDoc(d, where));
      result.vehicles++;
    }
  if (names.includes('files'))
    for await (const { doc: d, where } of source.documents('files')) {
      const item = fileFromDoc(d, where);
      if (item.kind === 'vehicle') {
        await into.vehicles.put(item.vehicle);
        result.vehicles++;
      } else if (item.kind === 'scenario') {
        await into.scenarios.put(item.scenario);
        result.scenarios++;
      } else
        warn(`${where}: files.type ${item.type} (${item.label}) has no place in simrec's catalogs; skipped`);
    }
  return result;
}

function withoutCollection(source: SodaSource, collection: string): SodaSource {
  return {
    location: source.location,
    collections: () => source.collections(),
    documents: (name, options) =>
      name === collection ? (async function* () {})() : source.documents(name, options),
    close: () => source.close(),
  };
}

async function findDescriptor(source: SodaSource, collection: string): Promise<DatasetRef['descriptor']> {
  for await (const item of source.documents(collection, { laneMarks: true }))
    if (!('batch' in item.doc)) return item;
  throw invalid(`${source.location}: ${collection} has no descriptor document (one without batch)`);
}

function scenarioFromDoc(d: BsonDoc, where: string): Scenario {
  return {
    id: BigInt(int64(d._id, `${where}._id`)),
    timestamp: int64(d.timestamp, `${where}.timestamp`),
    description: string(d.description, `${where}.description`),
    bin: binary(d.bin, `${where}.bin`),
  };
}

function vehicleFromDoc(d: BsonDoc, where: string): VehicleConfig {
  return {
    name: string(d._id, `${where}._id`),
    timestamp: int64(d.timestamp, `${where}.timestamp`),
    doc: toPlainJson(doc(d['soda.sim'], `${where}["soda.sim"]`), `${where}["soda.sim"]`) as JsonObject,
  };
}

/** Unreal's FGuid: four uint32 stored little-endian, shown as Unreal's DigitsWithHyphens. */
export function guidToString(bytes: Uint8Array): string {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const [a, b, c, d] = [0, 4, 8, 12].map((o) => view.getUint32(o, true)) as [number, number, number, number];
  const hex = (v: number, n: number): string => v.toString(16).toUpperCase().padStart(n, '0');
  return `${hex(a, 8)}-${hex(b >>> 16, 4)}-${hex(b & 0xffff, 4)}-${hex(c >>> 16, 4)}-${hex(c & 0xffff, 4)}${hex(d, 8)}`;
}

type FileItem =
  | { kind: 'vehicle'; vehicle: VehicleConfig }
  | { kind: 'scenario'; scenario: Scenario }
  | { kind: 'other'; type: number; label: string };

const utf16 = new TextDecoder('utf-16le', { fatal: true });

/** A G3 `files` document: vehicles (UTF-16LE JSON) and levels (GVAS bytes) have a place in simrec. */
function fileFromDoc(d: BsonDoc, where: string): FileItem {
  const id = binary(d._id, `${where}._id`);
  if (id.byteLength !== 16)
    throw invalid(`${where}._id: expected a 16-byte GUID, got ${id.byteLength} bytes`);
  const guid = guidToString(id);
  const type = int32(d.type, `${where}.type`);
  const label = string(d.label, `${where}.label`);
  const description = 'description' in d ? string(d.description, `${where}.description`) : '';
  const timestamp = int64(d.last_modified, `${where}.last_modified`) * 1_000_000;
  const data = binary(d.data, `${where}.data`);
  if (type === FILE_TYPES.vehicle) {
    let json: unknown;
    try {
      // Unreal writes its TCHAR buffer as is: UTF-16LE, no byte-order mark, no terminator.
      json = JSON.parse(utf16.decode(data));
    } catch (error) {
      throw invalid(`${where}.data: expected a vehicle as UTF-16LE JSON: ${(error as Error).message}`);
    }
    if (typeof json !== 'object' || json === null || Array.isArray(json))
      throw invalid(`${where}.data: expected a JSON object`);
    return { kind: 'vehicle', vehicle: { name: label, timestamp, doc: json as JsonObject } };
  }
  if (type === FILE_TYPES.level) {
    // Scenario ids are int64; a level's GUID is 128 bits. Its first 8 bytes are the id, and the
    // whole GUID stays in the description, so the level can be told apart and found again.
    const view = new DataView(id.buffer, id.byteOffset, 16);
    return {
      kind: 'scenario',
      scenario: {
        id: view.getBigInt64(0, true),
        timestamp,
        description: `${label}${description ? `: ${description}` : ''} [${guid}]`,
        bin: data,
      },
    };
  }
  return { kind: 'other', type, label };
}
