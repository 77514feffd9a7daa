"""A robot played by an independent Zenoh peer (PyPI eclipse-zenoh) and independent CDR/type-hash
code (PyPI rosbags, xxhash), for the node tests in tests/node_zenoh.rs. Every scenario checks
what it sees, prints one JSON summary line on stdout and exits non-zero with the reason on failure.

Scenarios:
  basic   - graph (liveliness tokens, rmw only), LaserScan + Image in, Twist and BurstStats out
  bad     - malformed CDR, samples without attachment, a flood at 10x the burst rate
  router  - Twist before, during and after the router stops and comes back (router run by the test)
  safestop - sensors, silence, sensors, then SIGTERM to --kill-pid: a zero Twist within stale_after
             + one burst of the last sensor message, and a zero Twist as the last message
  simtime - /clock at --clock-speed x real time (the node has use_sim_time): Twists follow it, and
            stop while the clock is paused
"""

import argparse
import json
import os
import signal
import struct
import sys
import threading
import time

import xxhash
import zenoh
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

HASHES = {
    "sensor_msgs/msg/LaserScan": "RIHS01_64c191398013af96509d518dac71d5164f9382553fce5c1f8cca5be7924bd828",
    "sensor_msgs/msg/Image": "RIHS01_d31d41a9a4c4bc8eae9be757b0beed306564f7526c88ea6a4588fb9582527d47",
    "geometry_msgs/msg/Twist": "RIHS01_9c45bf16fe0983d80e3cfe750d6835843d265a9a6c46bd2e609fcddde6fb8d2a",
}

ap = argparse.ArgumentParser()
ap.add_argument("--connect", required=True)
ap.add_argument("--format", choices=["rmw", "ros2dds"], default="rmw")
ap.add_argument("--scenario", choices=["basic", "bad", "router", "safestop", "simtime"], default="basic")
ap.add_argument("--kill-pid", type=int, default=0, help="safestop: the node's pid, sent SIGTERM")
ap.add_argument("--stale-after", type=float, default=0.5)
ap.add_argument("--clock-speed", type=float, default=10.0)
ap.add_argument("--rate", type=float, default=200.0, help="the node's burst rate")
ap.add_argument("--msg-dir", required=True, help="the repository's msg/ folder")
ap.add_argument("--node", default="neuroburst")
ap.add_argument("--mode", choices=["peer", "client"], default="peer")
ap.add_argument("--config", help="a Zenoh configuration file to start from (TLS certificates, authentication)")
args = ap.parse_args()

store = get_typestore(Stores.ROS2_JAZZY)
store.register(get_types_from_msg(open(f"{args.msg_dir}/BurstStats.msg").read(), "neuroburst_msgs/msg/BurstStats"))
for t, h in HASHES.items():
    assert store.hash_rihs01(t) == h, f"pinned hash of {t} differs from rosbags"
STATS_HASH = store.hash_rihs01("neuroburst_msgs/msg/BurstStats")
LaserScan = store.types["sensor_msgs/msg/LaserScan"]
Image = store.types["sensor_msgs/msg/Image"]
Header = store.types["std_msgs/msg/Header"]
Time = store.types["builtin_interfaces/msg/Time"]
Clock = store.types["rosgraph_msgs/msg/Clock"]

import numpy as np


def fail(msg):
    print(json.dumps({"ok": False, "error": msg}))
    sys.stdout.flush()
    # no interpreter shutdown: it waits for the Zenoh callback threads, which never end
    os._exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def dds(t):
    pkg, _, name = t.split("/")
    return f"{pkg}::msg::dds_::{name}_"


def key(topic, t, hash_=None):
    if args.format == "ros2dds":
        return topic
    return f"0/{topic}/{dds(t)}/{hash_ or HASHES.get(t, '*')}"


def header():
    now = time.time()
    return Header(stamp=Time(sec=int(now), nanosec=int((now % 1) * 1e9)), frame_id="base")


def scan(near):
    ranges = np.full(16, 9.0, dtype=np.float32)
    if near:
        ranges[12:] = 0.2  # an obstacle on the left (the angle_max side of a counter-clockwise scan)
    m = LaserScan(header=header(), angle_min=-1.5, angle_max=1.5, angle_increment=0.2, time_increment=0.0,
                  scan_time=0.1, range_min=0.1, range_max=10.0, ranges=ranges, intensities=np.zeros(0, dtype=np.float32))
    return bytes(store.serialize_cdr(m, "sensor_msgs/msg/LaserScan"))


