/**
 * SUMO's floating car data (`sumo --fcd-output`): real runs of Debian's SUMO on networks no other test
 * drives (SUMO's own ramp game, a generated grid with sidewalks, the highway game's geo-referenced
 * net), imported and checked state by state against the file SUMO wrote; exports read by SUMO's own
 * tools (traceExporter.py, plotXMLAttributes.py); malformed files refused by name and line.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { after, before, describe, it } from 'node:test';
import { XMLParser } from 'fast-xml-parser';
import type { StoreBackend } from '../src/model/store-port.js';
import type { Sample } from '../src/model/stream.js';
import { sumoAngleToYaw } from '../src/model/units.js';
import { importRecording } from '../src/record/import-run.js';
import { exportRecording } from '../src/replay/export-run.js';
import { streamSamples } from '../src/replay/run-queries.js';
import { loadRoadNetwork } from '../src/roadnet/roadnet-attachment.js';
import { openStore } from '../src/store/open-store.js';
import { tempDir } from './helpers/paths.js';

const SUMO_HOME = '/usr/share/sumo';
const GAME = `${SUMO_HOME}/tools/game`;
let sumoMissing: string | false = false;
try {
  execFileSync('sumo', ['--version'], { stdio: 'pipe' });
} catch {
  sumoMissing = 'sumo is not installed here (.ci/run installs it: apt-get install sumo sumo-tools)';
}
/** A Python with matplotlib: Debian's python3-matplotlib is /usr/bin/python3's, which a pyenv on PATH hides. */
const plottingPython = ['python3', '/usr/bin/python3'].find((python) => {
  try {
    execFileSync(python, ['-c', 'import matplotlib'], { stdio: 'pipe' });
    return true;
  } catch {
    return false;
  }
});
const matplotlibMissing = plottingPython
  ? false
  : "python3-matplotlib is not installed (.ci/run installs it): SUMO's plotting tools need it";

const dir = tempDir('simrec-fcd-');
let store: StoreBackend;
before(async () => {
  store = await openStore(join(dir.path, 'fcd.db'));
});
after(async () => {
  await store.close();
  dir.cleanup();
});

const env = { ...process.env, SUMO_HOME };
const sumo = (args: string[]): void => {
  execFileSync('sumo', [...args, '--no-step-log', 'true', '--no-warnings', 'true'], { env, stdio: 'pipe' });
};

type Row = Record<string, string> & { id: string; element: 'vehicle' | 'person' | 'container' };

/** SUMO's own file, read whole by another XML parser: time (ms) -> id -> attributes. */
function readFcd(path: string): Map<number, Map<string, Row>> {
  const doc = new XMLParser({
    ignoreAttributes: false,
    attributeNamePrefix: '',
    parseAttributeValue: false,
    isArray: (name) => ['timestep', 'vehicle', 'person', 'container'].includes(name),
  }).parse(readFileSync(path, 'utf8')) as {
    'fcd-export': { timestep?: ({ time: string } & Record<string, Record<string, string>[]>)[] };
  };
  const out = new Map<number, Map<string, Row>>();
  for (const step of doc['fcd-export'].timestep ?? []) {
    const rows = new Map<string, Row>();
    for (const element of ['vehicle', 'person', 'container'] as const)
      for (const a of step[element] ?? []) rows.set(a.id!, { ...a, element } as Row);
    out.set(Math.round(Number(step.time) * 1000), rows);
  }
  return out;
}

/** Each actor's states by time (ms from the run's begin). */
async function statesOf(runId: number, begin: number, actor: string): Promise<Map<number, Sample>> {
  const out = new Map<number, Sample>();
  for await (const batch of streamSamples(store, runId, `${actor}/state`))
    for (const s of batch) out.set(Math.round((s.t - begin) / 1000), s);
  return out;
}

const near = (a: number, b: number, within: number, what: string): void =>
  assert.ok(Math.abs(a - b) <= within, `${what}: ${a} vs ${b}`);

