/**
 * CARLA's recorder files (#51). Every real recording imports with what CARLA's own query code reads in
 * it, computed independently here: test/helpers/carla_query.py reads the bytes with Python's struct
 * module as CarlaRecorderQuery.cpp does and prints what show_recorder_file_info prints; simrec's run is
 * compared with it frame by frame, actor by actor, pose by pose. Malformed files are refused or warned
 * about by offset, and refused ones leave nothing in the store.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Bytes, ByteWriter } from '../src/formats/carla/carla-bytes.js';
import { RECORD_CODECS, SIX_FLOAT_PACKETS } from '../src/formats/carla/carla-records.js';
import { sixFloatsToSimrec } from '../src/formats/carla/carla-units.js';
import { PACKET, RECORD_SIZE, packetName } from '../src/formats/carla/carla-layout.js';
import { exportCarla } from '../src/formats/carla/write-carla.js';
import type { ActorInfo } from '../src/model/run.js';
import type { StoreBackend } from '../src/model/store-port.js';
import type { Sample } from '../src/model/stream.js';
import { wrapAngle } from '../src/model/units.js';
import { importRecording } from '../src/record/import-run.js';
import { exportRecording } from '../src/replay/export-run.js';
import { storeRunSource } from '../src/replay/run-source.js';
import { openStore } from '../src/store/open-store.js';
import { REPO_ROOT, tempDir } from './helpers/paths.js';
import { cliJson, runCli } from './helpers/run-cli.js';

const FIXTURES = join(REPO_ROOT, 'test', 'fixtures', 'scenario_runner');
export const CARLA_RECORDINGS = {
  betweenVehicles: join(FIXTURES, 'DistanceBetweenVehicles.log'),
  laneCenter: join(FIXTURES, 'DistanceToLaneCenter.log'),
  betweenVehicles2020: join(FIXTURES, '2020', 'DistanceBetweenVehicles.log'),
  laneCenter2020: join(FIXTURES, '2020', 'DistanceToLaneCenter.log'),
};
const QUERY = join(REPO_ROOT, 'test', 'helpers', 'carla_query.py');

export interface Reference {
  version: number;
  magic: string;
  date: number;
  map: string;
  frames: [number, number, number][];
  creates: [number, number, number, string, number, [number, string, string][], number[], number[]][];
  destroys: [number, number][];
  parents: [number, number, number][];
  collisionRecords: [number, number, number, number, boolean, boolean][];
  positions: number[][][];
  info: string;
  collisions: string;
  blocked: [number, string, string, string, number, number][];
}

/** What CARLA's query code reads in the file, by test/helpers/carla_query.py. */
export function reference(file: string, minTime?: number, minDistance?: number): Reference {
  const args = [QUERY, file, ...(minTime === undefined ? [] : [String(minTime), String(minDistance ?? 10)])];
  return JSON.parse(execFileSync('python3', args, { encoding: 'utf8', maxBuffer: 1 << 28 })) as Reference;
}

/** C's printf %g (what C++ streams print a float or double with by default). */
export function g(v: number): string {
  if (v === 0) return Object.is(v, -0) ? '-0' : '0';
  const [mantissa, exponent] = v.toExponential(5).split('e') as [string, string];
  const e = Number(exponent);
  const strip = (s: string): string => (s.includes('.') ? s.replace(/0+$/, '').replace(/\.$/, '') : s);
  if (e < -4 || e >= 6)
    return `${strip(mantissa)}e${e < 0 ? '-' : '+'}${String(Math.abs(e)).padStart(2, '0')}`;
  return strip(v.toFixed(5 - e));
}

/** strftime("%x %X") in the C locale, in UTC. */
const cDate = (seconds: number): string => {
  const d = new Date(seconds * 1000);
  const p = (n: number): string => String(n).padStart(2, '0');
  return `${p(d.getUTCMonth() + 1)}/${p(d.getUTCDate())}/${p(d.getUTCFullYear() % 100)} ${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())}`;
};

export async function samplesOf(store: StoreBackend, run: number, stream: string): Promise<Sample[]> {
  const all: Sample[] = [];
  for await (const batch of store.readSamples({ run, stream })) all.push(...batch);
  return all;
}

/** show_recorder_file_info (show_all false), printed from the run simrec stored. */
async function infoFromRun(store: StoreBackend, run: number): Promise<string> {
  const info = (await store.getRun(run))!;
  const carla = info.metadata.carla as { version: number; map: string; date: number };
  const lines = [`Version: ${carla.version}`, `Map: ${carla.map}`, `Date: ${cDate(carla.date)}`, ''];
  const streams = new Set((await store.listStreams(run)).map((s) => s.id));
  const events = streams.has('carla_event') ? await samplesOf(store, run, 'carla_event') : [];
  const collisions = streams.has('carla_collision') ? await samplesOf(store, run, 'carla_collision') : [];
  const cm = (v: unknown): string => g(Math.fround((v as number) * 100));
  const frames = await samplesOf(store, run, 'carla_frame');
  for (const f of frames) {
    let printed = false;
    const say = (line: string): void => {
      if (!printed) lines.push(`Frame ${f.frame} at ${g(f.elapsed as number)} seconds`);
      printed = true;
      lines.push(line);
    };
    for (const e of events.filter((x) => x.step === f.step)) {
      if (e.kind === 'add') {
        const d = e.description as { id: string; attributes: [number, string, string][] };
        say(` Create ${e.actorId}: ${d.id} (${e.type}) at (${cm(e.x)}, ${cm(-(e.y as number))}, ${cm(e.z)})`);
        for (const [, k, v] of d.attributes) lines.push(`  ${k} = ${v}`);
      } else if (e.kind === 'del') say(` Destroy ${e.actorId}`);
      else say(` Parenting ${e.actorId} with ${e.parent} (parent)`);
    }
    for (const c of collisions.filter((x) => x.step === f.step))
      say(
        ` Collision id ${c.collision} between ${c.actor1}${c.hero1 ? ' (hero) ' : ''} with ${c.actor2}${c.hero2 ? ' (hero) ' : ''}`,
      );
  }
  const last = frames.at(-1)!;
  lines.push('', `Frames: ${last.frame}`, `Duration: ${g(last.elapsed as number)} seconds`);
  return `${lines.join('\n')}\n`;
}