def image(bright):
    data = np.full(8 * 8 * 3, 255 if bright else 0, dtype=np.uint8)
    m = Image(header=header(), height=8, width=8, encoding="rgb8", is_bigendian=0, step=24, data=data)
    return bytes(store.serialize_cdr(m, "sensor_msgs/msg/Image"))


conf = zenoh.Config.from_file(args.config) if args.config else zenoh.Config()
conf.insert_json5("mode", json.dumps(args.mode))
conf.insert_json5("scouting/multicast/enabled", "false")
conf.insert_json5("connect/endpoints", json.dumps([args.connect]))
conf.insert_json5("connect/exit_on_failure", "false")
conf.insert_json5("connect/timeout_ms", "-1")
if args.mode == "peer":
    conf.insert_json5("listen/endpoints", "[]")
session = zenoh.open(conf)
GID = xxhash.xxh3_128_intdigest(b"robot peer").to_bytes(16, "little")
seqs = {}


def put(pub, payload, attachment=True):
    if args.format == "rmw" and attachment:
        seqs[pub] = seqs.get(pub, 0) + 1
        att = struct.pack("<qqB", seqs[pub], time.time_ns(), 0x10) + GID
        pub.put(payload, attachment=att)
    else:
        pub.put(payload)


lock = threading.Lock()
twists = []  # (received time, key, payload bytes, attachment bytes or None)
stats = []  # (received time, BurstStats)


def on_twist(s):
    a = s.attachment.to_bytes() if s.attachment is not None else None
    with lock:
        twists.append((time.time(), str(s.key_expr), s.payload.to_bytes(), a))


def on_stats(s):
    m = store.deserialize_cdr(s.payload.to_bytes(), "neuroburst_msgs/msg/BurstStats")
    with lock:
        stats.append((time.time(), m))


session.declare_subscriber(key("cmd_vel", "geometry_msgs/msg/Twist"), on_twist)
session.declare_subscriber(key(f"{args.node}/stats", "neuroburst_msgs/msg/BurstStats", STATS_HASH), on_stats)
scan_pub = session.declare_publisher(key("scan", "sensor_msgs/msg/LaserScan"))
image_pub = session.declare_publisher(key("camera/image_raw", "sensor_msgs/msg/Image"))
clock_pub = session.declare_publisher(key("clock", "rosgraph_msgs/msg/Clock", store.hash_rihs01("rosgraph_msgs/msg/Clock")))
sim = {"t": 1000.0, "running": args.scenario == "simtime"}


def tick():
    """/clock every 10 ms of wall time, advancing --clock-speed x as much (while running)."""
    while True:
        if sim["running"]:
            sim["t"] += 0.01 * args.clock_speed
            sec = int(sim["t"])
            m = Clock(clock=Time(sec=sec, nanosec=int((sim["t"] - sec) * 1e9)))
            put(clock_pub, bytes(store.serialize_cdr(m, "rosgraph_msgs/msg/Clock")))
        time.sleep(0.01)


if args.scenario == "simtime":
    threading.Thread(target=tick, daemon=True).start()


def wait_for(cond, timeout, what):
    end = time.time() + timeout
    while time.time() < end:
        with lock:
            if cond():
                return
        time.sleep(0.02)
    fail(f"timed out after {timeout} s waiting for {what}")


def twist_of(payload):
    return store.deserialize_cdr(payload, "geometry_msgs/msg/Twist")


def check_twist_sample(t):
    _, k, payload, att = t
    check(k == key("cmd_vel", "geometry_msgs/msg/Twist"), f"Twist key {k!r}")
    twist_of(payload)  # rosbags must read it
    if args.format == "rmw":
        check(att is not None and len(att) == 33 and att[16] == 0x10, f"Twist attachment {att!r}")
        ts = struct.unpack("<q", att[8:16])[0]
        check(abs(ts - time.time_ns()) < 5e9, f"Twist source timestamp {ts} is not now")
    else:
        check(att is None, "ros2dds Twist carries an attachment")


summary = {"ok": True, "scenario": args.scenario, "format": args.format}
wait_for(lambda: len(twists) > 0, 20, "the first Twist")