describe("importing SUMO's FCD output", { skip: sumoMissing }, () => {
  it("SUMO's ramp game, 0.1 s steps: every vehicle at every step within 1 cm of SUMO's file, at its centre, and gone where SUMO's trip info says it arrived", async () => {
    const fcd = join(dir.path, 'ramp.fcd.xml');
    const trips = join(dir.path, 'ramp.trips.xml');
    sumo([
      ...['-n', `${GAME}/ramp/ramp.net.xml`, '-r', `${GAME}/ramp/ramp.rou.xml`],
      ...['--end', '90', '--step-length', '0.1', '--seed', '3', '--tripinfo-output', trips],
      ...['--fcd-output', fcd, '--fcd-output.max-leader-distance', '50'],
      '--fcd-output.attributes',
      'x,y,z,angle,type,speed,pos,lane,slope,signals,acceleration,accelerationLat,distance,odometer,posLat,leaderID,leaderSpeed,leaderGap',
    ]);
    const warnings: string[] = [];
    const { runs, details } = await importRecording(store, 'fcd', fcd, {
      settings: { net: `${GAME}/ramp/ramp.net.xml`, routes: `${GAME}/ramp/ramp.rou.xml` },
      warn: (_where, message) => warnings.push(message),
    });
    assert.deepEqual(warnings, []);
    const run = runs[0]!;
    assert.equal(details.positions, 'centre');
    assert.equal(run.metadata.positions, 'centre');
    assert.ok(await loadRoadNetwork(store, run.id), 'the network is kept with the run');
    const sumoFcd = readFcd(fcd);
    // ramp.rou.xml draws each vehicle's type from a distribution: trucks of 12 m, cars of 5 m.
    const lengths: Record<string, number> = { truck: 12, passenger: 5 };
    const actors = await store.listActors(run.id);
    let compared = 0;
    let trucks = 0;
    for (const actor of actors) {
      const states = await statesOf(run.id, run.begin, actor.id);
      for (const [ms, rows] of sumoFcd) {
        const row = rows.get(actor.id);
        const s = states.get(ms);
        assert.equal(Boolean(s), Boolean(row), `${actor.id} at ${ms / 1000} s: a state where SUMO has one`);
        if (!row || !s) continue;
        const length = lengths[row.type!]!;
        assert.equal(actor.extents?.length, length, `${actor.id}: its type's length`);
        const yaw = s.yaw as number;
        near(yaw, sumoAngleToYaw(Number(row.angle)), 1e-12, `${actor.id} yaw`);
        // SUMO's position is the front bumper; simrec's the centre, half the length behind it.
        near((s.x as number) + (length / 2) * Math.cos(yaw), Number(row.x), 0.01, `${actor.id} x at ${ms}`);
        near((s.y as number) + (length / 2) * Math.sin(yaw), Number(row.y), 0.01, `${actor.id} y at ${ms}`);
        near((s.lanePos as number) + length / 2, Number(row.pos), 0.01, `${actor.id} lanePos`);
        assert.equal(s.accel, Number(row.acceleration));
        assert.equal(s.pitch, -(Number(row.slope) * Math.PI) / 180);
        // Every other attribute SUMO wrote, under its own name: numbers as numbers, the rest as text.
        for (const [name, text] of Object.entries(row)) {
          if (['id', 'element', 'x', 'y', 'angle', 'pos', 'acceleration', 'slope'].includes(name)) continue;
          const numeric = !['type', 'lane', 'leaderID'].includes(name);
          assert.equal(s[name], numeric ? Number(text) : text, `${actor.id} ${name}`);
        }
        if (row.type === 'truck') trucks++;
        compared++;
      }
    }
    const inFile = [...sumoFcd.values()].reduce((n, rows) => n + rows.size, 0);
    assert.equal(compared, inFile, 'every vehicle-step of the file');
    assert.ok(compared > 20_000 && trucks > 1000, `${compared} vehicle-steps, ${trucks} of trucks`);
    // Presence: a vehicle is gone from the step SUMO says it arrived in.
    const arrivals = [
      ...readFileSync(trips, 'utf8').matchAll(/<tripinfo id="([^"]+)"[^>]* arrival="([\d.]+)"/g),
    ];
    assert.ok(arrivals.length > 20, `${arrivals.length} arrivals`);
    const byId = new Map(actors.map((a) => [a.id, a]));
    for (const [, id, arrival] of arrivals) {
      const presence = byId.get(id!)!.presence!;
      assert.equal(
        presence.at(-1)!.to,
        run.begin + Math.round(Number(arrival) * 1e6),
        `${id} left as it arrived`,
      );
    }
    const arrived = new Set(arrivals.map((m) => m[1]));
    for (const a of actors)
      if (!arrived.has(a.id)) assert.equal(a.presence!.at(-1)!.to, null, `${a.id} still driving`);
  });

  it("persons, containers and bicycles: each its kind, at its centre by its type (or SUMO's default type), within 1 cm", async () => {
    const net = join(dir.path, 'walk.net.xml');
    execFileSync(
      'netgenerate',
      [
        ...['--grid', '--grid.number', '3', '--grid.length', '100', '--sidewalks.guess', '--no-turnarounds'],
        ...['-o', net],
      ],
      { env, stdio: 'pipe' },
    );
    const routes = join(dir.path, 'walk.rou.xml');
    writeFileSync(
      routes,
      `<routes>
        <vType id="bike" vClass="bicycle" length="1.7" width="0.7"/>
        <vType id="van" length="6.5" width="2.2"/>
        <vType id="walker" vClass="pedestrian" length="0.3" width="0.5"/>
        <vehicle id="b0" type="bike" depart="0"><route edges="A0A1 A1A2"/></vehicle>
        <person id="p0" depart="0" type="walker"><walk edges="A0A1 A1B1"/></person>
        <container id="c0" depart="0"><tranship edges="A0B0 B0B1" speed="2"/></container>
        <vehicle id="v0" type="van" depart="1"><route edges="A0B0 B0C0"/></vehicle>
        <person id="p1" depart="2"><walk edges="B0B1 B1B2"/></person>
      </routes>`,
    );
    const fcd = join(dir.path, 'walk.fcd.xml');
    sumo(['-n', net, '-r', routes, '--fcd-output', fcd, '--end', '200']);
    const { runs } = await importRecording(store, 'fcd', fcd, { settings: { routes } });
    const run = runs[0]!;
    const actors = new Map((await store.listActors(run.id)).map((a) => [a.id, a]));
    const expected = {
      b0: ['cyclist', 1.7, 'vehicle'],
      v0: ['vehicle', 6.5, 'vehicle'],
      p0: ['pedestrian', 0.3, 'person'],
      p1: ['pedestrian', 0.215, 'person'], // DEFAULT_PEDTYPE
      c0: ['other', 6.1, 'container'], // DEFAULT_CONTAINERTYPE
    } as const;
    assert.deepEqual([...actors.keys()].sort(), Object.keys(expected).sort());
    const sumoFcd = readFcd(fcd);
    let compared = 0;
    for (const [id, [kind, length, element]] of Object.entries(expected)) {
      const actor = actors.get(id)!;
      assert.equal(actor.kind, kind, id);
      assert.equal(actor.extents?.length, length, id);
      assert.equal(actor.attributes.sumoElement, element, id);
      const states = await statesOf(run.id, run.begin, id);
      for (const [ms, rows] of sumoFcd) {
        const row = rows.get(id);
        if (!row) continue;
        assert.equal(row.element, element);
        const s = states.get(ms)!;
        const yaw = s.yaw as number;
        near((s.x as number) + (length / 2) * Math.cos(yaw), Number(row.x), 0.01, `${id} x`);
        near((s.y as number) + (length / 2) * Math.sin(yaw), Number(row.y), 0.01, `${id} y`);
        if (row.edge !== undefined) assert.equal(s.edge, row.edge);
        compared++;
      }
    }
    assert.ok(compared > 300, `${compared} states compared`);
  });

  it('a known pose: a car heading north-east, climbing 5 degrees, its front at (10, 20)', async () => {
    const fcd = join(dir.path, 'pose.fcd.xml');
    writeFileSync(
      fcd,
      `<fcd-export>
        <timestep time="0.00">
          <vehicle id="car" x="10.00" y="20.00" angle="45.00" type="car" speed="10.00" pos="30.00" lane="a_0" slope="5.00"/>
        </timestep>
      </fcd-export>`,
    );
    const routes = join(dir.path, 'pose.rou.xml');
    writeFileSync(routes, '<routes><vType id="car" length="4" width="2"/></routes>');
    const { runs } = await importRecording(store, 'fcd', fcd, { settings: { routes } });
    const [s] = [...(await statesOf(runs[0]!.id, runs[0]!.begin, 'car')).values()];
    // SUMO: degrees clockwise from north; simrec: radians counter-clockwise from east.
    near(s!.yaw as number, Math.PI / 4, 1e-12, 'yaw');
    // Climbing is nose up: a negative pitch (positive nose down, ISO 8855).
    near(s!.pitch as number, (-5 * Math.PI) / 180, 1e-12, 'pitch');
    near(s!.x as number, 10 - Math.SQRT2, 1e-12, 'x');
    near(s!.y as number, 20 - Math.SQRT2, 1e-12, 'y');
    near(s!.lanePos as number, 28, 1e-12, 'lanePos');

    // Without the types: positions stay at the front bumper, and the run and a warning say so.
    const warnings: string[] = [];
    const front = (await importRecording(store, 'fcd', fcd, { warn: (_w, m) => warnings.push(m) })).runs[0]!;
    assert.equal(front.metadata.positions, 'front bumper');
    assert.match(warnings.join('\n'), /front bumper.*--routes/);
    const [f] = [...(await statesOf(front.id, front.begin, 'car')).values()];
    assert.deepEqual([f!.x, f!.y, f!.lanePos], [10, 20, 30]);
    const actor = (await store.listActors(front.id))[0]!;
    assert.equal(actor.attributes.position, 'front bumper');

    // And back: SUMO's front bumper and degrees again.
    const out = join(dir.path, 'pose.out.xml');
    await exportRecording(store, 'fcd', [runs[0]!.id], out);
    assert.match(
      readFileSync(out, 'utf8'),
      /<vehicle id="car" x="10.00" y="20.00" angle="45.00" type="car" speed="10.00" pos="30.00" lane="a_0" slope="5.00"\/>/,
    );
  });

  it('a gzip-compressed file imports as the plain one does', async () => {
    const fcd = join(dir.path, 'gz.fcd.xml');
    sumo([
      '-n',
      `${GAME}/ramp/ramp.net.xml`,
      '-r',
      `${GAME}/ramp/ramp.rou.xml`,
      '--end',
      '30',
      '--fcd-output',
      fcd,
    ]);
    writeFileSync(`${fcd}.gz`, gzipSync(readFileSync(fcd)));
    const plain = (await importRecording(store, 'fcd', fcd)).runs[0]!;
    const packed = (await importRecording(store, 'fcd', `${fcd}.gz`)).runs[0]!;
    assert.equal(packed.metadata.compressed, true);
    const streams = await store.listStreams(plain.id);
    assert.ok(streams.length > 10);
    for (const s of streams) {
      const a = await statesOf(plain.id, plain.begin, s.actor!);
      const b = await statesOf(packed.id, packed.begin, s.actor!);
      assert.deepEqual([...b], [...a], s.id);
    }
  });

  it("geo coordinates (--fcd-output.geo) are kept, and placed by the network's projection within 1 cm of the cartesian file", async () => {
    const net = `${GAME}/highway/highway.net.xml`;
    const run = ['-n', net, '-r', `${GAME}/highway/highway.rou.xml`, '--end', '60', '--seed', '9'];
    const plainFile = join(dir.path, 'highway.fcd.xml');
    const geoFile = join(dir.path, 'highway.geo.fcd.xml');
    sumo([...run, '--fcd-output', plainFile]);
    sumo([...run, '--fcd-output', geoFile, '--fcd-output.geo', '--precision.geo', '9']);
    const { runs } = await importRecording(store, 'fcd', geoFile, { settings: { net } });
    const geoRun = runs[0]!;
    assert.equal(geoRun.metadata.geo, true);
    const plain = readFcd(plainFile);
    const geo = readFcd(geoFile);
    let compared = 0;
    for (const actor of await store.listActors(geoRun.id)) {
      const states = await statesOf(geoRun.id, geoRun.begin, actor.id);
      for (const [ms, s] of states) {
        const row = plain.get(ms)!.get(actor.id)!;
        near(s.x as number, Number(row.x), 0.01, `${actor.id} x at ${ms}`);
        near(s.y as number, Number(row.y), 0.01, `${actor.id} y at ${ms}`);
        const g = geo.get(ms)!.get(actor.id)!;
        assert.deepEqual([s.lon, s.lat], [Number(g.x), Number(g.y)]);
        compared++;
      }
    }
    assert.ok(compared > 1000, `${compared}`);
    // Written back as geo coordinates, as read.
    const out = join(dir.path, 'highway.out.xml');
    await exportRecording(store, 'fcd', [geoRun.id], out);
    const again = readFcd(out);
    for (const [ms, rows] of geo)
      for (const [id, row] of rows)
        assert.deepEqual([again.get(ms)!.get(id)!.x, again.get(ms)!.get(id)!.y], [row.x, row.y]);
  });
});

