"""A robot on a real ROS 2 (rclpy, rcl, Fast DDS) for tests/ros2_rcl.rs, run inside `unshare -n`.

It brings up loopback (DDS discovers by unicast on 127.0.0.1: ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST), starts the neuroburst node given after
`--`, and plays one scenario against it, then prints one JSON object of what it saw:

  robot     sensors (LaserScan, Imu, PointCloud2 best effort; Image, JointState reliable) for
            --feed s, silence for --silent s, sensors again for --feed s, then the node gets
            --signal while it is fed; cmd_vel, /diagnostics and the stats topic are recorded.
  simtime   as robot's first phase, with /clock published at --clock-speed x real time.
  domain    sensors for --feed s; only what arrives is recorded (ROS_DOMAIN_ID set by the caller).
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import rclpy
from rclpy.qos import QoSProfile, ReliabilityPolicy, HistoryPolicy, qos_profile_sensor_data

ap = argparse.ArgumentParser()
ap.add_argument("--scenario", choices=["robot", "simtime", "domain"], required=True)
ap.add_argument("--ns", default="/robot1")
ap.add_argument("--cmd-vel", default="/robot1/cmd_vel")
ap.add_argument("--stats", default="")
ap.add_argument("--feed", type=float, default=2.0)
ap.add_argument("--silent", type=float, default=1.2)
ap.add_argument("--signal", default="SIGINT")
ap.add_argument("--clock-speed", type=float, default=10.0)
ap.add_argument("--startup", type=float, default=20.0)
ap.add_argument("--before", default="", help="a command started first (the DDS bridge), stopped last")
ap.add_argument("node", nargs=argparse.REMAINDER)
args = ap.parse_args()
node_cmd = args.node[1:] if args.node[:1] == ["--"] else args.node

# Loopback only, unicast only: the namespace's lo, and DDS discovery on 127.0.0.1
# (ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST, set by tests/common/rcl.rs for every process here).
subprocess.run(["ip", "link", "set", "lo", "up"], check=False, capture_output=True)

from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import Twist
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import Image, Imu, JointState, LaserScan, PointCloud2, PointField
from std_msgs.msg import Header

log = open(os.environ.get("ROBOT_NODE_LOG", "/dev/null"), "w")


def die_with_parent():
    """The node gets SIGKILL if this robot dies, whatever kills it."""
    import ctypes
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


before = None
if args.before:
    import shlex
    before_log = open(os.environ.get("ROBOT_BEFORE_LOG", "/dev/null"), "w")
    before = subprocess.Popen(shlex.split(args.before), stdout=before_log, stderr=subprocess.STDOUT, preexec_fn=die_with_parent)
    time.sleep(1.0)
proc = subprocess.Popen(node_cmd, stdout=log, stderr=subprocess.STDOUT, preexec_fn=die_with_parent)

rclpy.init()
robot = rclpy.create_node("test_robot", namespace=args.ns)
reliable = QoSProfile(reliability=ReliabilityPolicy.RELIABLE, history=HistoryPolicy.KEEP_LAST, depth=10)
t0 = time.monotonic()
now = lambda: time.monotonic() - t0
seen = {"twists": [], "diagnostics": [], "stats": [], "sensor_times": []}
lock = threading.Lock()


def on_twist(m):
    with lock:
        seen["twists"].append([now(), m.linear.x, m.angular.z])


def on_diag(m):
    with lock:
        for s in m.status:
            if s.name.startswith("neuroburst: "):
                seen["diagnostics"].append({
                    "t": now(), "stamp": m.header.stamp.sec + m.header.stamp.nanosec * 1e-9, "name": s.name,
                    "level": int.from_bytes(s.level, "little") if isinstance(s.level, bytes) else int(s.level),
                    "message": s.message, "hardware_id": s.hardware_id, "values": {v.key: v.value for v in s.values}})


robot.create_subscription(Twist, args.cmd_vel, on_twist, reliable)
robot.create_subscription(DiagnosticArray, "/diagnostics", on_diag, reliable)
if args.stats:
    from neuroburst_msgs.msg import BurstStats

    def on_stats(m):
        with lock:
            seen["stats"].append({"burst": m.burst, "bursts": m.bursts, "area_ids": list(m.area_ids)})
    robot.create_subscription(BurstStats, args.stats, on_stats, reliable)

scan = robot.create_publisher(LaserScan, "scan", qos_profile_sensor_data)
imu = robot.create_publisher(Imu, "imu", qos_profile_sensor_data)
points = robot.create_publisher(PointCloud2, "points", qos_profile_sensor_data)
camera = robot.create_publisher(Image, "camera/image_raw", reliable)
joints = robot.create_publisher(JointState, "joint_states", reliable)
clock = robot.create_publisher(Clock, "/clock", reliable)

spinning = True


def spin():
    while spinning:
        rclpy.spin_once(robot, timeout_sec=0.01)


spinner = threading.Thread(target=spin, daemon=True)
spinner.start()


def stamp():
    return robot.get_clock().now().to_msg()


def feed():
    """One message on every sensor topic: an obstacle near, a bright image, a turn, two joints, a point."""
    h = Header(stamp=stamp(), frame_id="base_link")
    scan.publish(LaserScan(header=h, angle_min=-1.0, angle_max=1.0, angle_increment=0.5, range_min=0.1,
                           range_max=5.0, ranges=[0.3, 0.3, 0.3, 0.3]))
    camera.publish(Image(header=h, height=2, width=2, encoding="mono8", step=2, data=[255] * 4))
    m = Imu(header=h)
    m.angular_velocity.z = 0.8
    imu.publish(m)
    joints.publish(JointState(header=h, name=["a", "b"], position=[0.5, -0.5]))
    fields = [PointField(name=n, offset=4 * i, datatype=PointField.FLOAT32, count=1) for i, n in enumerate("xyz")]
    data = np.array([[1.0, 0.2, 0.1]], dtype=np.float32).tobytes()
    points.publish(PointCloud2(header=h, height=1, width=1, fields=fields, is_bigendian=False, point_step=12,
                               row_step=12, data=data, is_dense=True))
    with lock:
        seen["sensor_times"].append(now())


def wait_for_node():
    """Until the node's first cmd_vel (or the start-up time is up)."""
    deadline = now() + args.startup
    while now() < deadline and proc.poll() is None:
        with lock:
            if seen["twists"]:
                return True
        time.sleep(0.05)
    return False


