"""A MuJoCo robot for neuroburst (issue 45, work in progress): steps a world (--world, the robot
of robot.xml included by name) lock-stepped to the node's bursts, over Zenoh in the rmw_zenoh
format (the node runs with use_sim_time):

  every burst period of simulated time: /scan (sensor_msgs/LaserScan, 16 rays), /imu
  (sensor_msgs/Imu) and /odom (nav_msgs/Odometry) out, and at --camera-hz /camera/image_raw
  (sensor_msgs/Image, rgb8, the robot's "front" camera) where offscreen rendering works (EGL:
  MUJOCO_GL=egl, Debian's libegl1 and libgl1-mesa-dri), then /clock; then it waits for the
  node's /cmd_vel (geometry_msgs/Twist) of that burst (or --wait seconds of wall time) and drives
  the wheels.

At the end it prints one JSON line: simulated seconds, wall seconds, distance covered, the
closest approach of any ray to an obstacle, collisions (contacts of the robot with anything but
the floor), Twists received.
"""
import argparse
import json
import math
import os
import struct
import sys
import threading
import time

import numpy as np
import zenoh
from rosbags.typesys import Stores, get_typestore

HERE = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser()
ap.add_argument("--world", default=os.path.join(HERE, "arena.xml"))
ap.add_argument("--connect", required=True, help="the node's Zenoh endpoint, e.g. tcp/127.0.0.1:7447")
ap.add_argument("--rate", type=float, default=50.0, help="the node's node.rate_hz: one burst per period")
ap.add_argument("--duration", type=float, default=120.0, help="simulated seconds")
ap.add_argument("--wait", type=float, default=1.0, help="wall seconds to wait for a burst's Twist")
ap.add_argument("--pose", default="0,0,0", help="the robot's start: x,y,yaw (m, m, rad)")
ap.add_argument("--trace", help="write the robot's path here: one line per burst, t x y yaw v w (CSV, full precision)")
ap.add_argument("--camera-hz", type=float, default=0.0, help="camera frames per simulated second (0: none; a frame costs tens of ms where OpenGL is software)")
ap.add_argument("--camera-size", default="64x48", help="camera frame width x height")
args = ap.parse_args()
if args.camera_hz > 0:
    os.environ.setdefault("MUJOCO_GL", "egl")  # read when mujoco is imported
import mujoco  # noqa: E402

WHEEL_RADIUS, WHEEL_BASE, RAYS, MAX_RANGE = 0.04, 0.24, 16, 4.0
store = get_typestore(Stores.ROS2_JAZZY)
T = store.types
TYPES = ["rosgraph_msgs/msg/Clock", "sensor_msgs/msg/LaserScan", "sensor_msgs/msg/Imu", "nav_msgs/msg/Odometry",
         "geometry_msgs/msg/Twist", "sensor_msgs/msg/Image"]
HASH = {t: store.hash_rihs01(t) for t in TYPES}


def key(topic, t):
    pkg, _, name = t.split("/")
    return f"0/{topic}/{pkg}::msg::dds_::{name}_/{HASH[t]}"


model = mujoco.MjModel.from_xml_path(args.world)
data = mujoco.MjData(model)
x0, y0, yaw0 = (float(v) for v in args.pose.split(","))
robot_q = model.joint("robot").qposadr[0]
data.qpos[robot_q:robot_q + 2] = [x0, y0]
data.qpos[robot_q + 3:robot_q + 7] = [math.cos(yaw0 / 2), 0, 0, math.sin(yaw0 / 2)]
mujoco.mj_forward(model, data)
robot_body = model.body("robot").id
robot_geoms = {g for g in range(model.ngeom) if model.body_rootid[model.geom_bodyid[g]] == robot_body}
floor = model.geom("floor").id
steps = max(1, round(1.0 / args.rate / model.opt.timestep))
camera_every = round(args.rate / args.camera_hz) if args.camera_hz > 0 else 0
renderer = None
if camera_every:
    width, height = (int(v) for v in args.camera_size.split("x"))
    try:
        renderer = mujoco.Renderer(model, height, width)
    except Exception as e:  # no offscreen OpenGL here: the robot goes on without its camera
        print(f"bridge.py: no camera ({type(e).__name__}: {e})", file=sys.stderr, flush=True)

