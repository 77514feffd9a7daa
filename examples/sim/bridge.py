"""A MuJoCo robot for neuroburst: steps a world (--world, the robot of robot.xml included by name)
lock-stepped to the node's bursts on simulated time (the node runs with use_sim_time), over either
of the node's ROS paths (--ros):

  zenoh   Zenoh in the rmw_zenoh format (eclipse-zenoh; --connect the node's endpoint): the node's
          `transport: zenoh`, no ROS install;
  rclpy   a real ROS 2 (rclpy on rcl and Fast DDS, e.g. the Jazzy wheels of tests/ros2/venv.sh):
          the node's `transport: r2r`, in the same ROS domain.

Every burst period of simulated time: /scan (sensor_msgs/LaserScan, 16 rays), /imu
(sensor_msgs/Imu) and /odom (nav_msgs/Odometry) out, and at --camera-hz /camera/image_raw
(sensor_msgs/Image, rgb8, the robot's "front" camera) where offscreen rendering works (EGL:
MUJOCO_GL=egl, Debian's libegl1 and libgl1-mesa-dri), then /clock; then it waits for the node's
/cmd_vel (geometry_msgs/Twist) of that burst (or --wait seconds of wall time) and drives the
wheels. The messages are serialized once (rosbags' CDR) and go out as they are on both paths.

With --lesson (in lesson.xml) it teaches examples/conditioning's brain: one-second trials of a
light on the left (the cue) alone, then together with an obstacle ahead six times, then alone
again; the robot is put back at its start before each trial.

At the end it prints one JSON line: simulated seconds, wall seconds, distance covered, the
closest approach of any ray to an obstacle, collisions (contacts of the robot with anything but
the floor), Twists received, those that came late, and with --lesson how far the robot backed in
each trial.
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
from rosbags.typesys import Stores, get_typestore

HERE = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser()
ap.add_argument("--world", default=os.path.join(HERE, "arena.xml"))
ap.add_argument("--ros", choices=["zenoh", "rclpy"], default="zenoh", help="the ROS path to the node")
ap.add_argument("--connect", help="(zenoh) the node's Zenoh endpoint, e.g. tcp/127.0.0.1:7447")
ap.add_argument("--startup", type=float, default=60.0, help="(rclpy) wall seconds to wait for the node to appear")
ap.add_argument("--rate", type=float, default=50.0, help="the node's node.rate_hz: one burst per period")
ap.add_argument("--duration", type=float, default=120.0, help="simulated seconds")
ap.add_argument("--wait", type=float, default=1.0, help="wall seconds to wait for a burst's Twist")
ap.add_argument("--pose", default="0,0,0", help="the robot's start: x,y,yaw (m, m, rad)")
ap.add_argument("--trace", help="write the robot's path here: one line per burst, t x y yaw v w (CSV, full precision)")
ap.add_argument("--camera-hz", type=float, default=0.0, help="camera frames per simulated second (0: none; a frame costs tens of ms where OpenGL is software)")
ap.add_argument("--camera-size", default="64x48", help="camera frame width x height")
ap.add_argument("--pace", type=float, default=0.0,
                help="simulated seconds per wall second (1: real time, to watch it; 0: as fast as the brain allows)")
ap.add_argument("--lesson", action="store_true",
                help="the conditioning lesson in lesson.xml: trials of one simulated second (LESSON), the robot put back "
                     "at its start before each; the report says how far it backed in each")
args = ap.parse_args()
if args.ros == "zenoh" and not args.connect:
    ap.error("--ros zenoh needs --connect ENDPOINT (the node's zenoh.listen)")
if args.camera_hz > 0:
    import ctypes.util
    if ctypes.util.find_library("EGL"):
        os.environ.setdefault("MUJOCO_GL", "egl")  # read when mujoco is imported
    else:
        print("bridge.py: no libEGL here (Debian: libegl1 libegl-mesa0 libgl1-mesa-dri): no camera", file=sys.stderr, flush=True)
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

cmd = {"v": 0.0, "w": 0.0, "n": 0}
cond = threading.Condition()
TOPICS = [("clock", TYPES[0]), ("scan", TYPES[1]), ("imu", TYPES[2]), ("odom", TYPES[3]), ("camera/image_raw", TYPES[5])]


def on_twist(cdr):
    m = store.deserialize_cdr(cdr, "geometry_msgs/msg/Twist")
    with cond:
        cmd["v"], cmd["w"], cmd["n"] = m.linear.x, m.angular.z, cmd["n"] + 1
        cond.notify_all()


class ZenohLink:
    """rmw_zenoh's keys (domain 0) and attachments (sequence number, time, writer gid)."""

    def __init__(self):
        import zenoh
        conf = zenoh.Config()
        conf.insert_json5("mode", '"peer"')
        conf.insert_json5("scouting/multicast/enabled", "false")
        conf.insert_json5("connect/endpoints", json.dumps([args.connect]))
        conf.insert_json5("listen/endpoints", "[]")
        self.session = zenoh.open(conf)
        self.gid, self.seqs = os.urandom(16), {}
        self.pubs = {t: self.session.declare_publisher(key(topic, t)) for topic, t in TOPICS}
        twist = key("cmd_vel", "geometry_msgs/msg/Twist").rsplit("/", 1)[0] + "/*"
        self.session.declare_subscriber(twist, lambda s: on_twist(s.payload.to_bytes()))

    def up(self):
        time.sleep(1.0)  # the link up

    def put(self, t, cdr):
        self.seqs[t] = self.seqs.get(t, 0) + 1
        att = struct.pack("<qqB", self.seqs[t], time.time_ns(), 16) + self.gid
        self.pubs[t].put(cdr, attachment=att)