def feed_for(seconds, rate=50.0):
    end = now() + seconds
    while now() < end:
        feed()
        time.sleep(1.0 / rate)


result = {"scenario": args.scenario}
if args.scenario == "simtime":
    sim = [1000.0]

    def tick():
        while spinning:
            sim[0] += 0.01 * args.clock_speed
            sec = int(sim[0])
            clock.publish(Clock(clock=Time(sec=sec, nanosec=int((sim[0] - sec) * 1e9))))
            time.sleep(0.01)
    threading.Thread(target=tick, daemon=True).start()
    result["started"] = wait_for_node()
    with lock:
        seen["twists"].clear()
        seen["diagnostics"].clear()
    start_sim, start = sim[0], now()
    feed_for(args.feed)
    result["wall_s"] = now() - start
    result["sim_s"] = sim[0] - start_sim
    result["sim_end"] = sim[0]
    proc.send_signal(signal.SIGINT)
elif args.scenario == "domain":
    feed_for(args.feed)
    proc.send_signal(signal.SIGINT)
else:
    result["started"] = wait_for_node()
    feed_for(args.feed)
    result["graph"] = [f"{ns.rstrip('/')}/{n}" for n, ns in robot.get_node_names_and_namespaces()]
    with lock:
        result["fed_until"] = seen["sensor_times"][-1]
    time.sleep(args.silent)
    result["silent_until"] = now()
    feed_for(args.feed)
    result["signal_at"] = now()
    proc.send_signal(getattr(signal, args.signal))
    feed_for(1.0)
try:
    result["node_rc"] = proc.wait(timeout=15)
except subprocess.TimeoutExpired:
    proc.kill()
    result["node_rc"] = "killed after 15 s"
time.sleep(0.5)
if before is not None:
    before.terminate()
    before.wait(timeout=10)
spinning = False
spinner.join()
with lock:
    result.update(seen)
print(json.dumps(result))
rclpy.shutdown()
