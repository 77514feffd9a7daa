"""Peers that must not get through (tests/secure_links.rs), played by PyPI eclipse-zenoh.

  outsider - a client without a valid certificate (none, or one of another CA): its session must
             not open. Prints {"connected": false} (or true, which fails the test).
  observer - a client with a certificate of the fleet's CA but without the robot's rights: it
             publishes obstacle scans for 2 s (rmw_zenoh keys and attachments) and reads the
             brain's BurstStats; the node must never see the scans (latency_samples, the messages
             it answered, stays 0) while the stats arrive.

usage: intruder.py ROLE --connect EP [--config FILE] [--msg-dir DIR]; prints one JSON line, exits 1 on failure."""
import argparse
import json
import os
import struct
import sys
import time

import zenoh
from zclient import client_config

ap = argparse.ArgumentParser()
ap.add_argument("role", choices=["outsider", "observer"])
ap.add_argument("--connect", required=True)
ap.add_argument("--config")
ap.add_argument("--msg-dir", help="the repository's msg/ folder (observer)")
args = ap.parse_args()

try:
    session = zenoh.open(client_config(args.config, args.connect, 3000))
except Exception as e:  # refused: what an outsider must get
    print(json.dumps({"role": args.role, "connected": False, "error": str(e)[:200]}))
    sys.exit(0 if args.role == "outsider" else 1)

if args.role == "outsider":
    print(json.dumps({"role": args.role, "connected": True}))
    sys.exit(1)

import numpy as np
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

store = get_typestore(Stores.ROS2_JAZZY)
store.register(get_types_from_msg(open(f"{args.msg_dir}/BurstStats.msg").read(), "neuroburst_msgs/msg/BurstStats"))
T = store.types
SCAN = "0/scan/sensor_msgs::msg::dds_::LaserScan_/" + store.hash_rihs01("sensor_msgs/msg/LaserScan")
STATS = "0/neuroburst/stats/**"
stats = []


def on_stats(s):
    m = store.deserialize_cdr(bytes(s.payload.to_bytes()), "neuroburst_msgs/msg/BurstStats")
    stats.append((time.time(), int(m.latency_samples), int(m.malformed_messages) + int(m.dropped_messages)))


sub = session.declare_subscriber(STATS, on_stats)
pub = session.declare_publisher(SCAN)
# a LaserScan with an obstacle on the left, as the robot's (tests/python/robot.py)
ranges = np.full(16, 9.0, dtype=np.float32)
ranges[12:] = 0.2
now = time.time()
header = T["std_msgs/msg/Header"](stamp=T["builtin_interfaces/msg/Time"](sec=int(now), nanosec=0), frame_id="base")
scan = T["sensor_msgs/msg/LaserScan"](header=header, angle_min=-1.5, angle_max=1.5, angle_increment=0.2, time_increment=0.0,
                                       scan_time=0.1, range_min=0.1, range_max=10.0, ranges=ranges,
                                       intensities=np.zeros(0, dtype=np.float32))
payload = bytes(store.serialize_cdr(scan, "sensor_msgs/msg/LaserScan"))
t0 = time.time()
seq = 0
while time.time() - t0 < 2.0:
    seq += 1
    att = struct.pack("<qqB", seq, time.time_ns(), 0x10) + bytes(16)
    pub.put(payload, attachment=att)
    time.sleep(0.01)
time.sleep(1.5)
after = [(n, lost) for (t, n, lost) in stats if t > t0 + 0.5]
answered = sum(n for n, _ in after)
lost = max((x for _, x in after), default=0)
out = {"role": args.role, "connected": True, "stats": len(after), "answered": answered, "lost": lost, "sent": seq}
print(json.dumps(out), flush=True)
# no teardown of the session: leave at once
os._exit(0 if after and answered == 0 and lost == 0 else 1)