if args.scenario == "basic":
    if args.format == "rmw":
        tokens = [str(r.ok.key_expr) for r in session.liveliness().get("@ros2_lv/0/**", timeout=5) if r.ok]
        node = [t for t in tokens if t.endswith(f"/NN/%/%/{args.node}")]
        check(len(node) == 1, f"node token of {args.node} not in {tokens}")
        zid = node[0].split("/")[2]

        def entity(kind, topic, t, qos):
            hits = [x for x in tokens if x.split("/")[2] == zid and x.split("/")[5] == kind
                    and x.endswith(f"/%/%/{args.node}/{topic}/{dds(t)}/{HASHES[t]}/{qos}")]
            check(len(hits) == 1, f"no {kind} token for {topic} {t} {qos} in {tokens}")
            return hits[0]

        entity("MS", "%scan", "sensor_msgs/msg/LaserScan", "2::,5:,:,:,,")
        entity("MS", "%camera%image_raw", "sensor_msgs/msg/Image", "2::,5:,:,:,,")
        twist_token = entity("MP", "%cmd_vel", "geometry_msgs/msg/Twist", "::,10:,:,:,,")
        gid = xxhash.xxh3_128_intdigest(twist_token.encode()).to_bytes(16, "little")
        with lock:
            check(twists[-1][3][17:] == gid, "Twist attachment GID is not XXH3-128 of the publisher's token")
        summary["tokens"] = len(tokens)
    else:
        tokens = [str(r.ok.key_expr) for r in session.liveliness().get("@ros2_lv/**", timeout=2) if r.ok]
        check(not tokens, f"ros2dds format declared liveliness tokens {tokens}")
    with lock:
        quiet = [twist_of(t[2]) for t in twists[-20:]]
        for t in twists[-20:]:
            check_twist_sample(t)
        seq = [struct.unpack("<q", t[3][:8])[0] for t in twists[-20:]] if args.format == "rmw" else []
    check(all(q.linear.x == 0.0 for q in quiet), "motor moves without input")
    check(all(b > a for a, b in zip(seq, seq[1:])), f"Twist sequence numbers not increasing: {seq}")
    # An obstacle on the left and a bright camera: the motor row fires (forward, turning right).
    n0 = len(twists)
    for _ in range(25):
        put(scan_pub, scan(True))
        put(image_pub, image(True))
        time.sleep(0.02)
    wait_for(lambda: any(twist_of(t[2]).linear.x > 0 for t in twists[n0:]), 5, "a Twist with linear.x > 0")
    with lock:
        moving = [twist_of(t[2]) for t in twists[n0:] if twist_of(t[2]).linear.x > 0]
    summary["moving_twists"] = len(moving)
    summary["max_linear_x"] = max(m.linear.x for m in moving)
    wait_for(lambda: len(stats) >= 2, 5, "two BurstStats")
    with lock:
        s = stats[-1][1]
    check(s.burst > 0 and s.area_ids[-1] == "all", f"BurstStats {s}")
    summary["stats_burst"] = int(s.burst)

elif args.scenario == "bad":
    wait_for(lambda: len(stats) >= 1, 5, "BurstStats")
    garbage = b"\x07not cdr at all"
    truncated = scan(True)[:30]
    for _ in range(10):
        put(scan_pub, garbage)
        time.sleep(0.01)
        put(scan_pub, truncated)
        time.sleep(0.01)
    if args.format == "rmw":
        for _ in range(10):
            put(scan_pub, scan(True), attachment=False)
            time.sleep(0.01)
    # A flood at 10x the burst rate for 2 s.
    t0 = time.time()
    n = 0
    period = 1.0 / (10 * args.rate)
    while time.time() - t0 < 2.0:
        put(scan_pub, scan(n % 2 == 0))
        n += 1
        target = t0 + n * period
        while time.time() < target:
            pass
    summary["flood_sent"] = n
    summary["flood_rate"] = n / (time.time() - t0)
    time.sleep(1.5)
    with lock:
        first, last = stats[0], stats[-1]
    s = last[1]
    summary.update(burst=int(s.burst), malformed=int(s.malformed_messages), dropped=int(s.dropped_messages),
                   missed=int(s.missed_deadlines))
    check(s.malformed_messages >= 20, f"malformed messages counted: {s.malformed_messages} < 20")
    check(s.dropped_messages >= s.malformed_messages + 0.5 * n, f"dropped {s.dropped_messages}: the flood of {n} was not counted")
    rate = (last[1].burst - first[1].burst) / (last[0] - first[0])
    summary["burst_rate_during"] = rate
    check(rate > 0.7 * args.rate, f"the node slowed down to {rate:.0f} bursts/s during the flood")
    wait_for(lambda: len(twists) > 0, 1, "Twist")

