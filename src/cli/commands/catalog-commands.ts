import { readFile, writeFile } from 'node:fs/promises';
import { basename, extname } from 'node:path';
import type { Command } from 'commander';
import { describeValue, invalid, notFound, SimrecError } from '../../model/errors.js';
import { parseScenarioId, validateScenario, validateVehicleConfig } from '../../model/catalog.js';
import type { JsonObject } from '../../model/json.js';
import { formatTime, printJson, printTable } from '../output.js';
import { requireFreeOutput, requireParentFolder } from '../output-target.js';
import { withExistingStore, withStore } from '../with-store.js';

interface JsonOption {
  json?: boolean;
}

async function readInput(path: string): Promise<Buffer> {
  try {
    return await readFile(path);
  } catch (error) {
    throw new SimrecError('invalid', `${path}: cannot read: ${(error as Error).message}`, { cause: error });
  }
}

/** `scenarios` and `vehicles`: the catalogue a team shares beside its runs. */
export function registerCatalogCommands(program: Command): void {
  const scenarios = program.command('scenarios').description('scenarios: list, put, get, delete');
  scenarios
    .command('ls', { isDefault: true })
    .alias('list')
    .description('list scenarios')
    .option('--json', 'print JSON')
    .action(async (opts: JsonOption, command: Command) =>
      withExistingStore(command, async (store) => {
        const list = await store.scenarios.list();
        if (opts.json) return printJson(list);
        printTable(
          ['ID', 'TIMESTAMP', 'BYTES', 'DESCRIPTION'],
          list.map((s) => [s.id, formatTime(s.timestamp), s.size, s.description]),
        );
      }),
    );
  scenarios
    .command('put')
    .description('store a scenario binary from a file (replaces one with the same id)')
    .argument('<file>', 'the scenario binary')
    .requiredOption('--id <id>', 'int64 scenario id', (v) => parseScenarioId(v, '--id'))
    .option('--description <text>', 'description', '')
    .option('--timestamp <micros>', 'time stamp in microseconds since the epoch (default: now)')
    .action(
      async (
        file: string,
        opts: { id: bigint; description: string; timestamp?: string },
        command: Command,
      ) => {
        const bin = await readInput(file);
        const timestamp = opts.timestamp === undefined ? Date.now() * 1000 : Number(opts.timestamp);
        const scenario = validateScenario({
          id: opts.id,
          timestamp,
          description: opts.description,
          bin: new Uint8Array(bin),
        });
        await withStore(command, async (store) => {
          await store.scenarios.put(scenario);
          process.stdout.write(
            `stored scenario ${scenario.id} (${scenario.bin.byteLength} bytes${scenario.description ? `, ${JSON.stringify(scenario.description)}` : ''}) from ${file} in ${store.location}\n`,
          );
        });
      },
    );
  scenarios
    .command('get')
    .description("print a scenario's record, or write its binary with --out")
    .argument('<id>', 'scenario id', (v) => parseScenarioId(v, 'ID'))
    .option('--out <file>', 'write the binary to this file')
    .option('--force', 'replace the file at --out')
    .option('--json', 'print JSON (the binary as base64)')
    .action(async (id: bigint, opts: JsonOption & { out?: string; force?: boolean }, command: Command) =>
      withExistingStore(command, async (store) => {
        if (opts.out) {
          requireParentFolder(opts.out);
          requireFreeOutput(opts.out, Boolean(opts.force));
        }
        const s = await store.scenarios.get(id);
        if (!s) throw notFound(`scenario ${id} does not exist in ${store.location}`);
        if (opts.out) await writeFile(opts.out, s.bin);
        if (opts.json) return printJson({ ...s, bin: Buffer.from(s.bin).toString('base64') });
        if (!opts.out)
          printTable(
            ['ID', 'TIMESTAMP', 'BYTES', 'DESCRIPTION'],
            [[s.id, formatTime(s.timestamp), s.bin.byteLength, s.description]],
          );
      }),
    );
  scenarios
    .command('rm')
    .alias('delete')
    .description('delete a scenario')
    .argument('<id>', 'scenario id', (v) => parseScenarioId(v, 'ID'))
    .action(async (id: bigint, _opts: unknown, command: Command) =>
      withExistingStore(command, async (store) => {
        if (!(await store.scenarios.delete(id)))
          throw notFound(`scenario ${id} does not exist in ${store.location}`);
      }),
    );

  const vehicles = program.command('vehicles').description('vehicle configurations: list, put, get, delete');
  vehicles
    .command('ls', { isDefault: true })
    .alias('list')
    .description('list vehicle configurations')
    .option('--json', 'print JSON')
    .action(async (opts: JsonOption, command: Command) =>
      withExistingStore(command, async (store) => {
        const list = await store.vehicles.list();
        if (opts.json) return printJson(list);
        printTable(
          ['NAME', 'TIMESTAMP', 'KEYS'],
          list.map((v) => [v.name, formatTime(v.timestamp), Object.keys(v.doc).join(',')]),
        );
      }),
    );
  vehicles
    .command('put')
    .description('store a vehicle configuration from a JSON file (replaces one with the same name)')
    .argument('<file>', 'a JSON object')
    .option('--name <name>', 'configuration name (default: the file name without extension)')
    .action(async (file: string, opts: { name?: string }, command: Command) => {
      const text = (await readInput(file)).toString('utf8');
      let doc: unknown;
      try {
        doc = JSON.parse(text);
      } catch (error) {
        throw invalid(`${file}: not valid JSON: ${(error as Error).message}`);
      }
      if (typeof doc !== 'object' || doc === null || Array.isArray(doc))
        throw invalid(`${file}: expected a JSON object, got ${describeValue(doc)}`);
      const name = opts.name ?? basename(file, extname(file));
      const config = validateVehicleConfig({ name, timestamp: Date.now() * 1000, doc: doc as JsonObject });
      await withStore(command, async (store) => {
        await store.vehicles.put(config);
        const keys = Object.keys(config.doc);
        process.stdout.write(
          `stored vehicle configuration ${JSON.stringify(config.name)} (${keys.length ? `keys ${keys.join(', ')}` : 'no keys'}) from ${file} in ${store.location}\n`,
        );
      });
    });
  vehicles
    .command('get')
    .description('print a vehicle configuration')
    .argument('<name>', 'configuration name')
    .option('--json', 'print JSON (the default for this command)')
    .action(async (name: string, _opts: JsonOption, command: Command) =>
      withExistingStore(command, async (store) => {
        const v = await store.vehicles.get(name);
        if (!v)
          throw notFound(`vehicle configuration ${JSON.stringify(name)} does not exist in ${store.location}`);
        printJson(v);
      }),
    );
  vehicles
    .command('rm')
    .alias('delete')
    .description('delete a vehicle configuration')
    .argument('<name>', 'configuration name')
    .action(async (name: string, _opts: unknown, command: Command) =>
      withExistingStore(command, async (store) => {
        if (!(await store.vehicles.delete(name)))
          throw notFound(`vehicle configuration ${JSON.stringify(name)} does not exist in ${store.location}`);
      }),
    );
}
