"""
An independent reading of a CARLA recorder file, for simrec's tests: Python's struct module over the
bytes, following CARLA's own code (Unreal/CarlaUE4/Plugins/Carla/Source/Carla/Recorder/, 0.9.14),
not simrec's. It prints JSON:

- what the file holds: header, every frame (id, elapsed, durationThis), every EventAdd, EventDel,
  EventParent and Collision record, and every Position record (CARLA's units: cm, degrees);
- `info`: the text CarlaRecorderQuery::QueryInfo(show_all = false) prints, `collisions`: what
  QueryCollisions('a', 'a') prints, `blocked`: QueryBlocked(min_time, min_distance)'s rows. C++ prints
  floats with ostream's defaults (6 significant digits, as %g); dates in UTC here (CARLA: the server's
  local time).

usage: carla_query.py FILE [MIN_TIME MIN_DISTANCE]
"""
import json
import math
import struct
import sys
import time

FIXED = {5: 14, 6: 28, 7: 10, 8: 21, 9: 8, 10: 8, 11: 26, 12: 28, 13: 28, 16: 16, 17: 28, 21: 6, 23: 12}
CATEGORIES = ['o', 'v', 'w', 't', 'h', 'a']


def g(v):
    return '%g' % v


def f32(v):
    return struct.unpack('<f', struct.pack('<f', v))[0]


class Reader:
    def __init__(self, data):
        self.b = data
        self.o = 0

    def take(self, fmt):
        v = struct.unpack_from('<' + fmt, self.b, self.o)
        self.o += struct.calcsize('<' + fmt)
        return v if len(v) > 1 else v[0]

    def fstring(self):
        n = self.take('H')
        s = self.b[self.o:self.o + n].decode('utf-8')
        self.o += n
        return s