describe('CARLA units and frame', () => {
  it("a known pose: CARLA's centimetres, degrees, left-handed frame to simrec's metres, radians, right-handed", () => {
    // A car 10 m east and 20 m north of the origin (CARLA's Y points south: -2000 cm), 3 m up,
    // heading north-east (CARLA's yaw is clockwise seen from above: -45 deg), nose up 10 deg (CARLA's
    // pitch positive up), rolled 5 deg to the right (clockwise looking forward).
    const out = new ByteWriter();
    out.u32(174);
    for (const v of [1000, -2000, 300, 5, 10, -45]) out.f32(v);
    const bytes = Buffer.from(out.view());
    const { actor, fields } = RECORD_CODECS[PACKET.Position]!.decode(new Bytes(bytes, 'pose', 0, 'Position'));
    assert.equal(actor, 174);
    const deg = Math.PI / 180;
    assert.equal(fields.x, 10);
    assert.equal(fields.y, 20);
    assert.equal(fields.z, 3);
    assert.ok(Math.abs((fields.roll as number) - 5 * deg) < 1e-12, 'roll keeps its sign');
    assert.ok(
      Math.abs((fields.pitch as number) + 10 * deg) < 1e-12,
      "pitch: nose up is negative (ISO 8855's nose down positive)",
    );
    assert.ok(
      Math.abs((fields.yaw as number) - 45 * deg) < 1e-12,
      'yaw: north-east is +45 deg, counter-clockwise from +x (east)',
    );
    // And back to the same bytes.
    const back = new ByteWriter();
    RECORD_CODECS[PACKET.Position]!.encode(back, actor, fields, 'pose');
    assert.deepEqual(Buffer.from(back.view()), bytes);
  });

  it('Kinematics: m/s with y mirrored, angular velocity in deg/s to rad/s as an axial vector (-x, y, -z)', () => {
    // Driving north at 10 m/s while turning left (counter-clockwise seen from above) at 9 deg/s: in
    // CARLA's frame the velocity is -10 m/s along Y and the yaw (clockwise) decreases: z = -9 deg/s.
    const out = new ByteWriter();
    out.u32(7);
    for (const v of [0, -10, 0, 0, 0, -9]) out.f32(v);
    const { fields } = RECORD_CODECS[PACKET.Kinematics]!.decode(
      new Bytes(Buffer.from(out.view()), 'k', 0, 'Kinematics'),
    );
    assert.equal(fields.vy, 10);
    assert.ok(
      Math.abs((fields.wz as number) - (9 * Math.PI) / 180) < 1e-12,
      'yaw rate positive: turning left',
    );
  });

  it('a record judged from its bytes (Codec.givesBackBytes) is one that decodes and encodes back to them', () => {
    // The importer trusts givesBackBytes instead of encoding the record again: random records, their
    // bytes biased to 0 and 1 (C++ bools) and to float32 NaNs and infinities, judged both ways.
    let seed = 99;
    const random = (): number => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32;
    const judged = Object.entries(RECORD_CODECS).filter(([, codec]) => codec.givesBackBytes);
    assert.deepEqual(
      judged.map(([id]) => Number(id)).sort((a, b) => a - b),
      [
        PACKET.Position,
        PACKET.State,
        PACKET.AnimVehicle,
        PACKET.AnimWalker,
        PACKET.VehicleLight,
        PACKET.Kinematics,
      ].sort((a, b) => a - b),
    );
    for (const [id, codec] of judged) {
      const size = RECORD_SIZE[Number(id)]!;
      const outcomes = { back: 0, kept: 0 };
      for (let n = 0; n < 20_000; n++) {
        const bytes = Buffer.alloc(size);
        for (let i = 0; i < size; i++) {
          const r = random();
          bytes[i] = r < 0.3 ? 0 : r < 0.5 ? 1 : Math.floor(random() * 256);
        }
        if (random() < 0.2)
          bytes.writeUInt32LE(
            random() < 0.5 ? 0x7fc00000 : 0xff800000,
            4 + Math.floor(random() * (size - 7)),
          );
        const { actor, fields } = codec.decode(new Bytes(bytes, 'r', 0, 'record'));
        const finite = Object.values(fields).every((v) => typeof v !== 'number' || Number.isFinite(v));
        const back = new ByteWriter();
        codec.encode(back, actor, fields, 'record');
        const comesBack = finite && Buffer.from(back.view()).equals(bytes);
        assert.equal(
          codec.givesBackBytes!(bytes, 0),
          comesBack,
          `${packetName(Number(id))} ${bytes.toString('hex')}`,
        );
        outcomes[comesBack ? 'back' : 'kept']++;
      }
      if (Number(id) !== PACKET.VehicleLight)
        assert.ok(
          outcomes.back > 1000 && outcomes.kept > 1000,
          `${packetName(Number(id))}: ${JSON.stringify(outcomes)}`,
        );
    }
  });

  it('Position and Kinematics give back every finite float32, so the importer reads them without encoding them again', () => {
    // The importer keeps a Position or Kinematics record as values when its six floats are finite,
    // trusting that they come back as the same bytes, and reads them as columns with sixFloatsToSimrec.
    assert.deepEqual([...SIX_FLOAT_PACKETS].sort(), [PACKET.Position, PACKET.Kinematics].sort());
    const bits = new Uint32Array(1);
    const asFloat = new Float32Array(bits.buffer);
    // Random bit patterns (denormals, extremes, -0 among them), and the edges written out.
    const edges = [0, 0x80000000, 0x00000001, 0x807fffff, 0x00800000, 0x7f7fffff, 0xff7fffff, 0x3f800000];
    let seed = 12345;
    const random = (): number => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0);
    const converted = new Float64Array(6);
    let checked = 0;
    for (const packet of [PACKET.Position, PACKET.Kinematics]) {
      const codec = RECORD_CODECS[packet]!;
      for (let n = 0; n < 20_000; n++) {
        const record = new ByteWriter();
        record.u32(n);
        const floats: number[] = [];
        for (let k = 0; k < 6; k++) {
          let pattern = n < edges.length ? edges[(n + k) % edges.length]! : random();
          bits[0] = pattern;
          if (!Number.isFinite(asFloat[0]!)) pattern &= 0xbf7fffff; // an exponent not all ones
          bits[0] = pattern;
          floats.push(asFloat[0]!);
          record.u32(pattern);
        }
        const bytes = Buffer.from(record.view());
        const { actor, fields } = codec.decode(new Bytes(bytes, 'r', 0, 'record'));
        const back = new ByteWriter();
        codec.encode(back, actor, fields, 'record');
        assert.ok(
          Buffer.from(back.view()).equals(bytes),
          `record ${n} of packet ${packet}: ${bytes.toString('hex')}`,
        );
        sixFloatsToSimrec(packet === PACKET.Position ? 'position' : 'kinematics', floats, converted, 0);
        const names =
          packet === PACKET.Position
            ? ['x', 'y', 'z', 'roll', 'pitch', 'yaw']
            : ['vx', 'vy', 'vz', 'wx', 'wy', 'wz'];
        names.forEach((name, k) =>
          assert.ok(
            Object.is(converted[k], fields[name]),
            `${name} of record ${n}: ${converted[k]} against ${String(fields[name])}`,
          ),
        );
        checked++;
      }
    }
    assert.equal(checked, 40_000);
  });
});