elif args.scenario == "router":
    # The test stops the router while we wait, then starts it again.
    def last_stats():
        with lock:
            return stats[-1] if stats else None
    wait_for(lambda: len(stats) >= 1, 10, "BurstStats before the router stops")
    before = last_stats()
    summary["burst_before"] = int(before[1].burst)
    print(json.dumps({"ready": True}))
    sys.stdout.flush()
    # Wait for the router to go away (no stats) and come back (stats again).
    wait_for(lambda: time.time() - stats[-1][0] > 1.5, 20, "the router to stop (stats to pause)")
    gap_start = stats[-1][0]
    n_twists = len(twists)
    wait_for(lambda: stats[-1][0] > gap_start + 0.5, 30, "BurstStats after the router came back")
    after = last_stats()
    gap = after[0] - before[0]
    summary["burst_after"] = int(after[1].burst)
    summary["gap_s"] = gap
    bursts = after[1].burst - before[1].burst
    check(bursts > 0.7 * args.rate * gap, f"only {bursts} bursts in {gap:.1f} s across the outage: the node stopped bursting")
    wait_for(lambda: len(twists) > n_twists, 10, "Twist after the router came back")
    with lock:
        check_twist_sample(twists[-1])

elif args.scenario in ("safestop", "simtime"):
    def feed(seconds):
        end = time.time() + seconds
        while time.time() < end:
            put(scan_pub, scan(True))
            put(image_pub, image(True))
            time.sleep(0.02)
        return time.time()

    def moving(a, b):
        with lock:
            return [t for t in twists if a <= t[0] < b and twist_of(t[2]).linear.x > 0]

    if args.scenario == "safestop":
        start = time.time()
        fed = feed(2.0)
        time.sleep(1.2)
        silent = time.time()
        check(len(moving(start, fed)) > 20, "no forward Twists while the sensors were fed")
        with lock:
            zero = next((t[0] for t in twists if t[0] > fed and twist_of(t[2]).linear.x == 0.0), None)
            late = [t for t in twists if zero is not None and zero + 0.05 < t[0] < silent and twist_of(t[2]).linear.x != 0.0]
        check(zero is not None, "no zero Twist after the sensors went silent")
        bound = args.stale_after + 1.0 / args.rate + 0.15
        check(zero - fed <= bound, f"the zero Twist came {zero - fed:.3f} s after the last sensor message (> {bound:.3f})")
        check(not late, f"{len(late)} moving Twists while blind")
        feed(1.0)
        check(len(moving(silent + 0.2, time.time())) > 10, "no forward Twists once fed again")
        signal_at = time.time()
        os.kill(args.kill_pid, signal.SIGTERM)
        feed(1.0)
        with lock:
            last = twists[-1]
        check(last[0] > signal_at and twist_of(last[2]).linear.x == 0.0, f"the last Twist {twist_of(last[2])} (signal at {signal_at})")
        summary.update(zero_after_s=zero - fed, bound_s=bound, last_after_signal_s=last[0] - signal_at)
    else:
        with lock:
            twists.clear()
        start_sim, start = sim["t"], time.time()
        feed(2.0)
        wall, simulated = time.time() - start, sim["t"] - start_sim
        with lock:
            n = len(twists)
        check(simulated > 8 * wall, f"the clock ran {simulated:.2f} s in {wall:.2f} s")
        check(0.7 * args.rate * simulated < n < 1.2 * args.rate * simulated,
              f"{n} Twists in {simulated:.2f} simulated s ({wall:.2f} s): the bursts do not follow /clock")
        sim["running"] = False
        time.sleep(0.3)
        with lock:
            paused_from = len(twists)
        time.sleep(1.0)
        with lock:
            paused = len(twists) - paused_from
        check(paused == 0, f"{paused} Twists while the clock was paused")
        summary.update(wall_s=wall, sim_s=simulated, twists=n, twists_per_sim_s=n / simulated)

print(json.dumps(summary))
sys.stdout.flush()
# no session teardown: eclipse-zenoh's close() has been seen to hang for minutes
os._exit(0)