describe('malformed FCD files are refused by name and line, and nothing is imported', () => {
  const cases: [string, string | Buffer, RegExp][] = [
    [
      'a timestep going back',
      '<fcd-export>\n<timestep time="1.00">\n<vehicle id="a" x="0" y="0" angle="0"/>\n</timestep>\n<timestep time="0.50">\n</timestep>\n</fcd-export>',
      /back\.fcd\.xml:5: <timestep time="0\.50"> goes back: the timestep before it was at 1\.00 s/,
    ],
    [
      'an unclosed tag',
      '<fcd-export>\n<timestep time="1.00">\n<vehicle id="a" x="0" y="0" angle="0"/>\n</fcd-export>',
      /unclosed\.fcd\.xml:4:13: unexpected close tag: not well-formed XML; nothing was imported/,
    ],
    [
      'a file that is no FCD',
      '<routes>\n<vehicle id="a"/>\n</routes>',
      /other\.fcd\.xml:1: the document is <routes>; SUMO's FCD output is <fcd-export>/,
    ],
    [
      'a position that is no number',
      '<fcd-export>\n<timestep time="0.00">\n<vehicle id="a" x="1,5" y="0" angle="0"/>\n</timestep>\n</fcd-export>',
      /number\.fcd\.xml:3: <vehicle id="a"> attribute x: expected a number, got "1,5"/,
    ],
    [
      'a vehicle twice in one timestep',
      '<fcd-export>\n<timestep time="0.00">\n<vehicle id="a" x="0" y="0" angle="0"/>\n<vehicle id="a" x="1" y="0" angle="0"/>\n</timestep>\n</fcd-export>',
      /twice\.fcd\.xml:4: <vehicle id="a"> twice in the timestep at 0\.00 s/,
    ],
  ];
  const names = ['back', 'unclosed', 'other', 'number', 'twice'];
  cases.forEach(([what, text, pattern], i) => {
    it(what, async () => {
      const file = join(dir.path, `${names[i]}.fcd.xml`);
      writeFileSync(file, text);
      const before = (await store.listRuns()).length;
      await assert.rejects(importRecording(store, 'fcd', file), pattern);
      assert.equal((await store.listRuns()).length, before);
    });
  });

  it('a gzip file cut short: named with the byte where it ends', async () => {
    const lines = ['<fcd-export>'];
    for (let t = 0; t < 2000; t++)
      lines.push(`<timestep time="${t}.00"><vehicle id="a" x="${t}" y="0" angle="90"/></timestep>`);
    lines.push('</fcd-export>');
    const packed = gzipSync(lines.join('\n'));
    const file = join(dir.path, 'cut.fcd.xml.gz');
    writeFileSync(file, packed.subarray(0, Math.floor(packed.length / 2)));
    const before = (await store.listRuns()).length;
    await assert.rejects(
      importRecording(store, 'fcd', file),
      new RegExp(
        `cut\\.fcd\\.xml\\.gz: the gzip stream is damaged or cut short at byte ${statSync(file).size} of ${statSync(file).size}`,
      ),
    );
    assert.equal((await store.listRuns()).length, before);
  });
});

