#!/usr/bin/env python3
"""Records a short run into a simrec server over the TCP ingest protocol (docs/protocol.md).

Standard library only, so that it runs beside any simulator's Python:

    simrec serve --ingest-port 8471 &
    python3 examples/python_client.py 127.0.0.1 8471

Each frame is a big-endian u32 length, then a big-endian u32 header length, the JSON header and the
body bytes. Every message that changes something carries a sequence number; the server answers each
with an ack once it is on disk, or with an error naming the message and field.

With --binary the states go as protocol 2's binary frames (docs/protocol.md, "Binary batches"): one
message per step holding every actor's values as little-endian arrays, built with struct.
"""

import argparse
import json
import socket
import struct
import sys
import time

PROTOCOL_VERSION = 2

# How one row of a declared field travels in a binary batch (docs/protocol.md): struct codes, little-endian.
VALUE_CODES = {"f64": "d", "f32": "f", "i32": "i", "i64": "q", "bool": "B", "vec": "d"}
ABSENT = 0xFFFFFFFF
PRESENCE_FLAG = 0x8000


class SimrecError(Exception):
    """An error the server answered; `code` is what to branch on."""

    def __init__(self, message):
        super().__init__(f"{message['code']}: {message['message']}")
        self.code = message["code"]
        self.field = message.get("field")
        self.fatal = message.get("fatal", False)


