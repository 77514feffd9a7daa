#!/usr/bin/env python3
"""Write the conditioning example's input bag with rosbags (PyPI: rosbags==0.11.9), no ROS needed.

30 s of a robot's camera (sensor_msgs/Image rgb8, 32x24) and laser scan (sensor_msgs/LaserScan,
360 rays), both at 10 Hz. The cue is a light patch on the left quarter of the image; the obstacle
is something 0.3 m straight ahead (the rest of the scan sees 3 m). Trials of one second:

    1 s          cue alone      (before learning: no response)
    4, 7, ... 19 s  cue + obstacle (six pairings: the reflex backs the robot)
    23 s, 26 s   cue alone      (after learning: the robot backs on the cue alone)

    python3 make_bag.py --out input.mcap

Everything is deterministic (fixed start time, no randomness): the same options give the same bag.
"""

import argparse
import math
import shutil
import tempfile
from pathlib import Path

import numpy as np
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore

T0 = 1_700_000_000 * 10**9  # fixed start time, ns
SECONDS = 30.0
# (start s, cue, obstacle): one-second trials
TRIALS = [(1.0, True, False)] + [(4.0 + 3 * k, True, True) for k in range(6)] + [(23.0, True, False), (26.0, True, False)]


def during(s):
    """(cue, obstacle) at bag second s."""
    for start, cue, obstacle in TRIALS:
        if start <= s < start + 1.0 - 1e-9:
            return cue, obstacle
    return False, False


def messages(ts):
    """Yield (topic, msgtype, time_ns, message) in time order."""
    Time = ts.types['builtin_interfaces/msg/Time']
    Header = ts.types['std_msgs/msg/Header']
    Image = ts.types['sensor_msgs/msg/Image']
    LaserScan = ts.types['sensor_msgs/msg/LaserScan']

    def header(t, frame):
        return Header(stamp=Time(sec=t // 10**9, nanosec=t % 10**9), frame_id=frame)

    out = []
    w, h, n = 32, 24, 360
    for i in range(int(SECONDS * 10)):
        t = T0 + i * 100_000_000
        cue, obstacle = during(i / 10)
        img = np.full((h, w, 3), 20, dtype=np.uint8)
        if cue:
            img[:, : w // 4, :] = (240, 235, 220)
        out.append(('/camera/image_raw', Image.__msgtype__, t, Image(
            header=header(t, 'camera'), height=h, width=w, encoding='rgb8', is_bigendian=0,
            step=w * 3, data=img.reshape(-1))))
        ranges = np.full(n, 3.0, dtype=np.float32)
        if obstacle:
            ahead = np.abs(np.linspace(-math.pi, math.pi, n, endpoint=False)) < 0.5
            ranges[ahead] = 0.3
        out.append(('/scan', LaserScan.__msgtype__, t + 10_000_000, LaserScan(
            header=header(t + 10_000_000, 'laser'), angle_min=-math.pi, angle_max=math.pi - 2 * math.pi / n,
            angle_increment=2 * math.pi / n, time_increment=0.0, scan_time=0.1, range_min=0.1,
            range_max=10.0, ranges=ranges, intensities=np.zeros(0, dtype=np.float32))))
    out.sort(key=lambda m: m[2])
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--out', required=True, type=Path, help='the .mcap file to write')
    a = p.parse_args()
    if a.out.exists():
        raise SystemExit(f'{a.out} exists already')
    ts = get_typestore(Stores.ROS2_JAZZY)
    msgs = messages(ts)
    with tempfile.TemporaryDirectory() as d:
        with Writer(Path(d) / 'bag', version=9, storage_plugin=StoragePlugin.MCAP) as writer:
            conns = {}
            for topic, msgtype, _, _ in msgs:
                if topic not in conns:
                    conns[topic] = writer.add_connection(topic, msgtype, typestore=ts)
            for topic, msgtype, t, msg in msgs:
                writer.write(conns[topic], t, ts.serialize_cdr(msg, msgtype))
        shutil.move(str(next((Path(d) / 'bag').glob('*.mcap'))), a.out)


if __name__ == '__main__':
    main()