def main():
    path = sys.argv[1]
    min_time = float(sys.argv[2]) if len(sys.argv) > 2 else 30.0
    min_distance = float(sys.argv[3]) if len(sys.argv) > 3 else 10.0
    r = Reader(open(path, 'rb').read())
    version = r.take('H')
    magic = r.fstring()
    date = r.take('q')
    mapname = r.fstring()
    out = {'version': version, 'magic': magic, 'date': date, 'map': mapname, 'frames': [], 'creates': [],
           'destroys': [], 'parents': [], 'collisionRecords': [], 'positions': []}
    info = ['Version: %d' % version, 'Map: %s' % mapname,
            'Date: %s' % time.strftime('%x %X', time.gmtime(date)), '']
    # QueryCollisions' state
    coll_actors = {}
    old, new = set(), set()
    coll_lines = []
    coll_fixed = False
    header = '%8s %6s %6s %-35s %6s %-35s' % ('Time', 'Types', 'Id', 'Actor 1', 'Id', 'Actor 2')
    # QueryBlocked's state
    blk = {}
    results = []
    last_del_fix = None
    frame = None
    printed = False
    while r.o < len(r.b):
        pid, size = r.take('BI')
        end = r.o + size
        if pid == 0:
            fid, dur, el = r.take('Qdd')
            frame = (fid, el, dur)
            out['frames'].append([fid, el, dur])
            out['positions'].append([])
            printed = False
            old, new = new, set()
        elif pid == 2:
            total = r.take('H')
            for _ in range(total):
                aid, typ = r.take('IB')
                loc = r.take('3f')
                rot = r.take('3f')
                uid = r.take('I')
                type_id = r.fstring()
                attrs = []
                for _ in range(r.take('H')):
                    at = r.take('B')
                    attrs.append([at, r.fstring(), r.fstring()])
                out['creates'].append([frame[0], aid, typ, type_id, uid, attrs, list(loc), list(rot)])
                if not printed:
                    info.append('Frame %d at %s seconds' % (frame[0], g(frame[1])))
                    printed = True
                info.append(' Create %d: %s (%d) at (%s, %s, %s)' % (aid, type_id, typ, g(loc[0]), g(loc[1]), g(loc[2])))
                for _, k, v in attrs:
                    info.append('  %s = %s' % (k, v))
                coll_actors[aid] = (typ, type_id)
                blk[aid] = {'type_id': type_id, 'last': (0.0, 0.0, 0.0), 'time': 0.0, 'duration': 0.0}
                last_del_fix = aid
        elif pid == 3:
            total = r.take('H')
            for _ in range(total):
                aid = r.take('I')
                out['destroys'].append([frame[0], aid])
                if not printed:
                    info.append('Frame %d at %s seconds' % (frame[0], g(frame[1])))
                    printed = True
                info.append(' Destroy %d' % aid)
                # CARLA's QueryCollisions and QueryBlocked erase the last created actor, not this one.
                coll_actors.pop(last_del_fix, None)
                blk.pop(last_del_fix, None)
        elif pid == 4:
            total = r.take('H')
            for _ in range(total):
                aid, parent = r.take('II')
                out['parents'].append([frame[0], aid, parent])
                if not printed:
                    info.append('Frame %d at %s seconds' % (frame[0], g(frame[1])))
                    printed = True
                info.append(' Parenting %d with %d (parent)' % (aid, parent))
        elif pid == 5:
            total = r.take('H')
            for _ in range(total):
                cid, a1, a2, h1, h2 = r.take('III??')
                out['collisionRecords'].append([frame[0], cid, a1, a2, h1, h2])
                if not printed:
                    info.append('Frame %d at %s seconds' % (frame[0], g(frame[1])))
                    printed = True
                info.append(' Collision id %d between %d%s with %d%s' % (cid, a1, ' (hero) ' if h1 else '', a2, ' (hero) ' if h2 else ''))
                t1 = 'o' if a1 == 0xFFFFFFFF else CATEGORIES[coll_actors.setdefault(a1, (0, ''))[0]]
                t2 = 'o' if a2 == 0xFFFFFFFF else CATEGORIES[coll_actors.setdefault(a2, (0, ''))[0]]
                if (a1, a2) not in old:
                    coll_fixed = True
                    n1 = coll_actors.setdefault(a1, (0, ''))[1]
                    n2 = coll_actors.setdefault(a2, (0, ''))[1]
                    coll_lines.append('%8.0f   %s %s  %6d %-35s %6d %-35s' % (frame[1], t1, t2, a1, n1, a2, n2))
                new.add((a1, a2))
        elif pid == 6:
            total = r.take('H')
            for _ in range(total):
                aid = r.take('I')
                loc = r.take('3f')
                rot = r.take('3f')
                out['positions'][-1].append([aid] + list(loc) + list(rot))
                a = blk.setdefault(aid, {'type_id': '', 'last': (0.0, 0.0, 0.0), 'time': 0.0, 'duration': 0.0})
                # FVector::Distance in float
                d = [f32(f32(loc[i]) - f32(a['last'][i])) for i in range(3)]
                dist = f32(math.sqrt(f32(f32(f32(d[0] * d[0]) + f32(d[1] * d[1])) + f32(d[2] * d[2]))))
                if dist < min_distance:
                    if a['duration'] == 0:
                        a['time'] = frame[1]
                    a['duration'] += frame[2]
                else:
                    if a['duration'] >= min_time:
                        results.append([aid, a['type_id'], a['time'], a['duration']])
                    a['duration'] = 0
                    a['last'] = loc
        r.o = end
    for aid, a in blk.items():
        if a['duration'] >= min_time:
            results.append([aid, a['type_id'], a['time'], a['duration']])
    last = out['frames'][-1] if out['frames'] else [0, 0.0, 0.0]
    info += ['', 'Frames: %d' % last[0], 'Duration: %s seconds' % g(last[1])]
    out['info'] = '\n'.join(info) + '\n'
    # After a row, the stream keeps std::fixed and precision 0 for the Duration line.
    duration = '%.0f' % last[1] if coll_fixed else g(last[1])
    out['collisions'] = '\n'.join(['Version: %d' % version, 'Map: %s' % mapname,
                                   'Date: %s' % time.strftime('%x %X', time.gmtime(date)), '', header]
                                  + coll_lines + ['', 'Frames: %d' % last[0], 'Duration: %s seconds' % duration]) + '\n'
    # Rows as CarlaRecorderQuery::QueryBlocked formats them; CARLA orders ties by its hash map, here by id.
    results.sort(key=lambda x: (-x[3], x[0]))
    out['blocked'] = [[aid, type_id, '%.0f' % t, '%.0f' % d, t, d] for aid, type_id, t, d in results]
    json.dump(out, sys.stdout)


main()