class SimrecClient:
    def __init__(self, host, port, simulator, version=None, token=None, on_control=None, protocol=PROTOCOL_VERSION):
        self.sock = socket.create_connection((host, port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.on_control = on_control
        self.on_ack = None
        self.seq = 0
        # seq -> the answer, once it came; None while waiting.
        self.pending = {}
        # Declared fields by stream id: a binary batch names a field by its index among them.
        self.fields = {}
        # What the server decodes at once: a JSON header, a columns or frame body (None until the welcome).
        self.max_batch = None
        hello = {"type": "hello", "protocol": protocol, "simulator": {"name": simulator}}
        if version:
            hello["simulator"]["version"] = version
        if token:
            hello["token"] = token
        self._send(hello)
        welcome = self._read()
        if welcome["type"] == "error":
            raise SimrecError(welcome)
        self.window = welcome["window"]["messages"]
        self.max_frame = welcome["maxFrameBytes"]
        self.max_batch = welcome.get("maxBatchBytes")
        self.protocol = welcome["protocol"]

    # -- framing ----------------------------------------------------------------------------------

    def _send(self, header, body=b""):
        head = json.dumps(header, separators=(",", ":"), allow_nan=False).encode("utf-8")
        decoded = max(len(head), len(body)) if header["type"] in ("columns", "frame") else len(head)
        if self.max_batch is not None and decoded > self.max_batch:
            raise ValueError(
                f"{header['type']}: {decoded} bytes exceeds the server's maxBatchBytes of {self.max_batch}; send it in several messages"
            )
        frame = struct.pack(">II", 4 + len(head) + len(body), len(head)) + head + body
        self.sock.sendall(frame)

    def _read_exactly(self, n):
        chunks = []
        while n > 0:
            chunk = self.sock.recv(min(n, 1 << 20))
            if not chunk:
                raise ConnectionError("the server closed the connection")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def _read(self):
        (length,) = struct.unpack(">I", self._read_exactly(4))
        frame = self._read_exactly(length)
        (head_length,) = struct.unpack(">I", frame[:4])
        return json.loads(frame[4 : 4 + head_length].decode("utf-8"))

    # -- answers ------------------------------------------------------------------------------------

    def _handle_one(self):
        message = self._read()
        kind = message["type"]
        if kind == "ping":
            self._send({"type": "pong"})
        elif kind == "control":
            if self.on_control:
                self.on_control(message)
        elif kind in ("ack", "error"):
            seq = message["seq"] if kind == "ack" else message.get("ref", {}).get("seq")
            if seq in self.pending:
                self.pending[seq] = message
                if kind == "ack" and self.on_ack:
                    self.on_ack(message)
            elif kind == "error":
                raise SimrecError(message)

    def _request(self, header, body=b"", wait=False):
        # The credit window: never more unanswered messages than the server allows.
        while sum(1 for a in self.pending.values() if a is None) >= self.window:
            self._handle_one()
        seq = self.seq + 1
        self._send(dict(header, seq=seq), body)  # raises before the number is used when too large
        self.seq = seq
        self.pending[seq] = None
        return self._wait(seq) if wait else seq

    def _wait(self, seq):
        while self.pending[seq] is None:
            self._handle_one()
        answer = self.pending.pop(seq)
        if answer["type"] == "error":
            raise SimrecError(answer)
        return answer

    def flush(self):
        """Waits for every answer; raises the first error among them."""
        for seq in sorted(self.pending):
            self._wait(seq)

    # -- the protocol's messages ----------------------------------------------------------------

    def begin(self, description="", metadata=None):
        return self._request(
            {"type": "begin", "description": description, "metadata": metadata or {}}, wait=True
        )["run"]

    def declare_actors(self, actors):
        self._request({"type": "actors", "actors": actors}, wait=True)

    def declare_streams(self, streams):
        self._request({"type": "streams", "streams": streams}, wait=True)
        for s in streams:
            self.fields[f"{s['actor']}/{s['name']}" if s.get("actor") else s["name"]] = s["fields"]

    def declare_sensors(self, sensors):
        self._request({"type": "sensors", "sensors": sensors}, wait=True)

    def samples(self, batch):
        """Sends {stream id: [samples]} without waiting; returns its sequence number."""
        return self._request({"type": "samples", "samples": batch})

    def frame(self, name, t, step, actors, columns):
        """Sends one step of the streams <actor>/<name> of several actors as a binary frame (protocol 2).

        `columns` maps a declared field to one value per actor (a vec field: `length` values per actor);
        None is absent. Returns the sequence number without waiting.
        """
        body = _str16(name) + struct.pack("<qqI", t, step, len(actors))
        if actors:  # a frame of no actors ends after its count
            body += b"".join(_str16(actor) for actor in actors)
            body += _columns(self.fields[f"{actors[0]}/{name}"], columns, len(actors))
        return self._request({"type": "frame"}, body)

    def columns(self, batches):
        """Sends rows of several streams as binary columns (protocol 2).

        `batches` maps a stream id to {"t": [...], "step": [...], field: [...]}, one value per row.
        """
        body = struct.pack("<H", len(batches))
        for stream, batch in batches.items():
            rows = len(batch["t"])
            body += _str16(stream) + struct.pack("<I%dq%dq" % (rows, rows), rows, *batch["t"], *batch["step"])
            values = {k: v for k, v in batch.items() if k not in ("t", "step")}
            body += _columns(self.fields[stream], values, rows)
        return self._request({"type": "columns"}, body)

    def capture(self, sensor, t, step, media_type, data):
        return self._request(
            {"type": "capture", "sensor": sensor, "t": t, "step": step, "mediaType": media_type}, data
        )

    def end(self, reason="user_request"):
        self.flush()
        return self._request({"type": "end", "reason": reason}, wait=True)

    def close(self):
        self.sock.close()


def _str16(text):
    data = text.encode("utf-8")
    return struct.pack("<H", len(data)) + data


def _presence(values):
    """The presence bitmap of a column with absent rows (None): bit i set where row i has a value."""
    bits = bytearray((len(values) + 7) // 8)
    for i, v in enumerate(values):
        if v is not None:
            bits[i // 8] |= 1 << (i % 8)
    return bytes(bits)


def _columns(fields, columns, rows):
    """The column count, then per column its field id and its values in the declared type.

    None marks an absent row: NaN for floats, length 0xFFFFFFFF for strings and JSON, and for integers
    and booleans, which have no value to spare, a presence bitmap after the field id (its high bit set).
    """
    ids = {field["name"]: i for i, field in enumerate(fields)}
    out = struct.pack("<H", len(columns))
    for name, values in columns.items():
        field = fields[ids[name]]
        kind = field["type"]
        if kind in ("i32", "i64", "bool") and None in values:
            out += struct.pack("<H", ids[name] | PRESENCE_FLAG) + _presence(values)
            values = [0 if v is None else v for v in values]
        else:
            out += struct.pack("<H", ids[name])
        if kind in ("string", "json"):
            for v in values:
                if v is None:
                    out += struct.pack("<I", ABSENT)
                else:
                    data = (json.dumps(v) if kind == "json" else v).encode("utf-8")
                    out += struct.pack("<I", len(data)) + data
        else:
            if kind in ("f64", "f32", "vec"):
                values = [float("nan") if v is None else v for v in values]
            count = rows * field["length"] if kind == "vec" else rows
            out += struct.pack("<%d%s" % (count, VALUE_CODES[kind]), *values)
    return out


def ppm(width, height, step):
    """A tiny test image (binary PPM), different at every step."""
    pixels = bytes((x * 40 + y * 20 + step) % 256 for y in range(height) for x in range(width) for _ in range(3))
    return b"P6 %d %d 255\n" % (width, height) + pixels


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("host")
    parser.add_argument("port", type=int)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--token")
    parser.add_argument("--endless", action="store_true", help="record until killed, printing each ack")
    parser.add_argument("--binary", action="store_true", help="send states as binary frames (protocol 2)")
    args = parser.parse_args()

    client = SimrecClient(args.host, args.port, "python-example", version="1.0", token=args.token)
    run = client.begin("a short run from examples/python_client.py", {"town": "loop"})
    print(f"run {run}", flush=True)
    client.declare_actors(
        [
            {"id": "ego", "kind": "ego", "extents": {"length": 4.6, "width": 1.9, "height": 1.5}},
            {"id": "lead", "kind": "vehicle"},
        ]
    )
    fields = [
        {"name": "x", "type": "f64", "unit": "m"},
        {"name": "y", "type": "f64", "unit": "m"},
        {"name": "yaw", "type": "f64", "unit": "rad"},
        {"name": "speed", "type": "f64", "unit": "m/s"},
    ]
    client.declare_streams([{"name": "state", "actor": a, "fields": fields} for a in ("ego", "lead")])
    client.declare_sensors([{"id": "front", "actor": "ego", "modality": "camera", "width": 4, "height": 2}])

    batch_end = {}
    client.on_ack = lambda ack: batch_end.get(ack["seq"]) is not None and print(
        f"ack {batch_end.pop(ack['seq'])}", flush=True
    )
    step = 0
    while args.endless or step < args.steps:
        t = 1_000_000 + step * 50_000
        if args.binary:
            seq = client.frame(
                "state",
                t,
                step,
                ["ego", "lead"],
                {"x": [step * 0.5, 20 + step * 0.45], "y": [0.0, 0.0], "yaw": [0.0, 0.0], "speed": [10.0, 9.0]},
            )
        else:
            seq = client.samples(
                {
                    "ego/state": [{"t": t, "step": step, "x": step * 0.5, "y": 0.0, "yaw": 0.0, "speed": 10.0}],
                    "lead/state": [{"t": t, "step": step, "x": 20 + step * 0.45, "y": 0.0, "yaw": 0.0, "speed": 9.0}],
                }
            )
        batch_end[seq] = step + 1
        if step % 10 == 0 and not args.endless:
            client.capture("front", t, step, "image/x-portable-pixmap", ppm(4, 2, step))
        step += 1
        if args.endless:
            time.sleep(0.001)
    ended = client.end("user_request")
    print(f"ended run {ended['run']}", flush=True)
    client.close()


if __name__ == "__main__":
    try:
        main()
    except SimrecError as error:
        print(f"simrec: {error}", file=sys.stderr)
        sys.exit(2)
