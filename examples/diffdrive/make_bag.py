#!/usr/bin/env python3
"""Write the diffdrive example's input bag with rosbags (PyPI: rosbags==0.11.9), no ROS needed.

A few seconds of a robot's sensors: camera (sensor_msgs/Image rgb8, 64x48, 10 Hz), laser scan
(sensor_msgs/LaserScan, 360 rays, 10 Hz) and IMU (sensor_msgs/Imu, 50 Hz). In the first half the
camera sees a bright patch straight ahead (the forward tiles: the centre half of the image), in the
second half the scene is dark. The bundled genome drives forward on the bright patch, and backs
when it is gone.

    python3 make_bag.py --out input.mcap                      # the bundled single-file bag
    python3 make_bag.py --out bagdir --storage sqlite3        # a rosbag2 directory with a .db3
    python3 make_bag.py --out bagdir --split 2                # a rosbag2 directory, two .mcap files
    python3 make_bag.py --out x.mcap --dark-first             # dark first, bright second

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


def messages(ts, seconds, dark_first):
    """Yield (topic, msgtype, time_ns, message) in time order."""
    Time = ts.types['builtin_interfaces/msg/Time']
    Header = ts.types['std_msgs/msg/Header']
    Image = ts.types['sensor_msgs/msg/Image']
    LaserScan = ts.types['sensor_msgs/msg/LaserScan']
    Imu = ts.types['sensor_msgs/msg/Imu']
    Quaternion = ts.types['geometry_msgs/msg/Quaternion']
    Vector3 = ts.types['geometry_msgs/msg/Vector3']

    def header(t, frame):
        return Header(stamp=Time(sec=t // 10**9, nanosec=t % 10**9), frame_id=frame)

    out = []
    half = seconds / 2
    w, h = 64, 48
    for i in range(int(seconds * 10)):
        t = T0 + i * 100_000_000
        s = i / 10
        bright = (s < half) != dark_first
        img = np.full((h, w, 3), 20, dtype=np.uint8)
        if bright:
            img[:, :, :] = 40
            img[:, w // 4 : 3 * w // 4, :] = (230, 220, 200)
        out.append(('/camera/image_raw', Image.__msgtype__, t, Image(
            header=header(t, 'camera'), height=h, width=w, encoding='rgb8', is_bigendian=0,
            step=w * 3, data=img.reshape(-1))))
        n = 360
        ranges = np.full(n, 3.0, dtype=np.float32)
        ahead = np.abs(np.linspace(-math.pi, math.pi, n, endpoint=False)) < 0.5
        ranges[ahead] = max(0.3, 2.0 - 0.25 * min(s, half))
        out.append(('/scan', LaserScan.__msgtype__, t + 20_000_000, LaserScan(
            header=header(t + 20_000_000, 'laser'), angle_min=-math.pi, angle_max=math.pi - 2 * math.pi / n,
            angle_increment=2 * math.pi / n, time_increment=0.0, scan_time=0.1, range_min=0.1,
            range_max=10.0, ranges=ranges, intensities=np.zeros(0, dtype=np.float32))))
    for i in range(int(seconds * 50)):
        t = T0 + i * 20_000_000 + 5_000_000
        s = i / 50
        ax = 0.8 if (s < 0.5 or half <= s < half + 0.5) else 0.0
        if half <= s:
            ax = -ax
        out.append(('/imu', Imu.__msgtype__, t, Imu(
            header=header(t, 'imu'), orientation=Quaternion(x=0.0, y=0.0, z=0.0, w=1.0),
            orientation_covariance=np.zeros(9), angular_velocity=Vector3(x=0.0, y=0.0, z=0.3 * math.sin(s)),
            angular_velocity_covariance=np.zeros(9), linear_acceleration=Vector3(x=ax, y=0.0, z=9.81),
            linear_acceleration_covariance=np.zeros(9))))
    out.sort(key=lambda m: m[2])
    return out


def write_bag(path, msgs, ts, storage):
    plugin = StoragePlugin.SQLITE3 if storage == 'sqlite3' else StoragePlugin.MCAP
    with Writer(path, version=9, storage_plugin=plugin) as writer:
        conns = {}
        for topic, msgtype, _, _ in msgs:
            if topic not in conns:
                conns[topic] = writer.add_connection(topic, msgtype, typestore=ts)
        for topic, msgtype, t, msg in msgs:
            writer.write(conns[topic], t, ts.serialize_cdr(msg, msgtype))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--out', required=True, type=Path, help='a .mcap file, or a bag directory')
    p.add_argument('--storage', choices=['mcap', 'sqlite3'], default='mcap')
    p.add_argument('--split', type=int, default=1, help='files of a bag directory (mcap)')
    p.add_argument('--seconds', type=float, default=6.0)
    p.add_argument('--dark-first', action='store_true')
    a = p.parse_args()
    ts = get_typestore(Stores.ROS2_JAZZY)
    msgs = messages(ts, a.seconds, a.dark_first)
    if a.out.exists():
        raise SystemExit(f'{a.out} exists already')
    if a.out.suffix == '.mcap':
        with tempfile.TemporaryDirectory() as d:
            write_bag(Path(d) / 'bag', msgs, ts, 'mcap')
            shutil.move(str(next((Path(d) / 'bag').glob('*.mcap'))), a.out)
        return
    if a.split <= 1:
        write_bag(a.out, msgs, ts, a.storage)
        return
    # a split bag: one rosbag2 bag per part, files gathered in one directory, metadata listing all
    a.out.mkdir(parents=True)
    names = []
    per = math.ceil(len(msgs) / a.split)
    with tempfile.TemporaryDirectory() as d:
        for k in range(a.split):
            part = Path(d) / f'part{k}'
            write_bag(part, msgs[k * per:(k + 1) * per], ts, a.storage)
            f = next(x for x in part.iterdir() if x.suffix in ('.mcap', '.db3'))
            name = f'{a.out.name}_{k}{f.suffix}'
            shutil.move(str(f), a.out / name)
            names.append(name)
            if k == 0:
                meta = (part / 'metadata.yaml').read_text()
    lines, skip = [], False
    for line in meta.splitlines():
        if line.strip().startswith('relative_file_paths:'):
            lines.append(line)
            indent = line[: len(line) - len(line.lstrip())]
            lines.extend(f'{indent}  - {n}' for n in names)
            skip = True
            continue
        if skip and line.strip().startswith('- '):
            continue
        skip = False
        lines.append(line)
    (a.out / 'metadata.yaml').write_text('\n'.join(lines) + '\n')


if __name__ == '__main__':
    main()
