"""A rogue in a cluster (tests/multi_machine/secure.rs, tests/multi_machine/forged.rs), played by
PyPI eclipse-zenoh: a client connected to a shard, publishing well-formed forged messages (and
some garbage) on the brain's keys for --seconds. Prints one JSON line once it is connected (or
could not connect), and one at the end.

--mode app: only what the shards themselves must refuse, over any link: spikes of a shard that is
not in the cluster, directives that are not the io shard's, messages of bursts far ahead and far
behind (ten bursts before the latest a member published), garbage. --mode all: also what only the access control can stop (the rogue holds no
member's certificate, or another member's): spikes and input under a member's keys, directives as
the io shard, member tokens of other shards."""
import argparse
import json
import os
import random
import struct
import time

import zenoh
from zclient import client_config

ap = argparse.ArgumentParser()
ap.add_argument("--connect", required=True)
ap.add_argument("--config", help="a Zenoh configuration file (TLS); none: plain")
ap.add_argument("--name", required=True, help="the brain's name (cluster.name)")
ap.add_argument("--seconds", type=float, default=10.0)
ap.add_argument("--mode", choices=["app", "all"], default="all")
ap.add_argument("--neurons", type=int, default=20000, help="the brain's neurons (shards own equal ranges)")
ap.add_argument("--shards", type=int, default=3)
args = ap.parse_args()

try:
    session = zenoh.open(client_config(args.config, args.connect, 30000))
except Exception as e:
    print(json.dumps({"connected": False, "error": str(e)[:200]}), flush=True)
    os._exit(0)
print(json.dumps({"connected": True}), flush=True)

VERSION = 2
ranges = [(args.neurons * k // args.shards, args.neurons * (k + 1) // args.shards) for k in range(args.shards)]


def varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def spikes(shard, epoch, burst, ids):
    b = struct.pack("<cBHIQI", b"S", VERSION, shard, epoch, burst, len(ids))
    last = 0
    for n in ids:
        b += varint(n - last)
        last = n
    return b


def input_msg(shard, epoch, burst, entries):
    b = struct.pack("<cBHIQI", b"I", VERSION, shard, epoch, burst, len(entries))
    last = 0
    for n, p in entries:
        b += varint(n - last) + varint((p << 1) ^ (p >> 63))
        last = n
    return b


def directive(sender, epoch, resume, members, last):
    return struct.pack("<cBHIQQQ", b"D", VERSION, sender, epoch, resume, members, last)


def some_ids(rng, shard, k=20):
    lo, hi = ranges[shard]
    return sorted(rng.sample(range(lo, hi), k))


key = lambda *parts: "/".join(["neuroburst", args.name, *map(str, parts)])
rng = random.Random(7)
io, victim, far = 0, 1, 10**6

# the latest burst a member published (the shard this rogue is connected to sends it its own):
# a burst "far behind" is ten before it, so that it is past whenever it arrives (burst 0 sent
# before the first burst would be the first burst's: without access control, a shard could not
# tell it from the io shard's own)
latest = [None]


def seen(sample):
    parts = str(sample.key_expr).split("/")
    try:
        burst, shard = int(parts[-2]), int(parts[-1])
    except ValueError:
        return
    if shard < args.shards and burst < far:
        latest[0] = max(latest[0] or 0, burst)


watch = session.declare_subscriber(key("spikes", "**"), seen, allowed_origin=zenoh.Locality.REMOTE)
tokens = []
sent = sent_past = 0
t0 = time.time()
while time.time() - t0 < args.seconds:
    burst = rng.randrange(1, 1000)
    msgs = [
        # a shard beyond the cluster (not a member)
        (key("spikes", burst, args.shards + 2), spikes(args.shards + 2, 1, burst, [5, 9])),
        # directives not from the io shard: leaving the victim out, and one naming a shard beyond
        (key("control"), directive(2, 2 + rng.randrange(100), burst, 0b101, 0)),
        (key("control"), directive(io, 3 + rng.randrange(100), burst, 0b1111 | (1 << 40), 0)),
        # bursts far ahead of every shard (the claim that a shard is behind), as the io shard
        # (whose certificate no rogue here holds)
        (key("spikes", far + burst, io), spikes(io, 1, far + burst, some_ids(rng, io))),
        # garbage
        (key("spikes", burst, victim), bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))),
        (key("control"), bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))),
    ]
    if latest[0] is not None and latest[0] >= 10:
        # ... and far behind, once the brain is under way
        past = latest[0] - 10
        msgs.append((key("spikes", past, io), spikes(io, 1, past, some_ids(rng, io))))
        sent_past += 1
    if args.mode == "all":
        msgs += [
            # as the victim: its spikes of this burst and the next, before the real ones
            (key("spikes", burst, victim), spikes(victim, 1, burst, some_ids(rng, victim))),
            (key("spikes", burst + 1, victim), spikes(victim, 1, burst + 1, some_ids(rng, victim))),
            # as the io shard: the victim's input, and a directive that leaves the victim out
            (key("input", burst, victim), input_msg(victim, 1, burst, [(n, 1 << 20) for n in some_ids(rng, victim, 5)])),
            (key("control"), directive(io, 2 + rng.randrange(100), burst, 0b101, 0)),
        ]
        if len(tokens) < 3:
            tokens.append(session.liveliness().declare_token(key("member", victim, 10**9 + len(tokens), "forged")))
    for k, payload in msgs:
        session.put(k, payload)
        sent += 1
    time.sleep(0.002)
print(json.dumps({"done": True, "sent": sent, "past": sent_past, "tokens": len(tokens)}), flush=True)
os._exit(0)
