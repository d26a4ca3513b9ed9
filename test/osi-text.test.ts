/**
 * OSI's text trace files (.txth: each message in protobuf's text format, one after another), both ways,
 * checked with Google's own protobuf (python3-protobuf's text_format, what OSI's osi2read.py prints
 * with): a real SensorView trace printed by it reads as its .osi does, and simrec's .txth export parses
 * there message by message into the very messages of its .osi export.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { diffRuns } from '../src/compare/run-diff.js';
import { recordDemoRun } from '../src/demo/demo-run.js';
import { groundTruthDescriptorSet } from '../src/formats/common/osi3/osi3-schema.js';
import type { StoreBackend } from '../src/model/store-port.js';
import { importRecording } from '../src/record/import-run.js';
import { exportRecording } from '../src/replay/export-run.js';
import { openStore } from '../src/store/open-store.js';
import { disappearingVehicleTrace, lengthPrefixed } from './helpers/osi-trace.js';
import { tempDir } from './helpers/paths.js';

const dir = tempDir('simrec-osi-text-');
let store: StoreBackend;
let demo: number;
before(async () => {
  store = await openStore(join(dir.path, 'osi.db'));
  demo = (await recordDemoRun(store, { duration: 5, vehicles: 8, seed: 3 })).run.id;
});
after(async () => {
  await store.close();
  dir.cleanup();
});

/** A Python with Google's protobuf (Debian's python3-protobuf is /usr/bin/python3's). */
const PYTHON = ['python3', '/usr/bin/python3'].find(
  (p) => spawnSync(p, ['-c', 'import google.protobuf.text_format']).status === 0,
);
const SKIP = !PYTHON
  ? "python3-protobuf is not installed here (apt-get install python3-protobuf): Google's text format is not at hand"
  : false;

/** Python with a message class from a FileDescriptorSet file: `Message` is the trace's type. */
const PYTHON_PRELUDE = [
  'import struct, sys',
  'from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, text_format',
  'fds = descriptor_pb2.FileDescriptorSet(); fds.ParseFromString(open(sys.argv[1], "rb").read())',
  'pool = descriptor_pool.DescriptorPool()',
  'for f in fds.file: pool.Add(f)',
  'Message = message_factory.MessageFactory(pool).GetPrototype(pool.FindMessageTypeByName(sys.argv[2]))',
  'def osi_messages(path):',
  '    data = open(path, "rb").read(); i = 0',
  '    while i < len(data):',
  '        (k,) = struct.unpack_from("<I", data, i); m = Message(); m.ParseFromString(data[i + 4:i + 4 + k]); i += 4 + k',
  '        yield m',
];

function python(lines: string[], args: string[]): string {
  const r = spawnSync(PYTHON!, ['-c', [...PYTHON_PRELUDE, ...lines].join('\n'), ...args], {
    encoding: 'utf8',
  });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout;
}

describe('.txth text trace files', () => {
  it(
    "a real SensorView trace as Google's protobuf prints it (osi2read) reads as its .osi does",
    { skip: SKIP },
    async () => {
      const { messages, schema } = await disappearingVehicleTrace();
      const schemaFile = join(dir.path, 'sv.fds');
      writeFileSync(schemaFile, schema.data);
      const name = `20240603T143803Z_sv_3.7.0_3.17.3_${messages.length}_disappearing`;
      const osi = join(dir.path, `${name}.osi`);
      const txth = join(dir.path, `${name}.txth`);
      writeFileSync(osi, lengthPrefixed(messages));
      python(
        [
          'out = open(sys.argv[4], "w")',
          'for m in osi_messages(sys.argv[3]): out.write(text_format.MessageToString(m))',
        ],
        [schemaFile, schema.name, osi, txth],
      );
      assert.match(readFileSync(txth, 'utf8'), /^global_ground_truth \{|^version \{/m);
      const fromText = (await importRecording(store, 'osi', txth)).runs[0]!;
      const fromOsi = (await importRecording(store, 'osi', osi)).runs[0]!;
      const diff = await diffRuns(store, fromText.id, fromOsi.id);
      assert.equal(diff.same, true, JSON.stringify(diff.firstDivergence));
      assert.equal((await store.listActors(fromText.id)).length, (await store.listActors(fromOsi.id)).length);
    },
  );

  it(
    "simrec's .txth export parses in Google's protobuf into the messages of its .osi export",
    { skip: SKIP },
    async () => {
      const osi = join(dir.path, 'demo.osi');
      const txth = join(dir.path, 'demo.txth');
      const exported = await exportRecording(store, 'osi', [demo], osi);
      const text = await exportRecording(store, 'osi', [demo], txth);
      assert.match(String(text.conventionalName), /_gt_\d+\.\d+\.\d+_[\d.]+_\d+_run-\d+\.txth$/);
      assert.equal(text.frames, exported.frames);
      const schemaFile = join(dir.path, 'gt.fds');
      writeFileSync(schemaFile, groundTruthDescriptorSet());
      const out = python(
        [
          // Split as asam-osi-utilities' TXTH reader does: a message begins with the file's first line.
          'lines = open(sys.argv[4]).read().split("\\n"); first = lines[0]; texts = []; current = []',
          'for line in lines:',
          '    if line == first and current: texts.append("\\n".join(current)); current = []',
          '    current.append(line)',
          'texts.append("\\n".join(current))',
          'binary = list(osi_messages(sys.argv[3]))',
          'assert len(texts) == len(binary), (len(texts), len(binary))',
          'for t, b in zip(texts, binary):',
          '    m = Message(); text_format.Parse(t, m)',
          '    assert m == b, "the same message"',
          'print(len(texts))',
        ],
        [schemaFile, 'osi3.GroundTruth', osi, txth],
      );
      assert.equal(Number(out.trim()), exported.frames);
      // And back: the text reads as the binary does.
      const fromText = (await importRecording(store, 'osi', txth)).runs[0]!;
      const fromOsi = (await importRecording(store, 'osi', osi)).runs[0]!;
      assert.equal((await diffRuns(store, fromText.id, fromOsi.id)).same, true);
    },
  );

  it('a message not closed, a field the message lacks, a bad value: refused by line and field, nothing imported', async () => {
    const runs = (await store.listRuns()).length;
    const cases: [string, RegExp][] = [
      [
        'version {\n  version_major: 3\n',
        /message 0 at line 1: line 2: osi3\.InterfaceVersion is not closed: expected "\}"/,
      ],
      ['version {\n  version_major: 3\n}\ncolour: 4\n', /line 4: osi3\.GroundTruth has no field "colour"/],
      ['version {\n  version_major: three\n}\n', /line 2: version_major: expected an integer, got "three"/],
      [
        'timestamp {\n  seconds: 1\n}\ntimestamp {\n  seconds: "x"\n}\n',
        /message 1 at line 4: line 5: seconds: expected an integer/,
      ],
    ];
    for (const [text, message] of cases) {
      const file = join(dir.path, 'bad_gt.txth');
      writeFileSync(file, text);
      await assert.rejects(importRecording(store, 'osi', file), message);
    }
    assert.equal((await store.listRuns()).length, runs, 'no run kept');
  });
});
