import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { SimrecError } from '../src/model/errors.js';
import { readOpenDrive } from '../src/roadnet/opendrive/opendrive-reader.js';
import {
  attachRoadNetwork,
  loadRoadNetwork,
  ROADNET_ATTACHMENT,
  ROADNET_MEDIA_TYPE,
} from '../src/roadnet/roadnet-attachment.js';
import { readSumoNet } from '../src/roadnet/sumo/sumo-net-reader.js';
import { openStore } from '../src/store/open-store.js';
import { fixture, tempDir } from './helpers/paths.js';
import { newRun } from './helpers/roadnet-helpers.js';

const dir = tempDir('simrec-roadnet-');
after(() => dir.cleanup());

describe('road network kept with a run', () => {
  it('a SUMO net and an OpenDRIVE map round-trip through a real SQLite store, source text included', async () => {
    const location = join(dir.path, 'roadnet.db');
    const sumoText = readFileSync(fixture('limsim-networks', 'roundabout', 'roundabout.net.xml'), 'utf8');
    const sumo = readSumoNet(sumoText).network;
    const odr = readOpenDrive(
      readFileSync(fixture('esmini', 'xodr', 'fabriksgatan_traffic_lights.xodr'), 'utf8'),
    ).network;
    let store = await openStore(location);
    const [a, b, empty] = [await newRun(store), await newRun(store), await newRun(store)];
    await attachRoadNetwork(store, a, sumo);
    await attachRoadNetwork(store, b, odr);
    const listed = await store.listAttachments(a);
    assert.deepEqual(listed.map((x) => [x.name, x.mediaType]).sort(), [
      [ROADNET_ATTACHMENT, ROADNET_MEDIA_TYPE],
      ['roadnet/source.net.xml', 'application/xml'],
    ]);
    assert.equal(listed.find((x) => x.name === ROADNET_ATTACHMENT)!.metadata!.lanes, sumo.lanes.length);
    await store.close();

    store = await openStore(location);
    try {
      assert.deepEqual(await loadRoadNetwork(store, a), sumo);
      assert.equal((await loadRoadNetwork(store, a))!.source.text, sumoText, 'the source, byte for byte');
      assert.deepEqual(await loadRoadNetwork(store, b), odr);
      assert.ok((await store.getAttachment(b, 'roadnet/source.xodr'))!.data.byteLength > 60_000);
      assert.equal(await loadRoadNetwork(store, empty), undefined);
      // Attaching again replaces the network.
      await attachRoadNetwork(store, a, odr);
      assert.equal((await loadRoadNetwork(store, a))!.format, 'opendrive');
    } finally {
      await store.close();
    }
  });

  it('refuses an unknown run and an invalid network, and reports a damaged attachment', async () => {
    const store = await openStore(join(dir.path, 'bad.db'));
    try {
      const net = readSumoNet(readFileSync(fixture('esmini', 'sumo', 'straight.net.xml'), 'utf8')).network;
      await assert.rejects(
        attachRoadNetwork(store, 99, net),
        (e: unknown) => e instanceof SimrecError && e.code === 'not_found',
      );
      const run = await newRun(store);
      const broken = { ...net, connections: [{ fromLane: 'nowhere', toLane: net.lanes[0]!.id }] };
      await assert.rejects(
        attachRoadNetwork(store, run, broken),
        /connections\[0\].*fromLane: no lane "nowhere"/,
      );
      assert.deepEqual(await store.listAttachments(run), [], 'nothing written');
      await store.putAttachment(run, {
        name: ROADNET_ATTACHMENT,
        mediaType: ROADNET_MEDIA_TYPE,
        data: new TextEncoder().encode('{"format":"sumo"'),
      });
      await assert.rejects(loadRoadNetwork(store, run), /roadnet\/network\.json: not JSON/);
    } finally {
      await store.close();
    }
  });
});