describe('CARLA recordings from ScenarioRunner', () => {
  const tmp = tempDir('simrec-carla-');
  let store: StoreBackend;
  before(async () => {
    store = await openStore(join(tmp.path, 'store.db'));
  });
  after(async () => {
    await store.close();
    tmp.cleanup();
  });

  for (const [name, file] of Object.entries(CARLA_RECORDINGS))
    it(`${name}: every frame, actor and pose as CARLA's query code reads them`, async () => {
      const ref = reference(file);
      const warnings: string[] = [];
      const { runs } = await importRecording(store, 'carla', file, {
        warn: (w, m) => warnings.push(`${w}: ${m}`),
      });
      assert.deepEqual(warnings, []);
      const run = runs[0]!;
      assert.equal(run.endReason, 'completed');
      const meta = run.metadata as { map: string; carla: { version: number; date: number; layout: string } };
      assert.equal(meta.map, ref.map);
      assert.equal(meta.carla.version, ref.version);
      assert.equal(meta.carla.layout, '0.9.10 - 0.9.13');
      assert.equal(run.begin, ref.date * 1e6);

      // Frames: CARLA's id, elapsed and duration exactly; each at begin + elapsed.
      const frames = await samplesOf(store, run.id, 'carla_frame');
      assert.equal(frames.length, ref.frames.length);
      frames.forEach((f, i) => {
        const [id, elapsed, duration] = ref.frames[i]!;
        assert.equal(f.frame, id);
        assert.equal(f.step, id);
        assert.equal(f.elapsed, elapsed);
        assert.equal(f.duration, duration);
        assert.equal(f.t, ref.date * 1e6 + Math.round(elapsed * 1e6));
      });
      assert.equal(ref.frames.at(-1)![2], -1, 'CARLA leaves the last frame its -1 duration');
      assert.equal(run.end, frames.at(-1)!.t);

      // Actors: CARLA id, blueprint, role (hero is the ego), presence from creation to destruction.
      const actors = new Map((await store.listActors(run.id)).map((a) => [a.id, a] as const));
      assert.equal(actors.size, ref.creates.length);
      const tOf = new Map(
        ref.frames.map(([id, elapsed]) => [id, ref.date * 1e6 + Math.round(elapsed * 1e6)]),
      );
      for (const [frame, id, type, typeId, , attrs] of ref.creates) {
        const a: ActorInfo = actors.get(String(id))!;
        assert.ok(a, `actor ${id}`);
        assert.equal(a.sourceClass, typeId);
        assert.equal(a.attributes.type_id, typeId);
        assert.equal(a.attributes.carla_type, type);
        const role = attrs.find((x) => x[1] === 'role_name')?.[2];
        if (role !== undefined) assert.equal(a.attributes.role_name, role);
        assert.equal(a.kind === 'ego', role === 'hero', `actor ${id} (${typeId}, role ${role}) is ${a.kind}`);
        const destroyed = ref.destroys.find(([, d]) => d === id);
        assert.deepEqual(a.presence, [
          { from: tOf.get(frame), to: destroyed ? tOf.get(destroyed[0]) : null },
        ]);
      }
      assert.equal([...actors.values()].filter((a) => a.kind === 'ego').length, 1);

      // Every Position record: the actor's state at that frame, within a millimetre.
      let poses = 0;
      const states = new Map<string, Map<number, Sample>>();
      for (const s of await store.listStreams(run.id))
        if (s.name === 'state' && s.metadata.pose === undefined)
          states.set(s.actor!, new Map((await samplesOf(store, run.id, s.id)).map((x) => [x.step, x])));
      ref.positions.forEach((records, i) => {
        const frame = ref.frames[i]![0];
        for (const [id, x, y, z, roll, pitch, yaw] of records) {
          const s = states.get(String(id))?.get(frame);
          if (!s) assert.fail(`actor ${id} has no state at frame ${frame}`);
          const deg = 180 / Math.PI;
          const off = [
            Math.abs((s.x as number) * 100 - x!),
            Math.abs(-(s.y as number) * 100 - y!),
            Math.abs((s.z as number) * 100 - z!),
          ];
          const turned = [
            Math.abs((s.roll as number) * deg - roll!),
            Math.abs(-(s.pitch as number) * deg - pitch!),
            Math.abs(-(s.yaw as number) * deg - yaw!),
          ];
          if (off.some((d) => !(d <= 0.1)) || turned.some((d) => !(d < 1e-4)))
            assert.fail(
              `actor ${id} at frame ${frame}: ${JSON.stringify(s)}, CARLA (cm, deg) ${[x, y, z, roll, pitch, yaw]}`,
            );
          poses++;
        }
      });
      assert.equal(
        poses,
        [...states.values()].reduce((n, m) => n + m.size, 0),
        'no pose CARLA does not read',
      );

      // What show_recorder_file_info prints: the same text, from simrec's run.
      assert.equal(await infoFromRun(store, run.id), ref.info);
    });

  it("velocities: Kinematics where the recording has them, from poses where not, as the run's metadata says", async () => {
    const { runs } = await importRecording(store, 'carla', CARLA_RECORDINGS.betweenVehicles);
    const run = runs[0]!;
    const meta = run.metadata as {
      velocities: string;
      velocityCounts: { recorded: number; fromPoses: number };
    };
    assert.match(meta.velocities, /^recorded \(Kinematics packets: 1687 of 99939 poses.*derived from poses/);
    assert.deepEqual(meta.velocityCounts, { recorded: 1687, fromPoses: 98252 });
    const hero = await samplesOf(store, run.id, '174/state');
    // Frame 100: CARLA's Kinematics record says 2.47027 m/s forward (x) for the hero.
    const s = hero.find((x) => x.step === 100)!;
    assert.equal(s.vx, Math.fround(2.4702653884887695));
    assert.ok(Math.abs((s.speed as number) - 2.4702) < 1e-3);
    // Frame 1 has no Kinematics packet: its velocity comes from the poses of frames 1 and 2.
    const [f1, f2] = [hero[0]!, hero[1]!];
    assert.equal(f1.step, 1);
    assert.ok(
      Math.abs((f1.vx as number) - ((f2.x as number) - (f1.x as number)) / ((f2.t - f1.t) / 1e6)) < 1e-9,
    );
    // Every pose without Kinematics (no wx: poses give no roll or pitch rate), of every actor, across
    // the import's batches of frames: central differences, one-sided at its first and last pose.
    const streams = (await store.listStreams(run.id)).filter((x) => x.name === 'state');
    let derived = 0;
    for (const stream of streams) {
      const states = await samplesOf(store, run.id, stream.id);
      states.forEach((cur, i) => {
        if (cur.wx !== undefined) return;
        const a = states[i - 1] ?? cur;
        const b = states[i + 1] ?? cur;
        const dt = (b.t - a.t) / 1e6;
        if (!(dt > 0)) return assert.equal(cur.vx, undefined);
        const where = `${stream.id} at step ${cur.step}`;
        assert.equal(cur.vx, ((b.x as number) - (a.x as number)) / dt, where);
        assert.equal(cur.vy, ((b.y as number) - (a.y as number)) / dt, where);
        assert.equal(cur.vz, ((b.z as number) - (a.z as number)) / dt, where);
        assert.equal(cur.wz, wrapAngle((b.yaw as number) - (a.yaw as number)) / dt, where);
        const along =
          Math.cos(cur.pitch as number) *
            (cur.vx * Math.cos(cur.yaw as number) + cur.vy * Math.sin(cur.yaw as number)) -
          Math.sin(cur.pitch as number) * cur.vz;
        assert.equal(cur.speed, along, where);
        derived++;
      });
    }
    assert.equal(derived, meta.velocityCounts.fromPoses, 'every pose without Kinematics checked');
  });

  it('Kinematics joins the one Position of its actor in its frame, whatever the order; else it is kept as bytes', async () => {
    const file = join(tmp.path, 'odd-frames.log');
    writeFileSync(file, oddFrames());
    const { runs } = await importRecording(store, 'carla', file);
    const run = runs[0]!;
    const at = async (actor: number, step: number): Promise<Sample[]> =>
      (await samplesOf(store, run.id, `${actor}/state`)).filter((s) => s.step === step);
    // Kinematics says vx = actor id / 2: a velocity joined to another actor's pose would show.
    const joined = (s: Sample, actor: number): void => {
      assert.equal(s.vx, actor / 2, `actor ${actor} at step ${s.step}`);
      assert.equal(typeof s.wx, 'number', `actor ${actor} at step ${s.step}: recorded`);
    };
    const derived = (s: Sample): void => assert.equal(s.wx, undefined, `step ${s.step}: from poses`);
    // Same order in both packets.
    for (const actor of [5, 6]) joined((await at(actor, 1))[0]!, actor);
    // Kinematics in another order than Position, and one for actor 7, which has no Position.
    for (const actor of [5, 6]) joined((await at(actor, 2))[0]!, actor);
    const streams = (await store.listStreams(run.id)).map((x) => x.id);
    assert.ok(!streams.includes('7/state'), 'actor 7 has no pose, so no state');
    // Actor 5 twice in Position (and in Kinematics): no one Position to join; actor 6's joins.
    const twice = await at(5, 4);
    assert.equal(twice.length, 2);
    twice.forEach(derived);
    joined((await at(6, 4))[0]!, 6);
    // An infinity in Kinematics: kept as bytes, the velocity from poses.
    derived((await at(5, 5))[0]!);
    // No Kinematics at all in frame 3.
    derived((await at(5, 3))[0]!);
    // The same actors as Position, in another order.
    for (const actor of [5, 6]) joined((await at(actor, 6))[0]!, actor);
    // Every record, joined or kept as bytes, is written back where it was.
    const out = join(tmp.path, 'odd-frames-back.log');
    await exportRecording(store, 'carla', [run.id], out);
    assert.ok(readFileSync(out).equals(readFileSync(file)), 'byte for byte');
  });

  it('velocities from poses: central differences at every frame of a long recording, across the frames the import reads at a time', async () => {
    // A vehicle speeding up on a curve for 700 frames, with Kinematics in one frame of 50 only: an
    // import reads frames in batches (hundreds at a time), and a pose waiting for the next at a
    // batch's end must still get its differences with the pose before it.
    const file = join(tmp.path, 'speeding-up.log');
    writeFileSync(file, acceleratingVehicle(700, 50));
    const { runs } = await importRecording(store, 'carla', file);
    const states = await samplesOf(store, runs[0]!.id, '5/state');
    assert.equal(states.length, 700);
    let derived = 0;
    states.forEach((cur, i) => {
      if (cur.step % 50 === 0) return assert.equal(cur.vx, 1.25, `Kinematics at step ${cur.step}`);
      const a = states[i - 1] ?? cur;
      const b = states[i + 1] ?? cur;
      const dt = (b.t - a.t) / 1e6;
      const where = `step ${cur.step}`;
      assert.equal(cur.vx, ((b.x as number) - (a.x as number)) / dt, where);
      assert.equal(cur.vy, ((b.y as number) - (a.y as number)) / dt, where);
      assert.equal(cur.wz, wrapAngle((b.yaw as number) - (a.yaw as number)) / dt, where);
      assert.equal(cur.wx, undefined, where);
      derived++;
    });
    assert.equal(derived, 700 - 14);
  });

  it("ScenarioRunner's criteria beside the recording are stored with the run", async () => {
    const { runs } = await importRecording(store, 'carla', CARLA_RECORDINGS.laneCenter);
    const run = runs[0]!;
    const criteria = await samplesOf(store, run.id, 'criteria');
    assert.equal(criteria.length, 1);
    assert.equal(criteria[0]!.name, 'CollisionTest');
    assert.equal(criteria[0]!.status, 'SUCCESS');
    assert.equal(criteria[0]!.actual, 0);
    assert.equal(criteria[0]!.expected, 0);
    assert.equal(criteria[0]!.t, run.end);
    assert.deepEqual((run.metadata as { criteria: unknown }).criteria, {
      file: 'DistanceToLaneCenter_criteria.json',
      criteria: 1,
      failed: [],
      status: 'SUCCESS',
    });
    const attachment = await store.getAttachment(run.id, 'scenario_runner/criteria.json');
    assert.deepEqual(
      Buffer.from(attachment!.data),
      readFileSync(join(FIXTURES, 'DistanceToLaneCenter_criteria.json')),
    );
  });

  it('--criteria names a criteria file: each criterion, its status, actual and expected values', async () => {
    const { runs } = await importRecording(store, 'carla', CARLA_RECORDINGS.laneCenter2020, {
      settings: { criteria: join(FIXTURES, 'CriteriaFilter_criteria.json') },
    });
    const criteria = await samplesOf(store, runs[0]!.id, 'criteria');
    assert.deepEqual(
      criteria.map((c) => [c.name, c.status, c.actual, c.expected]),
      [
        ['RouteCompletionTest', 'SUCCESS', 100, 100],
        ['CollisionTest', 'FAILURE', 11, 0],
        ['InRouteTest', 'SUCCESS', 0, 0],
        ['OutsideRouteLanesTest', 'FAILURE', 20.91, 0],
        ['RunningRedLightTest', 'FAILURE', 1, 0],
        ['RunningStopTest', 'SUCCESS', 0, 0],
        ['ActorSpeedAboveThresholdTest', 'SUCCESS', 0, 0],
      ],
    );
    assert.equal((criteria[1]!.details as { collision_time: number }).collision_time, 97.15000144764781);
    assert.deepEqual((runs[0]!.metadata as { criteria: { failed: string[] } }).criteria.failed, [
      'CollisionTest',
      'OutsideRouteLanesTest',
      'RunningRedLightTest',
    ]);
  });
});

describe("CARLA's map as OpenDRIVE (--xodr)", () => {
  const tmp = tempDir('simrec-carla-xodr-');
  let store: StoreBackend;
  before(async () => {
    store = await openStore(join(tmp.path, 'store.db'));
  });
  after(async () => {
    await store.close();
    tmp.cleanup();
  });

  it("is kept as the run's road network, where the poses lie on its lanes, and simrec eval checks lanes", async () => {
    const { evaluateRun } = await import('../src/evaluate/evaluate-run.js');
    const { loadRoadNetwork } = await import('../src/roadnet/roadnet-attachment.js');
    const xodr = join(REPO_ROOT, 'test', 'fixtures', 'carla-maps', 'Town01.xodr');
    const { runs } = await importRecording(store, 'carla', CARLA_RECORDINGS.laneCenter, {
      settings: { xodr },
    });
    const run = runs[0]!;
    const network = await loadRoadNetwork(store, run.id);
    assert.equal(network?.format, 'opendrive');
    assert.equal(network.source.text, readFileSync(xodr, 'utf8'));
    const summary = await evaluateRun(store, run.id);
    assert.deepEqual(summary.skipped, []);
    // The hero keeps to its lane: CARLA's y, negated, is OpenDRIVE's.
    const offset = summary.metrics.laneOffset!;
    assert.equal(offset.samples, 431);
    assert.ok(Math.max(-offset.min, offset.max) < 1.75, JSON.stringify(offset));
  });
});

describe('ScenarioRunner criteria through the command line', () => {
  const tmp = tempDir('simrec-carla-cli-');
  after(() => tmp.cleanup());

  it('simrec import carla --criteria; simrec info shows them; simrec sql finds them in the criteria table', () => {
    const store = join(tmp.path, 'cli.db');
    const imported = runCli([
      'import',
      'carla',
      CARLA_RECORDINGS.betweenVehicles2020,
      '--criteria',
      join(FIXTURES, 'CriteriaFilter_criteria.json'),
      '--store',
      store,
    ]);
    assert.equal(imported.status, 0, imported.stderr);
    const info = runCli(['info', '1', '--store', store]);
    assert.equal(info.status, 0, info.stderr);
    assert.match(info.stdout, /CRITERION +STATUS +ACTUAL +EXPECTED +ACCEPTABLE +OPTIONAL\n/);
    assert.match(info.stdout, /\nCollisionTest +FAILURE +11 +0 +- +false\n/);
    assert.match(info.stdout, /\nOutsideRouteLanesTest +FAILURE +20\.91 +0 +- +false\n/);
    const rows = cliJson<{ name: string; status: string; actual: number }[]>([
      'sql',
      "SELECT name, status, actual FROM criteria WHERE status = 'FAILURE' ORDER BY name",
      '--json',
      '--store',
      store,
    ]);
    assert.deepEqual(rows, [
      { name: 'CollisionTest', status: 'FAILURE', actual: 11 },
      { name: 'OutsideRouteLanesTest', status: 'FAILURE', actual: 20.91 },
      { name: 'RunningRedLightTest', status: 'FAILURE', actual: 1 },
    ]);
    const missing = runCli([
      'import',
      'carla',
      CARLA_RECORDINGS.laneCenter,
      '--criteria',
      join(tmp.path, 'nope.json'),
      '--store',
      store,
    ]);
    assert.equal(missing.status, 2);
    assert.match(missing.stderr, /nope\.json: no such file; expected ScenarioRunner's criteria/);
  });
});

/** The packets of a recording, walked here (not by simrec's reader): id, offset, size, frame. */
export function packetsOf(bytes: Buffer): { id: number; offset: number; size: number; frame: number }[] {
  let o = 2;
  o += 2 + bytes.readUInt16LE(o) + 8;
  o += 2 + bytes.readUInt16LE(o);
  const out: { id: number; offset: number; size: number; frame: number }[] = [];
  let frame = 0;
  while (o < bytes.length) {
    const id = bytes[o]!;
    const size = bytes.readUInt32LE(o + 1);
    if (id === 0) frame = Number(bytes.readBigUInt64LE(o + 5));
    out.push({ id, offset: o, size, frame });
    o += 5 + size;
  }
  return out;
}

/** The recording with a packet's body replaced (its size follows). */
export function withPacket(
  bytes: Buffer,
  at: { offset: number; size: number },
  body: Buffer,
  id?: number,
): Buffer {
  const head = Buffer.alloc(5);
  head[0] = id ?? bytes[at.offset]!;
  head.writeUInt32LE(body.length, 1);
  return Buffer.concat([bytes.subarray(0, at.offset), head, body, bytes.subarray(at.offset + 5 + at.size)]);
}

/** A Collision packet's body. */
export function collisionBody(records: [number, number, number, boolean, boolean][]): Buffer {
  const b = Buffer.alloc(2 + 14 * records.length);
  b.writeUInt16LE(records.length, 0);
  records.forEach(([id, a1, a2, h1, h2], i) => {
    b.writeUInt32LE(id, 2 + 14 * i);
    b.writeUInt32LE(a1, 6 + 14 * i);
    b.writeUInt32LE(a2, 10 + 14 * i);
    b[14 + 14 * i] = h1 ? 1 : 0;
    b[15 + 14 * i] = h2 ? 1 : 0;
  });
  return b;
}

/**
 * DistanceBetweenVehicles with collisions: the hero (174) hits the Patrol (175) in frames 100-105 (a
 * record every frame, as CARLA records a contact that lasts), and a wall (no actor) in frame 300.
 */
export function withCollisions(dir: string): string {
  let bytes: Buffer = readFileSync(CARLA_RECORDINGS.betweenVehicles);
  let id = 0;
  for (const frame of [100, 101, 102, 103, 104, 105, 300]) {
    const p = packetsOf(bytes).find((x) => x.frame === frame && x.id === PACKET.Collision)!;
    const record: [number, number, number, boolean, boolean] =
      frame === 300 ? [id++, 174, 0xffffffff, true, false] : [id++, 174, 175, true, false];
    bytes = withPacket(bytes, p, collisionBody([record]));
  }
  const out = join(dir, 'collisions.log');
  writeFileSync(out, bytes);
  return out;
}

describe('CARLA collisions', () => {
  const tmp = tempDir('simrec-carla-collisions-');
  let store: StoreBackend;
  before(async () => {
    store = await openStore(join(tmp.path, 'store.db'));
  });
  after(async () => {
    await store.close();
    tmp.cleanup();
  });

  it("are `collision` events with the actors' types: one per contact, as show_recorder_collisions lists them", async () => {
    const file = withCollisions(tmp.path);
    const ref = reference(file);
    const { runs } = await importRecording(store, 'carla', file);
    const run = runs[0]!;
    const events = await samplesOf(store, run.id, 'events');
    assert.deepEqual(
      events.map((e) => [e.kind, e.step, e.actors, e.types, e.categories, e.source]),
      [
        [
          'collision',
          100,
          ['174', '175'],
          ['vehicle.lincoln.mkz_2017', 'vehicle.nissan.patrol'],
          'v v',
          'carla recorder',
        ],
        ['collision', 300, ['174'], ['vehicle.lincoln.mkz_2017', ''], 'v o', 'carla recorder'],
      ],
    );
    // The contact lasted frames 100 to 105: their durations.
    const frames = ref.frames.filter(([id]) => id >= 100 && id <= 105);
    assert.equal(
      events[0]!.duration,
      frames.reduce((sum, [, , d]) => sum + d, 0),
    );
    const hero = (await samplesOf(store, run.id, '174/state')).find((s) => s.step === 100)!;
    assert.deepEqual([events[0]!.x, events[0]!.y], [hero.x, hero.y]);
    // Every record is kept, in order, for the file to be written back.
    assert.deepEqual(
      (await samplesOf(store, run.id, 'carla_collision')).map((c) => [
        c.step,
        c.collision,
        c.actor1,
        c.actor2,
        c.hero1,
        c.hero2,
      ]),
      ref.collisionRecords,
    );
    // What show_recorder_collisions prints, from the events.
    const rows = events.map((e) => {
      const [c1, c2] = String(e.categories).split(' ');
      const [id1, id2] = e.ids as number[];
      const [n1, n2] = e.types as string[];
      const time = ((e.t - run.begin) / 1e6).toFixed(0).padStart(8);
      return `${time}   ${c1} ${c2}  ${String(id1).padStart(6)} ${n1!.padEnd(35)} ${String(id2).padStart(6)} ${n2!.padEnd(35)}`;
    });
    assert.deepEqual(rows, ref.collisions.split('\n').slice(5, 7));
    // simrec eval keeps them beside its own events, and they count against the hero.
    const { evaluateRun } = await import('../src/evaluate/evaluate-run.js');
    const summary = await evaluateRun(store, run.id);
    assert.equal(summary.actor, '174');
    assert.equal(summary.events.filter((e) => e.kind === 'collision' && e.actors.includes('174')).length, 2);
    const stored = await samplesOf(store, run.id, 'events');
    assert.deepEqual(
      stored.filter((e) => e.source === 'carla recorder').map((e) => e.step),
      [100, 300],
    );
  });
});

/** A recorder file made packet by packet: CARLA's header for `map`, then what `packet` is given. */
function recordingOf(map: string): {
  packet: (id: number, body: (b: ByteWriter) => void) => void;
  bytes: () => Buffer;
} {
  const w = new ByteWriter();
  w.u16(1);
  w.fstring('CARLA_RECORDER');
  w.i64(1_700_000_000);
  w.fstring(map);
  return {
    packet: (id, body) => {
      const b = new ByteWriter();
      body(b);
      w.u8(id);
      w.u32(b.length);
      w.bytes(b.view());
    },
    bytes: () => Buffer.from(w.view()),
  };
}

/**
 * Six frames of vehicles 5 and 6 whose Position and Kinematics packets disagree: frame 1 lists both in
 * the same order; frame 2's Kinematics another order, and one for actor 7, which has no Position;
 * frame 3 no Kinematics; frame 4 actor 5 twice in both; frame 5 an infinity in a Kinematics; frame 6
 * Kinematics in another order, as many as Position. Kinematics says vx = actor id / 2.
 */
function oddFrames(): Buffer {
  const { packet, bytes } = recordingOf('Town01');
  const pose = (b: ByteWriter, id: number, x: number): void => {
    b.u32(id);
    [x, 2 * id, 0, 0, 0, 10 * id].forEach((v) => b.f32(v));
  };
  const kinematics = (b: ByteWriter, id: number, wz = 3): void => {
    b.u32(id);
    [id / 2, 0, 0, 0, 0, wz].forEach((v) => b.f32(v));
  };
  for (let frame = 1; frame <= 6; frame++) {
    packet(PACKET.FrameStart, (b) => {
      b.u64(frame);
      b.f64(0.05);
      b.f64((frame - 1) * 0.05);
    });
    if (frame === 1)
      packet(PACKET.EventAdd, (b) => {
        b.u16(3);
        for (const id of [5, 6, 7]) {
          b.u32(id);
          b.u8(1);
          [0, 0, 0, 0, 0, 0].forEach((v) => b.f32(v));
          b.u32(0);
          b.fstring('vehicle.tesla.model3');
          b.u16(0);
        }
      });
    const poses = frame === 4 ? [5, 5, 6] : [5, 6];
    packet(PACKET.Position, (b) => {
      b.u16(poses.length);
      poses.forEach((id, i) => pose(b, id, 100 * frame + i));
    });
    if (frame === 3) {
      packet(PACKET.FrameEnd, () => {});
      continue;
    }
    const moving = frame === 2 ? [6, 5, 7] : frame === 4 ? [5, 5, 6] : frame === 6 ? [6, 5] : [5, 6];
    packet(PACKET.Kinematics, (b) => {
      b.u16(moving.length);
      moving.forEach((id) => kinematics(b, id, frame === 5 ? Infinity : 3));
    });
    packet(PACKET.FrameEnd, () => {});
  }
  return bytes();
}

/**
 * One vehicle (CARLA id 5), created in the first frame, at 20 Hz: x grows as t squared, y and the
 * heading swing; a Kinematics record (1.25 m/s forward) in every frame whose id is a multiple of
 * `kinematicsEvery`.
 */
function acceleratingVehicle(frames: number, kinematicsEvery: number): Buffer {
  const { packet, bytes } = recordingOf('Town01');
  for (let frame = 1; frame <= frames; frame++) {
    const t = (frame - 1) * 0.05;
    const pose = [100 * t * t, 300 * Math.sin(t), 0, 0, 0, 20 * Math.sin(t / 2)];
    packet(PACKET.FrameStart, (b) => {
      b.u64(frame);
      b.f64(0.05);
      b.f64(t);
    });
    if (frame === 1)
      packet(PACKET.EventAdd, (b) => {
        b.u16(1);
        b.u32(5);
        b.u8(1);
        pose.forEach((v) => b.f32(v));
        b.u32(0);
        b.fstring('vehicle.tesla.model3');
        b.u16(0);
      });
    packet(PACKET.Position, (b) => {
      b.u16(1);
      b.u32(5);
      pose.forEach((v) => b.f32(v));
    });
    if (frame % kinematicsEvery === 0)
      packet(PACKET.Kinematics, (b) => {
        b.u16(1);
        b.u32(5);
        [1.25, 0, 0, 0, 0, 0].forEach((v) => b.f32(v));
      });
    packet(PACKET.FrameEnd, () => {});
  }
  return bytes();
}

describe('malformed CARLA recordings', () => {
  const tmp = tempDir('simrec-carla-malformed-');
  let store: StoreBackend;
  const original = readFileSync(CARLA_RECORDINGS.laneCenter2020);
  const packets = packetsOf(original);
  const write = (name: string, bytes: Buffer): string => {
    const out = join(tmp.path, name);
    writeFileSync(out, bytes);
    return out;
  };
  before(async () => {
    store = await openStore(join(tmp.path, 'store.db'));
  });
  after(async () => {
    await store.close();
    tmp.cleanup();
  });
  const refused = async (file: string, message: RegExp): Promise<void> => {
    const before = (await store.listRuns()).length;
    await assert.rejects(importRecording(store, 'carla', file), (error: Error) => {
      assert.match(error.message, message);
      assert.ok(error.message.startsWith(`${file}: at byte `), error.message);
      return true;
    });
    assert.equal((await store.listRuns()).length, before, 'nothing is kept');
  };

  it('cut in a packet: an error naming the file and the packet', async () => {
    const p = packets.find((x) => x.frame === 200 && x.id === PACKET.State)!;
    await refused(
      write('cut.log', original.subarray(0, p.offset + 5 + 100)),
      new RegExp(
        `^.*at byte ${p.offset}: State \\(id 7\\) declares ${p.size} bytes, but the file has 100 left`,
      ),
    );
    await refused(write('cut-header.log', original.subarray(0, p.offset + 3)), /ends inside a packet header/);
  });

  it('a packet longer than the file', async () => {
    const p = packets.find((x) => x.frame === 50 && x.id === PACKET.State)!;
    const bytes = Buffer.from(original);
    bytes.writeUInt32LE(0x7fffffff, p.offset + 1);
    await refused(
      write('long.log', bytes),
      new RegExp(`at byte ${p.offset}: State \\(id 7\\) declares 2147483647 bytes.*longer than the file`),
    );
  });

  it("a packet whose size is not its records'", async () => {
    const p = packets.find((x) => x.frame === 60 && x.id === PACKET.Position)!;
    const bytes = Buffer.from(original);
    bytes.writeUInt16LE(bytes.readUInt16LE(p.offset + 5) + 1, p.offset + 5);
    await refused(
      write('count.log', bytes),
      new RegExp(
        `at byte ${p.offset}: Position \\(id 6\\) declares ${p.size} bytes, but \\d+ records of 28 bytes take`,
      ),
    );
  });

  it('a frame going back in time', async () => {
    const [f9, f10] = [9, 10].map((n) => packets.find((x) => x.frame === n && x.id === PACKET.FrameStart)!);
    const bytes = Buffer.from(original);
    const elapsed9 = bytes.readDoubleLE(f9!.offset + 5 + 16);
    bytes.writeDoubleLE(elapsed9 - 0.01, f10!.offset + 5 + 16);
    await refused(
      write('back.log', bytes),
      new RegExp(`at byte ${f10!.offset}: frame 10 is at .* before frame 9 .*going back in time`),
    );
  });

  it('not a CARLA recording', async () => {
    await refused(write('other.log', Buffer.from('\x01\x00\x05\x00HELLO and more')), /not a CARLA recording/);
  });

  it('an unknown packet: skipped by its size with a warning naming id and offset, and kept', async () => {
    const p = packets.find((x) => x.frame === 5 && x.id === PACKET.EventAdd)!;
    const custom = Buffer.concat([Buffer.from([101, 7, 0, 0, 0]), Buffer.from('simrec!')]);
    const bytes = Buffer.concat([original.subarray(0, p.offset), custom, original.subarray(p.offset)]);
    const warnings: string[] = [];
    const file = write('unknown.log', bytes);
    const { runs } = await importRecording(store, 'carla', file, {
      warn: (w, m) => warnings.push(`${w}: ${m}`),
    });
    assert.deepEqual(warnings, [
      `${file}: at byte ${p.offset}: unknown packet id 101 (7 bytes; a newer CARLA, or a custom packet): skipped by its size, kept as bytes`,
    ]);
    const frame5 = (await samplesOf(store, runs[0]!.id, 'carla_frame')).find((f) => f.step === 5)!;
    assert.deepEqual(frame5.unknown, [[101, Buffer.from('simrec!').toString('base64')]]);
  });

  it('an actor removed twice: a warning, the second removal ignored', async () => {
    // Frame 460 destroys the collision sensor 263; frame 461 the hero 259 and the props: add 263 again.
    const p = packets.find((x) => x.frame === 461 && x.id === PACKET.EventDel)!;
    const count = original.readUInt16LE(p.offset + 5);
    const body = Buffer.concat([
      original.subarray(p.offset + 5, p.offset + 5 + p.size),
      Buffer.from([7, 1, 0, 0]),
    ]);
    body.writeUInt16LE(count + 1, 0);
    const file = write('twice.log', withPacket(original, p, body));
    const warnings: string[] = [];
    const { runs } = await importRecording(store, 'carla', file, { warn: (_w, m) => warnings.push(m) });
    assert.equal(warnings.length, 1);
    assert.match(
      warnings[0]!,
      new RegExp(
        `^at byte ${p.offset + 5 + 2 + 4 * count}: actor 263 is removed twice: destroyed in frame 461, already destroyed at 15.83`,
      ),
    );
    const sensor = (await store.listActors(runs[0]!.id)).find((a) => a.id === '263')!;
    const destroyedAt = (await samplesOf(store, runs[0]!.id, 'carla_frame')).find((f) => f.step === 460)!.t;
    assert.equal(sensor.presence![0]!.to, destroyedAt);
  });
});

describe('simrec eval on CARLA recordings', () => {
  const tmp = tempDir('simrec-carla-eval-');
  let store: StoreBackend;
  before(async () => {
    store = await openStore(join(tmp.path, 'store.db'));
  });
  after(async () => {
    await store.close();
    tmp.cleanup();
  });

  it("scores the hero; Town01's props standing in each other, the signs and the spectator are no events", async () => {
    const { evaluateRun } = await import('../src/evaluate/evaluate-run.js');
    const { runs } = await importRecording(store, 'carla', CARLA_RECORDINGS.betweenVehicles);
    const run = runs[0]!;
    const actors = new Map((await store.listActors(run.id)).map((a) => [a.id, a.kind] as const));
    assert.equal(actors.get('1'), 'spectator');
    assert.equal(actors.get('38'), 'traffic_sign');
    const summary = await evaluateRun(store, run.id);
    assert.equal(summary.actor, '174');
    assert.equal(summary.frames, 846);
    const involved = new Set(summary.events.flatMap((e) => e.actors).map((id) => actors.get(id)));
    for (const kind of ['static', 'spectator', 'traffic_sign', 'traffic_light', 'sensor'])
      assert.ok(!involved.has(kind), `no event involves a ${kind}`);
    assert.equal(summary.events.filter((e) => e.kind === 'collision').length, 0);
  });
});

describe('writing CARLA recordings', () => {
  const tmp = tempDir('simrec-carla-write-');
  let store: StoreBackend;
  let n = 0;
  before(async () => {
    store = await openStore(join(tmp.path, 'store.db'));
  });
  after(async () => {
    await store.close();
    tmp.cleanup();
  });
  const exported = async (
    run: number,
    settings: Record<string, string> = {},
    warnings: string[] = [],
  ): Promise<string> => {
    const out = join(tmp.path, `out-${++n}.log`);
    await exportRecording(store, 'carla', [run], out, { settings, warn: (_w, m) => warnings.push(m) });
    return out;
  };
  const roundTrip = async (file: string): Promise<void> => {
    const { runs } = await importRecording(store, 'carla', file);
    const out = await exported(runs[0]!.id);
    assert.ok(readFileSync(out).equals(readFileSync(file)), `${file} comes back byte for byte`);
    // ScenarioRunner's criteria, where the recording had them beside it, go beside it again.
    const criteria = file.replace(/\.log$/, '_criteria.json');
    if (existsSync(criteria))
      assert.ok(readFileSync(out.replace(/\.log$/, '_criteria.json')).equals(readFileSync(criteria)));
  };

  for (const [name, file] of Object.entries(CARLA_RECORDINGS))
    it(`${name}: imported and exported, byte for byte`, async () => roundTrip(file));

  it('collisions, an unknown packet, an actor removed twice, a last frame cut at a packet boundary: byte for byte', async () => {
    await roundTrip(withCollisions(tmp.path));
    const original = readFileSync(CARLA_RECORDINGS.laneCenter2020);
    const packets = packetsOf(original);
    const p = packets.find((x) => x.frame === 5 && x.id === PACKET.State)!;
    const custom = Buffer.concat([Buffer.from([200, 3, 0, 0, 0]), Buffer.from([1, 2, 3])]);
    const unknown = join(tmp.path, 'unknown.log');
    writeFileSync(
      unknown,
      Buffer.concat([original.subarray(0, p.offset), custom, original.subarray(p.offset)]),
    );
    await roundTrip(unknown);
    const end = packets.at(-1)!;
    assert.equal(end.id, PACKET.FrameEnd);
    const cut = join(tmp.path, 'cut-at-boundary.log');
    writeFileSync(cut, original.subarray(0, end.offset));
    const warnings: string[] = [];
    const { runs } = await importRecording(store, 'carla', cut, { warn: (_w, m) => warnings.push(m) });
    assert.equal(runs[0]!.endReason, 'interrupted');
    assert.match(warnings[0]!, /the last frame \(461\) has no FrameEnd/);
    assert.ok(readFileSync(await exported(runs[0]!.id)).equals(readFileSync(cut)));
  });

  it('every packet of 0.9.14 to 0.9.16 (wheels, bikers, doors, bones, visual time, frame counter): read, and written back', async () => {
    const file = join(tmp.path, 'newest.log');
    writeFileSync(file, newestLayout());
    const { runs } = await importRecording(store, 'carla', file);
    const run = runs[0]!;
    assert.equal((run.metadata.carla as { layout: string }).layout, '0.9.16');
    const kinds = new Map((await store.listActors(run.id)).map((a) => [a.id, a.kind] as const));
    assert.deepEqual(Object.fromEntries(kinds), { '7': 'cyclist', '8': 'pedestrian', '9': 'traffic_light' });
    const [frame] = await samplesOf(store, run.id, 'carla_frame');
    assert.equal(frame!.visualTime, 12.5);
    assert.equal(frame!.frameCounter, 4242);
    assert.equal(frame!.platformTime, 0.25);
    assert.deepEqual((await samplesOf(store, run.id, '7/carla_wheels'))[0]!.wheels, [
      [0, 'f32:80000000', 90],
      [1, 1.5, 'f32:7fc00000'],
    ]);
    const biker = (await samplesOf(store, run.id, '7/carla_biker'))[0]!;
    assert.deepEqual([biker.forwardSpeed, biker.engineRotation], [3.5, 0.5]);
    const door = (await samplesOf(store, run.id, 'carla_door'))[0]!;
    assert.deepEqual([door.actorId, door.door, door.open], ['7', 2, true]);
    assert.deepEqual((await samplesOf(store, run.id, '8/carla_bones'))[0]!.bones, [
      ['crl_root', 1, 2, 3, 0, 0, 90],
      ['crl_hips__C', 0, 0, 'f32:ff800000', 45, 0, 0],
    ]);
    const lights = (await samplesOf(store, run.id, '7/lights'))[0]!;
    assert.deepEqual([lights.state, lights.on], [0x2 | 0x8, 'LowBeam Brake']);
    const signal = (await samplesOf(store, run.id, '9/signal'))[0]!;
    assert.deepEqual([signal.state, signal.carlaState, signal.frozen, signal.elapsed], ['G', 2, true, 1.5]);
    const physics = (await samplesOf(store, run.id, 'carla_physics'))[0]!;
    assert.equal((physics.control as { mass: number }).mass, 1500);
    assert.ok(readFileSync(await exported(run.id)).equals(readFileSync(file)));
  });

  it('a run from elsewhere (the demo): each kind a CARLA blueprint, poses every frame, lights, in the newest layout', async () => {
    const { recordDemoRun } = await import('../src/demo/demo-run.js');
    const demo = await recordDemoRun(store, { duration: 5, vehicles: 5, pedestrians: 3, seed: 2 });
    const warnings: string[] = [];
    const out = await exported(demo.run.id, { map: 'Town03' }, warnings);
    assert.deepEqual(warnings, [
      "no blueprint number (UId) is known for walker.pedestrian.0001: written as 0, which CARLA's replayer refuses to spawn; give --blueprints-from a recording made with your CARLA that spawns walker.pedestrian.0001",
    ]);
    const ref = reference(out);
    assert.equal(ref.map, 'Town03');
    const actors = await store.listActors(demo.run.id);
    const states = new Map<string, Sample[]>();
    for (const a of actors)
      if (a.kind !== 'traffic_light') states.set(a.id, await samplesOf(store, demo.run.id, `${a.id}/state`));
    const t0 = Math.min(...[...states.values()].map((s) => s[0]!.t));
    assert.equal(ref.date, Math.floor(t0 / 1e6));
    // Who is who: the role_name keeps simrec's id; the hero is the ego.
    const created = new Map<number, { blueprint: string; uid: number; role?: string; type: number }>();
    for (const [, id, type, blueprint, uid, attrs] of ref.creates)
      created.set(id, { blueprint, uid, type, ...(attrs[0] ? { role: attrs[0][2] } : {}) });
    const byRole = new Map([...created].filter(([, c]) => c.role).map(([id, c]) => [c.role!, { id, ...c }]));
    for (const a of actors) {
      if (a.kind === 'traffic_light') continue;
      const c = byRole.get(a.kind === 'ego' ? 'hero' : a.id)!;
      assert.ok(c, `${a.id} is created`);
      const expected = {
        ego: ['vehicle.lincoln.mkz_2017', 26, 1],
        vehicle: ['vehicle.nissan.patrol', 13, 1],
        pedestrian: ['walker.pedestrian.0001', 0, 2],
      }[a.kind as 'ego'];
      assert.deepEqual([c.blueprint, c.uid, c.type], expected, `${a.id} (${a.kind})`);
    }
    const lights = [...created.values()].filter((c) => c.blueprint === 'traffic.traffic_light');
    assert.ok(lights.length > 0 && lights.every((c) => c.uid === 0 && c.type === 3 && c.role === undefined));
    // Every frame at a time the actors have a pose, elapsed from the first; each present actor's pose.
    const times = [...new Set([...states.values()].flatMap((s) => s.map((x) => x.t)))].sort((a, b) => a - b);
    assert.deepEqual(
      ref.frames.map(([, elapsed]) => elapsed),
      times.map((t) => (t - t0) / 1e6),
    );
    assert.equal(ref.frames.at(-1)![2], -1);
    const idOf = new Map(
      actors
        .filter((a) => a.kind !== 'traffic_light')
        .map((a) => [a.id, byRole.get(a.kind === 'ego' ? 'hero' : a.id)!.id]),
    );
    let poses = 0;
    ref.positions.forEach((records, k) => {
      const at = new Map(records.map((r) => [r[0]!, r]));
      for (const [actor, samples] of states) {
        const s = samples.find((x) => x.t === times[k]);
        const r = at.get(idOf.get(actor)!);
        if (!s) continue;
        assert.ok(r, `${actor} has a Position at frame ${k + 1}`);
        assert.ok(
          Math.abs((s.x as number) * 100 - r[1]!) <= 0.1 && Math.abs(-(s.y as number) * 100 - r[2]!) <= 0.1,
        );
        assert.ok(Math.abs(-(s.yaw as number) * (180 / Math.PI) - r[6]!) < 1e-3);
        poses++;
      }
    });
    assert.equal(
      poses,
      ref.positions.reduce((sum, r) => sum + r.length, 0),
    );
    // Read back: the layout of 0.9.16 with additional data, the kinds as they were.
    const { runs } = await importRecording(store, 'carla', out);
    const [frame] = await samplesOf(store, runs[0]!.id, 'carla_frame');
    assert.deepEqual(
      String(frame!.packets)
        .split(' ')
        .map((t) => Number.parseInt(t, 10)),
      [0, 20, 2, 3, 4, 5, 6, 7, 8, 9, 10, 22, 23, 12, 13, 14, 19, 1],
    );
    const back = await store.listActors(runs[0]!.id);
    const count = (list: ActorInfo[], kind: string): number => list.filter((a) => a.kind === kind).length;
    for (const kind of ['ego', 'vehicle', 'pedestrian'])
      assert.equal(count(back, kind), count(actors, kind), kind);
    assert.equal(count(back, 'traffic_light'), lights.length);
  });

  it('a run from elsewhere is written a window of each stream at a time: the same bytes whatever the window', async () => {
    const { recordDemoRun } = await import('../src/demo/demo-run.js');
    const demo = await recordDemoRun(store, { duration: 8, vehicles: 6, pedestrians: 2, seed: 5 });
    const source = await storeRunSource(store, demo.run.id);
    const write = async (name: string, windowSamples: number): Promise<Buffer> => {
      const path = join(tmp.path, name);
      await exportCarla(source, path, { windowSamples });
      return readFileSync(path);
    };
    // 16 samples a stream (the least): each actor's state read in several windows; against each whole.
    const windowed = await write('windowed.log', 1);
    const whole = await write('whole.log', Number.MAX_SAFE_INTEGER);
    assert.ok(windowed.length > 50_000, `${windowed.length} bytes`);
    assert.ok(windowed.equals(whole), 'the same file');
  });

  it("--blueprints-from: the blueprints' numbers from a recording of the CARLA that will replay the file", async () => {
    const { recordDemoRun } = await import('../src/demo/demo-run.js');
    const demo = await recordDemoRun(store, { duration: 2, vehicles: 2, pedestrians: 2, seed: 4 });
    const reference = join(tmp.path, 'spawns-a-walker.log');
    writeFileSync(reference, newestLayout({ walkerUid: 77 }));
    const warnings: string[] = [];
    const out = await exported(demo.run.id, { blueprintsFrom: reference }, warnings);
    assert.deepEqual(warnings, []);
    const walkers = readCreates(out).filter((c) => c[3] === 'walker.pedestrian.0001');
    assert.ok(walkers.length > 0 && walkers.every((c) => c[4] === 77));
  });
});

const readCreates = (file: string): Reference['creates'] => reference(file).creates;

/**
 * A recording in the layout of CARLA 0.9.16 with every packet it may hold, made here record by record
 * (no real file of these releases is reachable from these machines): a bicycle (7), a walker (8), a
 * traffic light (9), one frame.
 */
function newestLayout(options: { walkerUid?: number } = {}): Buffer {
  const { packet, bytes } = recordingOf('Town10HD_Opt');
  const floats = (b: ByteWriter, ...v: number[]): void => v.forEach((x) => b.f32(x));
  packet(PACKET.FrameStart, (b) => {
    b.u64(1);
    b.f64(-1);
    b.f64(0);
  });
  packet(PACKET.VisualTime, (b) => b.f64(12.5));
  packet(PACKET.EventAdd, (b) => {
    b.u16(3);
    const add = (
      id: number,
      type: number,
      blueprint: string,
      uid: number,
      attrs: [number, string, string][],
    ): void => {
      b.u32(id);
      b.u8(type);
      floats(b, 100, 200, 0, 0, 0, 90);
      b.u32(uid);
      b.fstring(blueprint);
      b.u16(attrs.length);
      for (const [t, k, v] of attrs) {
        b.u8(t);
        b.fstring(k);
        b.fstring(v);
      }
    };
    add(7, 1, 'vehicle.diamondback.century', 30, [
      [3, 'base_type', 'bicycle'],
      [3, 'role_name', 'autopilot'],
    ]);
    add(8, 2, 'walker.pedestrian.0001', options.walkerUid ?? 60, [[3, 'role_name', 'walker']]);
    add(9, 3, 'traffic.traffic_light', 0, []);
  });
  for (const id of [PACKET.EventDel, PACKET.EventParent, PACKET.Collision]) packet(id, (b) => b.u16(0));
  packet(PACKET.Position, (b) => {
    b.u16(2);
    b.u32(7);
    floats(b, 100, 200, 0, 0, 0, 90);
    b.u32(8);
    floats(b, 300, 200, 90, 0, 0, -0);
  });
  packet(PACKET.State, (b) => {
    b.u16(1);
    b.u32(9);
    b.bool(true);
    b.f32(1.5);
    b.u8(2);
  });
  packet(PACKET.AnimVehicle, (b) => {
    b.u16(1);
    b.u32(7);
    floats(b, 0.25, 0.5, 0);
    b.bool(false);
    b.i32(1);
  });
  packet(PACKET.AnimWalker, (b) => {
    b.u16(1);
    b.u32(8);
    b.f32(140);
  });
  packet(PACKET.VehicleLight, (b) => {
    b.u16(1);
    b.u32(7);
    b.u32(0x2 | 0x8);
  });
  packet(PACKET.SceneLight, (b) => {
    b.u16(1);
    b.i32(-1);
    floats(b, 5000, 1, 0.5, 0.25, 1);
    b.bool(true);
    b.u8(1);
  });
  packet(PACKET.AnimVehicleWheels, (b) => {
    b.u16(1);
    b.u32(7);
    b.u32(2);
    b.u8(0);
    b.u32(0x80000000); // -0: kept bit for bit
    b.f32(90);
    b.u8(1);
    b.f32(1.5);
    b.u32(0x7fc00000); // NaN
  });
  packet(PACKET.AnimBiker, (b) => {
    b.u16(1);
    b.u32(7);
    floats(b, 350, 0.5);
  });
  packet(PACKET.Kinematics, (b) => {
    b.u16(2);
    b.u32(7);
    floats(b, 0, -3.5, 0, 0, 0, 0);
    b.u32(8);
    floats(b, 1.4, 0, 0, 0, 0, 0);
  });
  packet(PACKET.BoundingBox, (b) => {
    b.u16(2);
    b.u32(7);
    floats(b, 0, 0, 50, 90, 20, 50);
    b.u32(8);
    floats(b, 0, 0, 0, 19, 19, 90);
  });
  packet(PACKET.TriggerVolume, (b) => {
    b.u16(1);
    b.u32(9);
    floats(b, 100, 200, 0, 150, 300, 100);
  });
  packet(PACKET.PlatformTime, (b) => b.f64(0.25));
  packet(PACKET.PhysicsControl, (b) => {
    b.u16(1);
    b.u32(7);
    floats(b, 5000, 1, 0.15, 2, 0.35);
    b.bool(true);
    floats(b, 10, 4, 1500, 0.3, 0, 0, -0.25);
    b.u32(1);
    floats(b, 0, 400);
    b.u32(1);
    floats(b, 3.5, 0.2, 0.35);
    b.u32(1);
    floats(b, 0, 1);
    b.u32(2);
    for (let i = 0; i < 2; i++) floats(b, 2, 0.25, 70, 30, 1500, 3000, 2, 17, 1000, 0, 0, 0);
  });
  packet(PACKET.TrafficLightTime, (b) => {
    b.u16(1);
    b.u32(9);
    floats(b, 10, 3, 2);
  });
  packet(PACKET.WalkerBones, (b) => {
    b.u16(1);
    b.u32(8);
    b.u16(2);
    b.fstring('crl_root');
    floats(b, 1, 2, 3, 0, 0, 90);
    b.fstring('crl_hips__C');
    floats(b, 0, 0);
    b.u32(0xff800000); // -Infinity
    floats(b, 45, 0, 0);
  });
  packet(PACKET.VehicleDoor, (b) => {
    b.u16(1);
    b.u32(7);
    b.u8(2);
    b.bool(true);
  });
  packet(PACKET.FrameCounter, (b) => b.u64(4242));
  packet(PACKET.FrameEnd, () => {});
  return bytes();
}

describe("CARLA's queries as SQL (docs/formats/carla.md)", () => {
  const tmp = tempDir('simrec-carla-sql-');
  after(() => tmp.cleanup());
  /** The CARLA page's queries, as a user copies them. */
  const pageQueries = (): string[] => {
    const page = readFileSync(join(REPO_ROOT, 'docs', 'formats', 'carla.md'), 'utf8');
    return [...page.matchAll(/```sql\n([\s\S]*?)```/g)].map((m) => m[1]!);
  };
  const sql = <T>(store: string, query: string): T[] =>
    cliJson<T[]>(['sql', query, '--json', '--store', store]);

  it('show_recorder_collisions: the events table gives the rows CARLA prints', () => {
    const store = join(tmp.path, 'collisions.db');
    const file = withCollisions(tmp.path);
    assert.equal(runCli(['import', 'carla', file, '--store', store]).status, 0);
    const [collisions] = pageQueries();
    const rows = sql<{
      time_s: number;
      types: string;
      id_1: number;
      actor_1: string;
      id_2: number;
      actor_2: string;
    }>(store, collisions!);
    const printed = rows.map(
      (r) =>
        `${String(r.time_s).padStart(8)}   ${r.types}  ${String(r.id_1).padStart(6)} ${r.actor_1.padEnd(35)} ${String(r.id_2).padStart(6)} ${(r.actor_2 ?? '').padEnd(35)}`,
    );
    assert.deepEqual(printed, reference(file).collisions.split('\n').slice(5, 7));
  });

  for (const [name, minTime] of [
    ['betweenVehicles', 20],
    ['betweenVehicles2020', 5],
  ] as const)
    it(`show_recorder_actors_blocked (${name}, ${minTime} s): the page's query gives CARLA's rows`, () => {
      const file = CARLA_RECORDINGS[name];
      const store = join(tmp.path, `${name}.db`);
      assert.equal(runCli(['import', 'carla', file, '--store', store]).status, 0);
      const blocked = pageQueries()[1]!.replaceAll('>= 30', `>= ${minTime}`);
      const rows = sql<{ time_s: number; id: string; actor: string; duration_s: number }>(store, blocked);
      const expected = reference(file, minTime, 10).blocked;
      assert.ok(expected.length > 0);
      assert.deepEqual(
        rows.map((r) => [Number(r.id), r.actor, r.time_s, r.duration_s]),
        expected.map(([id, type, , , t, d]) => [id, type, Math.round(t), Math.round(d)]),
      );
    });
});
