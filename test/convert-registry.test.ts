/** `simrec import FORMAT` / `simrec export RUN FORMAT` reach every registered codec, as a user types them. */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { FORMATS } from '../src/formats/registry.js';
import { fixture, tempDir } from './helpers/paths.js';
import { cliJson, runCli } from './helpers/run-cli.js';

const dir = tempDir('simrec-convert-');
after(() => dir.cleanup());
const env = { SIMREC_STORE: join(dir.path, 'convert.db') };

describe('the generic import and export commands', () => {
  it('perception in, perception, coco, yolo and soda out, soda and perception back in', () => {
    const first = cliJson<{ run: { id: number }; captures: number }>(
      ['import', 'perception', fixture('perception-simrun', 'datasetinsights'), '--json'],
      env,
    );
    const run = String(first.run.id);
    for (const format of ['perception', 'coco', 'yolo', 'soda']) {
      const out = join(dir.path, format);
      const r = runCli(['export', run, format, out], env);
      assert.equal(r.status, 0, `${format}: ${r.stderr}`);
      assert.ok(existsSync(out), `${format} wrote ${out}`);
    }
    assert.ok(existsSync(join(dir.path, 'perception', 'Dataset', 'captures_000.json')));
    assert.ok(existsSync(join(dir.path, 'yolo', 'classes.txt')));
    const again = cliJson<{ run: { id: number }; captures: number }>(
      ['import', 'perception', join(dir.path, 'perception'), '--json'],
      env,
    );
    assert.equal(again.captures, first.captures, 'the exported dataset reads back with every capture');
    const soda = cliJson<{ run: { id: number } }>(['import', 'soda', join(dir.path, 'soda'), '--json'], env);
    assert.ok(soda.run.id > again.run.id);
  });

  it('says which direction a codec does not support, and lists the formats for an unknown one', () => {
    const coco = runCli(['import', 'coco', dir.path], env);
    assert.equal(coco.status, 2, 'a direction the format does not have is bad usage (exit 2)');
    assert.equal(
      coco.stderr,
      'simrec: coco: import is not supported (simrec writes coco only); import reads limsim, perception, solo, soda, didrive, mcap, carla, osi, fcd\n',
    );
    const unknown = runCli(['import', 'nuplan', dir.path], env);
    assert.equal(unknown.status, 2);
    assert.equal(
      unknown.stderr,
      'simrec: FORMAT: expected one of limsim, perception, solo, soda, didrive, mcap, carla, osi, fcd (the formats import reads), got "nuplan"\n',
    );
    const typo = runCli(['export', '1', 'mcapp', join(dir.path, 'x.mcap')], env);
    assert.equal(typo.status, 2);
    assert.match(
      typo.stderr,
      /^simrec: FORMAT: expected one of limsim, perception, solo, coco, yolo, soda, didrive, mcap, parquet, carla, osi, fcd \(the formats export writes\), got "mcapp"\n$/,
    );
  });

  it('lists in each help only the formats of its direction', () => {
    const formatsIn = (help: string): string[] => {
      const listed = /\(formats: ([^)]*)\)/.exec(help);
      assert.ok(listed, help);
      return listed[1]!.split(', ');
    };
    // Help is wrapped to the width of a terminal: read as one line.
    const importHelp = runCli(['import', '--help'], env).stdout.replace(/\s+/g, ' ');
    const exportHelp = runCli(['export', '--help'], env).stdout.replace(/\s+/g, ' ');
    assert.deepEqual(formatsIn(importHelp), [
      'limsim',
      'perception',
      'solo',
      'soda',
      'didrive',
      'mcap',
      'carla',
      'osi',
      'fcd',
    ]);
    assert.match(
      importHelp,
      / format limsim \| perception \| solo \| soda \| didrive \| mcap \| carla \| osi \| fcd location /,
    );
    assert.deepEqual(formatsIn(exportHelp), [
      'limsim',
      'perception',
      'solo',
      'coco',
      'yolo',
      'soda',
      'didrive',
      'mcap',
      'parquet',
      'carla',
      'osi',
      'fcd',
    ]);
    assert.match(
      exportHelp,
      / format limsim \| perception \| solo \| coco \| yolo \| soda \| didrive \| mcap \| parquet \| carla \| osi \| fcd location /,
    );
  });

  it("declares each format's directions as its codec has them (read for import, write for export)", async () => {
    for (const [name, entry] of Object.entries(FORMATS)) {
      const codec = await entry.load();
      assert.equal(entry.directions.includes('import'), typeof codec.read === 'function', `${name} import`);
      assert.equal(entry.directions.includes('export'), typeof codec.write === 'function', `${name} export`);
    }
  });
});