conf = zenoh.Config()
conf.insert_json5("mode", '"peer"')
conf.insert_json5("scouting/multicast/enabled", "false")
conf.insert_json5("connect/endpoints", json.dumps([args.connect]))
conf.insert_json5("listen/endpoints", "[]")
session = zenoh.open(conf)
GID = os.urandom(16)
seqs = {}
pubs = {t: session.declare_publisher(key(topic, t)) for topic, t in
        [("clock", TYPES[0]), ("scan", TYPES[1]), ("imu", TYPES[2]), ("odom", TYPES[3]),
         ("camera/image_raw", TYPES[5])]}

cmd = {"v": 0.0, "w": 0.0, "n": 0}
cond = threading.Condition()


def on_twist(s):
    m = store.deserialize_cdr(s.payload.to_bytes(), "geometry_msgs/msg/Twist")
    with cond:
        cmd["v"], cmd["w"], cmd["n"] = m.linear.x, m.angular.z, cmd["n"] + 1
        cond.notify_all()


session.declare_subscriber(key("cmd_vel", "geometry_msgs/msg/Twist").rsplit("/", 1)[0] + "/*", on_twist)


def put(t, msg):
    seqs[t] = seqs.get(t, 0) + 1
    att = struct.pack("<qqB", seqs[t], time.time_ns(), 16) + GID
    pubs[t].put(bytes(store.serialize_cdr(msg, t)), attachment=att)


def stamp(sim_t):
    # whole nanoseconds first: 3.9999999999999996 s is 4 s, not 3 s and a rounded-away second
    sec, nanosec = divmod(round(sim_t * 1e9), 1_000_000_000)
    return T["builtin_interfaces/msg/Time"](sec=sec, nanosec=nanosec)


def header(sim_t, frame):
    return T["std_msgs/msg/Header"](stamp=stamp(sim_t), frame_id=frame)


def ranges():
    return np.array([min(data.sensor(f"range{i:02d}").data[0] if data.sensor(f"range{i:02d}").data[0] >= 0 else MAX_RANGE,
                         MAX_RANGE) for i in range(RAYS)], dtype=np.float32)


