"""A rogue in a cluster (tests/multi_machine/secure.rs), played by PyPI eclipse-zenoh: a client
with a certificate of the cluster's CA but not a member's, connected to a shard, publishing
garbage and forged spikes on the brain's keys for --seconds. Prints one JSON line once it is
connected (or could not connect), and one at the end."""
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
ap.add_argument("--config", required=True)
ap.add_argument("--name", required=True, help="the brain's name (cluster.name)")
ap.add_argument("--seconds", type=float, default=10.0)
args = ap.parse_args()

try:
    session = zenoh.open(client_config(args.config, args.connect, 30000))
except Exception as e:
    print(json.dumps({"connected": False, "error": str(e)[:200]}), flush=True)
    os._exit(0)
print(json.dumps({"connected": True}), flush=True)
rng = random.Random(7)
sent = 0
t0 = time.time()
while time.time() - t0 < args.seconds:
    burst = rng.randrange(1, 1000)
    shard = rng.randrange(0, 3)
    junk = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))
    forged = struct.pack("<BBHQ", 0x4E, 1, shard, burst) + struct.pack("<I", 5) + struct.pack("<5I", *range(5))
    for key, payload in [(f"neuroburst/{args.name}/spikes/{burst}/{shard}", junk),
                         (f"neuroburst/{args.name}/spikes/{burst}/{shard}", forged),
                         (f"neuroburst/{args.name}/control", junk)]:
        session.put(key, payload)
        sent += 1
    time.sleep(0.002)
print(json.dumps({"done": True, "sent": sent}), flush=True)
os._exit(0)
