/**
 * A run's camera images through the API a window at a time (#53): a camera's hour is a hundred thousand
 * images, which the run's detail listed one by one. `?captures=apart` counts them per sensor instead;
 * `/captures` gives a sensor's images over a window (and the one on screen at its start), at most 2,000;
 * `/capture-times` the first image of each part of the run, for the timeline's strip.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { encodePng } from '../src/formats/common/labelled-images/image-files.js';
import type { Attachment, AttachmentInfo } from '../src/model/attachment.js';
import type { StoreBackend } from '../src/model/store-port.js';
import { RunRecorder } from '../src/record/run-recorder.js';
import { startServer, type RunningServer } from '../src/server/start-server.js';
import type { CapturesAnswer, CaptureTimesAnswer } from '../src/server/wire-types.js';
import { openStore } from '../src/store/open-store.js';
import { fixture, tempDir } from './helpers/paths.js';
import { cliJsonAsync } from './helpers/run-cli.js';

const BEGIN = 1_700_000_000_000_000;
/** Two cameras: `front` at 30 Hz for 100 s (3,000 images), `rear` at 1 Hz; and images of no sensor. */
const FRONT = 3_000;

describe('camera images a window at a time (#53)', () => {
  const dir = tempDir('simrec-server-captures-');
  let store: StoreBackend;
  let server: RunningServer;
  let run: number;
  let all: AttachmentInfo[];
  const get = async <T>(path: string): Promise<{ status: number; body: T }> => {
    const answer = await fetch(new URL(path, server.url));
    return { status: answer.status, body: (await answer.json()) as T };
  };

  before(async () => {
    store = await openStore(join(dir.path, 'captures.db'));
    const rec = await RunRecorder.begin(store, { simulator: { name: 'cameras' }, begin: BEGIN });
    await rec.declareActor({ id: 'front', kind: 'sensor' });
    await rec.declareActor({ id: 'rear', kind: 'sensor' });
    const png = encodePng(2, 2, 3, new Uint8Array(12).fill(200));
    for (let i = 0; i < FRONT; i++) {
      const t = BEGIN + Math.round((i * 1e6) / 30);
      await rec.attach({
        name: `front/${i}.png`,
        mediaType: 'image/png',
        t,
        data: png,
        metadata: { sensor: 'front', boxes: [{ x: 0, y: 0, width: 1, height: 1, label: `car ${i}` }] },
      });
      if (i % 30 === 0)
        await rec.attach({
          name: `rear/${i / 30}.png`,
          mediaType: 'image/png',
          t,
          data: png,
          metadata: { sensor: 'rear' },
        });
    }
    // Not camera images: a label file with a time, an image without one, a road network's file.
    await rec.attach({
      name: 'labels/0.png',
      mediaType: 'image/png',
      t: BEGIN,
      data: png,
      metadata: { annotation: 'semantic' },
    });
    await rec.attach({ name: 'logo.png', mediaType: 'image/png', data: png });
    await rec.attach({
      name: 'notes.txt',
      mediaType: 'text/plain',
      t: BEGIN,
      data: new Uint8Array([104, 105]),
    });
    run = (await rec.end('completed', { end: BEGIN + 100_000_000 })).id;
    all = await store.listAttachments(run);
    server = await startServer({ store, port: 0 });
  });
  after(async () => {
    await server?.close();
    await store?.close();
    dir.cleanup();
  });

  it('counts the images per sensor in the detail and lists the other attachments as before', async () => {
    const whole = await get<{ attachments: AttachmentInfo[] }>(`/api/runs/${run}`);
    assert.equal(whole.body.attachments.length, all.length, 'without the option: every attachment');
    const apart = await get<{ attachments: AttachmentInfo[]; captures: { sensor: string; count: number }[] }>(
      `/api/runs/${run}?captures=apart&fields=shared`,
    );
    assert.equal(apart.status, 200);
    assert.deepEqual(apart.body.captures, [
      { sensor: 'front', count: FRONT },
      { sensor: 'rear', count: FRONT / 30 },
    ]);
    assert.deepEqual(apart.body.attachments.map((a) => a.name).sort(), [
      'labels/0.png',
      'logo.png',
      'notes.txt',
    ]);
    const bad = await get<{ error: string; code: string }>(`/api/runs/${run}?captures=all`);
    assert.equal(bad.status, 400);
    assert.match(bad.body.error, /query parameter captures: expected apart .* got "all"/);
  });

  it("gives a sensor's images over a window, and the one on screen at its start, as the store has them", async () => {
    const from = BEGIN + 10_010_000; // between two of front's images
    const to = BEGIN + 20_000_000;
    const { body } = await get<CapturesAnswer>(
      `/api/runs/${run}/captures?sensor=front&from=${from}&to=${to}`,
    );
    const front = all.filter((a) => a.metadata?.sensor === 'front').sort((a, b) => a.t! - b.t!);
    const before = front.filter((a) => a.t! <= from).at(-1)!;
    const expected = [before, ...front.filter((a) => a.t! > from && a.t! <= to)];
    assert.equal(body.more, false);
    assert.deepEqual(body.captures, expected);
    assert.equal(body.captures[0]!.name, 'front/300.png');
    // Every sensor's at once, in time order.
    const both = await get<CapturesAnswer>(`/api/runs/${run}/captures?from=${from}&to=${to}`);
    assert.deepEqual(
      both.body.captures.map((c) => c.t),
      both.body.captures.map((c) => c.t).sort((a, b) => a! - b!),
    );
    assert.ok(both.body.captures.some((c) => c.metadata?.sensor === 'rear'));
    assert.ok(both.body.captures.every((c) => c.metadata?.annotation === undefined && c.t !== undefined));
  });

  it('answers at most 2,000 images, saying there are more', async () => {
    const { body } = await get<CapturesAnswer>(
      `/api/runs/${run}/captures?sensor=front&from=${BEGIN}&to=${BEGIN + 100_000_000}`,
    );
    assert.equal(body.captures.length, 2_000);
    assert.equal(body.more, true);
    assert.equal(body.captures[0]!.name, 'front/0.png');
  });

  it('gives the first image of each part of the run for the strip', async () => {
    const { body } = await get<CaptureTimesAnswer>(`/api/runs/${run}/capture-times?buckets=100`);
    // 100 parts of a second each: front's first image of each second.
    assert.equal(body.times.length, 100);
    assert.deepEqual(
      body.times,
      Array.from({ length: 100 }, (_, s) => BEGIN + Math.round((s * 30 * 1e6) / 30)),
    );
  });

  it('refuses windows and parts it cannot answer, naming the parameter', async () => {
    for (const [path, pattern] of [
      [`captures?from=${BEGIN}`, /query parameters from and to: expected both/],
      [`captures?from=${BEGIN + 10}&to=${BEGIN}`, /from <= to/],
      [`captures?from=x&to=${BEGIN}`, /query parameter from: expected an integer/],
      ['capture-times?buckets=0', /query parameter buckets: expected an integer from 1 to 100000, got "0"/],
      ['capture-times?buckets=x', /query parameter buckets: expected an integer from 1 to 100000, got "x"/],
    ] as const) {
      const answer = await get<{ error: string }>(`/api/runs/${run}/${path}`);
      assert.equal(answer.status, 400, path);
      assert.match(answer.body.error, pattern);
    }
    assert.equal((await get(`/api/runs/999/captures?from=0&to=1`)).status, 404);
  });

  it('sees attachments put after it listed them: a road network attached by another process, images added and put again', async () => {
    type Detail = { hasRoadNetwork: boolean; captures: { sensor: string; count: number }[] };
    const detail = async (): Promise<Detail> =>
      (await get<Detail>(`/api/runs/${run}?captures=apart&fields=shared`)).body;
    const rearAt = async (t: number): Promise<string[]> =>
      (
        await get<CapturesAnswer>(`/api/runs/${run}/captures?sensor=rear&from=${t}&to=${t}`)
      ).body.captures.map((c) => c.name);
    assert.equal((await detail()).hasRoadNetwork, false);
    // The run is closed; `simrec roadnet FILE --attach RUN` gives it a road network from another process.
    await cliJsonAsync([
      '--store',
      join(dir.path, 'captures.db'),
      'roadnet',
      fixture('limsim-networks', 'corridor', 'corridor.net.xml'),
      '--attach',
      String(run),
      '--json',
    ]);
    assert.equal((await detail()).hasRoadNetwork, true, 'the road network attached');
    const png = encodePng(2, 2, 3, new Uint8Array(12).fill(10));
    const end = BEGIN + 100_000_000;
    const rear = (t: number): Attachment => ({
      name: 'rear/100.png',
      mediaType: 'image/png',
      t,
      data: png,
      metadata: { sensor: 'rear' },
    });
    await store.putAttachment(run, rear(end - 1));
    assert.deepEqual((await detail()).captures.at(-1), { sensor: 'rear', count: FRONT / 30 + 1 });
    assert.deepEqual(await rearAt(end), ['rear/100.png']);
    // The last image put again at another time: the same count, the image where it is now.
    await store.putAttachment(run, rear(end - 500_000));
    assert.deepEqual(await rearAt(end - 500_000), ['rear/100.png']);
    assert.deepEqual(await rearAt(end - 600_000), ['rear/99.png']);
  });
});