describe("the FCD export, read by SUMO's own tools", { skip: sumoMissing }, () => {
  it('traceExporter.py reads every vehicle at the front bumper simrec places it; plotXMLAttributes.py plots it', async (t) => {
    const fcd = join(dir.path, 'tools.fcd.xml');
    const routes = `${GAME}/ramp/ramp.rou.xml`;
    sumo([
      '-n',
      `${GAME}/ramp/ramp.net.xml`,
      '-r',
      routes,
      '--end',
      '40',
      '--seed',
      '5',
      '--fcd-output',
      fcd,
    ]);
    const run = (await importRecording(store, 'fcd', fcd, { settings: { routes } })).runs[0]!;
    const out = join(dir.path, 'tools.out.xml');
    await exportRecording(store, 'fcd', [run.id], out);
    const gps = join(dir.path, 'tools.gps.dat');
    execFileSync(
      'python3',
      [`${SUMO_HOME}/tools/traceExporter.py`, '--fcd-input', out, '--gpsdat-output', gps, '--orig-ids'],
      { env, stdio: 'pipe' },
    );
    // gpsdat: id, date and time, x, y, altitude, speed in km/h; a line per vehicle per second.
    const lines = readFileSync(gps, 'utf8').trim().split('\n');
    assert.ok(lines.length > 500, `${lines.length} lines`);
    const actors = new Map((await store.listActors(run.id)).map((a) => [a.id, a]));
    const cache = new Map<string, Map<number, Sample>>();
    for (const line of lines) {
      const [id, date, x, y] = line.split('\t');
      const second = Number(date!.slice(-2)) + 60 * Number(date!.slice(-5, -3));
      if (!cache.has(id!)) cache.set(id!, await statesOf(run.id, run.begin, id!));
      const s = cache.get(id!)!.get(second * 1000)!;
      const half = actors.get(id!)!.extents!.length / 2;
      near((s.x as number) + half * Math.cos(s.yaw as number), Number(x), 0.01, `${id} x`);
      near((s.y as number) + half * Math.sin(s.yaw as number), Number(y), 0.01, `${id} y`);
    }
    if (matplotlibMissing) return t.skip(matplotlibMissing);
    const png = join(dir.path, 'tools.png');
    execFileSync(
      plottingPython!,
      [`${SUMO_HOME}/tools/visualization/plotXMLAttributes.py`, '-x', 'x', '-y', 'y', '-s', '-o', png, out],
      { env: { ...env, MPLBACKEND: 'Agg' }, stdio: 'pipe' },
    );
    assert.ok(existsSync(png) && statSync(png).size > 10_000, 'a plot of every trajectory');
  });
});
