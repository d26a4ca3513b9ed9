import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import type { RoadNetworkSummary } from '../src/model/roadnet.js';
import { loadRoadNetwork } from '../src/roadnet/roadnet-attachment.js';
import { openStore } from '../src/store/open-store.js';
import { fixture, tempDir } from './helpers/paths.js';
import { newRun } from './helpers/roadnet-helpers.js';
import { cliJson, runCli } from './helpers/run-cli.js';

const dir = tempDir('simrec-roadnet-cli-');
after(() => dir.cleanup());

type Summary = RoadNetworkSummary & { warnings: string[] };

const count = (text: string, tag: string): number => [...text.matchAll(new RegExp(`<${tag}\\s`, 'g'))].length;

describe('simrec roadnet', () => {
  it('summarizes a SUMO net as JSON, with the counts the file declares', () => {
    const file = fixture('limsim-networks', 'bigInter', 'bigInter.net.xml');
    const text = readFileSync(file, 'utf8');
    // A name that says nothing: the format comes from the content.
    const renamed = join(dir.path, 'network.data');
    writeFileSync(renamed, text);
    const s = cliJson<Summary>(['roadnet', renamed, '--json']);
    assert.equal(s.format, 'sumo');
    assert.equal(s.lanes, count(text, 'lane'));
    assert.equal(s.edges, count(text, 'edge'));
    assert.equal(s.junctions, count(text, 'junction'));
    assert.equal(s.connections, count(text, 'connection'));
    assert.equal(s.trafficLights, 0);
    const normal = [...text.matchAll(/<lane id="([^"]*)"[^>]*length="([^"]*)"/g)].filter(
      (m) => !m[1]!.startsWith(':'),
    );
    assert.ok(Math.abs(s.totalLaneLength - normal.reduce((t, m) => t + Number(m[2]), 0)) < 1e-6);
    // Normal and internal elements counted apart, each count saying what it counts.
    const internalLanes = [...text.matchAll(/<lane id=":/g)].length;
    assert.equal(s.lanesByFunction.internal, internalLanes);
    assert.equal(s.lanesByFunction.normal, normal.length);
    assert.equal(
      s.edgesByFunction.internal,
      count(text, 'edge') - [...text.matchAll(/<edge id="[^:]/g)].length,
    );
    assert.equal(s.junctionsByKind.internal, [...text.matchAll(/<junction [^>]*type="internal"/g)].length);
    assert.equal(s.junctionsByKind.junction + s.junctionsByKind.internal, s.junctions);
    assert.match(s.counts.totalLaneLength!, /normal lanes/);
    assert.match(s.counts.lanes!, /internal/);
    assert.deepEqual(s.bounds, { min: [-500, -500], max: [500, 500] });
    assert.deepEqual(s.warnings, []);
  });

  it('summarizes an OpenDRIVE map as a table', () => {
    const r = runCli(['roadnet', fixture('esmini', 'xodr', 'straight_500m.xodr'), '--resolution', '1']);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^FIELD\s+VALUE\n/);
    assert.match(r.stdout, /\nformat\s+opendrive 1\.4\n/);
    assert.match(r.stdout, /\nlanes\s+6 \(normal 6\)\n/);
    assert.match(r.stdout, /\nlaneMarks\s+3\n/);
    assert.match(
      r.stdout,
      /\ntotalLaneLength\s+1000 m of normal traffic lanes\n/,
      'two driving lanes of 500 m; shoulders and borders carry no traffic',
    );
  });

  it('--attach keeps the network with a run in --store', async () => {
    const location = join(dir.path, 'cli.db');
    const store = await openStore(location);
    const run = { id: await newRun(store, 'esmini') };
    await store.close();
    const file = fixture('esmini', 'xodr', 'e6mini.xodr');
    const s = cliJson<Summary & { attachedTo: number }>([
      '--store',
      location,
      'roadnet',
      file,
      '--json',
      '--attach',
      String(run.id),
    ]);
    assert.equal(s.attachedTo, run.id);
    const again = await openStore(location);
    try {
      const net = await loadRoadNetwork(again, run.id);
      assert.equal(net?.lanes.length, s.lanes);
      assert.equal(net?.source.text, readFileSync(file, 'utf8'));
    } finally {
      await again.close();
    }
  });

  it('bad input: a clear message naming the file, and exit code 2', () => {
    const bad = join(dir.path, 'broken.xodr');
    writeFileSync(
      bad,
      readFileSync(fixture('esmini', 'xodr', 'straight_500m.xodr'), 'utf8').replace('<line/>', '<squiggle/>'),
    );
    const r = runCli(['roadnet', bad, '--json']);
    assert.equal(r.status, 2);
    assert.match(
      r.stderr,
      /^simrec: .*broken\.xodr: <geometry> \(line 11\): unknown geometry type <squiggle>/,
      'line 11 of straight_500m.xodr holds its only geometry',
    );
    assert.equal(r.stdout, '');
    const missing = runCli(['roadnet', join(dir.path, 'nope.net.xml')]);
    assert.equal(missing.status, 2);
    assert.match(missing.stderr, /nope\.net\.xml: no such file/);
  });
});