class RclpyLink:
    """A real ROS 2 node, "mujoco_bridge": reliable publishers (depth 10), serialized messages."""

    def __init__(self):
        import importlib
        import rclpy
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
        rclpy.init()
        self.node = rclpy.create_node("mujoco_bridge")
        qos = QoSProfile(reliability=ReliabilityPolicy.RELIABLE, history=HistoryPolicy.KEEP_LAST, depth=10)

        def cls(t):
            pkg, _, name = t.split("/")
            return getattr(importlib.import_module(f"{pkg}.msg"), name)
        self.pubs = {t: self.node.create_publisher(cls(t), "/" + topic, qos) for topic, t in TOPICS}
        self.sub = self.node.create_subscription(cls("geometry_msgs/msg/Twist"), "/cmd_vel", on_twist,
                                                 QoSProfile(reliability=ReliabilityPolicy.RELIABLE,
                                                            history=HistoryPolicy.KEEP_LAST, depth=100), raw=True)
        executor = SingleThreadedExecutor()
        executor.add_node(self.node)
        threading.Thread(target=executor.spin, daemon=True).start()

    def up(self):
        """The node is up when it subscribes to /scan and /clock and publishes /cmd_vel."""
        give_up = time.time() + args.startup
        while time.time() < give_up:
            scan, clock = self.pubs[TYPES[1]], self.pubs[TYPES[0]]
            if scan.get_subscription_count() and clock.get_subscription_count() and self.sub.get_publisher_count():
                time.sleep(0.5)  # the matches settle on both sides
                return
            time.sleep(0.1)
        sys.exit(f"bridge.py: no node subscribing to /scan and /clock and publishing /cmd_vel within {args.startup} s")

    def put(self, t, cdr):
        self.pubs[t].publish(cdr)


link = RclpyLink() if args.ros == "rclpy" else ZenohLink()


def put(t, msg):
    link.put(t, bytes(store.serialize_cdr(msg, t)))


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


# The lesson (examples/conditioning's protocol, live): (start s, cue, obstacle), one-second trials:
# the cue alone (before learning), six pairings, the cue alone twice (after).
LESSON = [(1.0, True, False)] + [(4.0 + 3 * k, True, True) for k in range(6)] + [(23.0, True, False), (26.0, True, False)]
start_qpos, trials = data.qpos.copy(), []


def teach(s):
    """Burst time `s` of the lesson: light and obstacle as its trial says; a trial starts with the
    robot put back at its start, standing."""
    cue, obstacle = False, False
    for at, c, o in LESSON:
        if at <= s + 1e-9 < at + 1.0:
            cue, obstacle = c, o
            if abs(s - at) < 1e-9:
                data.qpos[:], data.qvel[:] = start_qpos, 0
                trials.append({"at": at, "cue": c, "obstacle": o, "x0": float(data.qpos[robot_q]), "backed_m": 0.0})
    model.geom_rgba[model.geom("light").id] = (1, 1, 1, 1) if cue else (.05, .05, .05, 1)
    data.mocap_pos[model.body("obstacle").mocapid[0]][2] = 0.06 if obstacle else -1.0
    mujoco.mj_forward(model, data)
    return cue or obstacle


def touching():
    return any((c.geom1 in robot_geoms) != (c.geom2 in robot_geoms) and floor not in (c.geom1, c.geom2)
               for c in data.contact[:data.ncon])


link.up()
start, sim_t0 = time.time(), 1.0
late, distance, closest, collisions, was_touching, last_xy = 0, 0.0, MAX_RANGE, 0, False, data.qpos[robot_q:robot_q + 2].copy()
bursts = int(args.duration * args.rate)
trace = open(args.trace, "w") if args.trace else None
for k in range(bursts):
    in_trial = args.lesson and teach(k / args.rate)
    if args.lesson:
        last_xy = data.qpos[robot_q:robot_q + 2].copy()  # put back: not a distance covered
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
    if in_trial:
        trials[-1]["backed_m"] = round(max(trials[-1]["backed_m"], trials[-1]["x0"] - float(xy[0])), 3)
    distance += float(np.linalg.norm(xy - last_xy))
    last_xy = xy
    if args.pace > 0:
        time.sleep(max(0.0, start + (k + 1) / args.rate / args.pace - time.time()))
if trace:
    trace.close()
print(json.dumps({"ok": True, "sim_s": args.duration, "wall_s": round(time.time() - start, 2),
                  "distance_m": round(distance, 3), "closest_m": round(closest, 3), "collisions": collisions,
                  "twists": cmd["n"], "bursts": bursts, "late": late,
                  "camera": bool(renderer), **({"trials": trials} if args.lesson else {})}), flush=True)
os._exit(0)