def publish(k, sim_t):
    """The sensors at `sim_t` (burst k's), then the clock: the burst it lets run takes them."""
    if renderer and k % camera_every == 0:
        renderer.update_scene(data, camera="front")
        rgb = renderer.render()
        put(TYPES[5], T["sensor_msgs/msg/Image"](
            header=header(sim_t, "camera"), height=rgb.shape[0], width=rgb.shape[1], encoding="rgb8",
            is_bigendian=0, step=rgb.shape[1] * 3, data=rgb.reshape(-1)))
    r = ranges()
    # from -180 degrees (ray 8) counter-clockwise, as a lidar's scan runs
    put(TYPES[1], T["sensor_msgs/msg/LaserScan"](
        header=header(sim_t, "lidar"), angle_min=-math.pi, angle_max=math.pi * (RAYS - 2) / RAYS,
        angle_increment=2 * math.pi / RAYS, time_increment=0.0, scan_time=1.0 / args.rate, range_min=0.05,
        range_max=MAX_RANGE, ranges=np.roll(r, RAYS // 2), intensities=np.zeros(0, dtype=np.float32)))
    V3, Q = T["geometry_msgs/msg/Vector3"], T["geometry_msgs/msg/Quaternion"]
    q = data.sensor("orientation").data
    g, a = data.sensor("gyro").data, data.sensor("accel").data
    quat = Q(x=q[1], y=q[2], z=q[3], w=q[0])
    put(TYPES[2], T["sensor_msgs/msg/Imu"](
        header=header(sim_t, "imu"), orientation=quat, orientation_covariance=np.zeros(9),
        angular_velocity=V3(x=g[0], y=g[1], z=g[2]), angular_velocity_covariance=np.zeros(9),
        linear_acceleration=V3(x=a[0], y=a[1], z=a[2]), linear_acceleration_covariance=np.zeros(9)))
    p, v = data.qpos[robot_q:robot_q + 3], data.qvel[model.joint("robot").dofadr[0]:][:6]
    pose = T["geometry_msgs/msg/PoseWithCovariance"](
        pose=T["geometry_msgs/msg/Pose"](position=T["geometry_msgs/msg/Point"](x=p[0], y=p[1], z=p[2]),
                                         orientation=Q(x=data.qpos[robot_q + 4], y=data.qpos[robot_q + 5],
                                                       z=data.qpos[robot_q + 6], w=data.qpos[robot_q + 3])),
        covariance=np.zeros(36))
    twist = T["geometry_msgs/msg/TwistWithCovariance"](
        twist=T["geometry_msgs/msg/Twist"](linear=V3(x=v[0], y=v[1], z=v[2]), angular=V3(x=v[3], y=v[4], z=v[5])),
        covariance=np.zeros(36))
    put(TYPES[3], T["nav_msgs/msg/Odometry"](header=header(sim_t, "odom"), child_frame_id="base", pose=pose, twist=twist))
    put(TYPES[0], T["rosgraph_msgs/msg/Clock"](clock=stamp(sim_t)))
    return r


def touching():
    return any((c.geom1 in robot_geoms) != (c.geom2 in robot_geoms) and floor not in (c.geom1, c.geom2)
               for c in data.contact[:data.ncon])


time.sleep(1.0)  # the links up
start, sim_t0 = time.time(), 1.0
late, distance, closest, collisions, was_touching, last_xy = 0, 0.0, MAX_RANGE, 0, False, data.qpos[robot_q:robot_q + 2].copy()
bursts = int(args.duration * args.rate)
trace = open(args.trace, "w") if args.trace else None
for k in range(bursts):
    r = publish(k, sim_t0 + k / args.rate)
    closest = min(closest, float(r.min()))
    # the node publishes one Twist a burst, and clock k lets burst k + 1 run: its Twist is the
    # (k + 1)-th (not a late one of the burst before, which would put the loop a burst behind)
    with cond:
        late += not cond.wait_for(lambda: cmd["n"] >= k + 1, timeout=args.wait)
        v, w = cmd["v"], cmd["w"]
    left, right = (v - w * WHEEL_BASE / 2) / WHEEL_RADIUS, (v + w * WHEEL_BASE / 2) / WHEEL_RADIUS
    data.ctrl[model.actuator("left_wheel").id], data.ctrl[model.actuator("right_wheel").id] = left, right
    for _ in range(steps):
        mujoco.mj_step(model, data)
        now = touching()
        collisions += now and not was_touching
        was_touching = now
    xy = data.qpos[robot_q:robot_q + 2].copy()
    if trace:
        w_, z_ = data.qpos[robot_q + 3], data.qpos[robot_q + 6]
        yaw = math.remainder(2 * math.atan2(z_, w_), 2 * math.pi)
        trace.write(",".join(repr(float(x)) for x in (k / args.rate, xy[0], xy[1], yaw, v, w)) + "\n")
    distance += float(np.linalg.norm(xy - last_xy))
    last_xy = xy
if trace:
    trace.close()
print(json.dumps({"ok": True, "sim_s": args.duration, "wall_s": round(time.time() - start, 2),
                  "distance_m": round(distance, 3), "closest_m": round(closest, 3), "collisions": collisions,
                  "twists": cmd["n"], "bursts": bursts, "late": late,
                  "camera": bool(renderer)}), flush=True)
os._exit(0)
