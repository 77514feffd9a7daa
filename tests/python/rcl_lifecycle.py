"""A lifecycle manager and parameter client on a real ROS 2 (rclpy, rcl, Fast DDS) for
tests/ros2_rcl.rs, run inside `unshare -n`: it starts the managed neuroburst node given after
`--` (its genome a file that does not exist), and walks it as a robot's bring-up would:

  configure (fails: the genome), set `genome`, configure, list/describe/get parameters, activate
  (Twists flow while the sensors are fed), set a decoder's limit (the Twists obey it at once),
  switch learning off (backend.learning), set a read-only key (refused, with the reason),
  /parameter_events seen, deactivate (a zero Twist, then none), ~/save_checkpoint, activate again, deactivate, cleanup, shutdown (the node ends).

Prints one JSON object of what it saw; a failed step is {"ok": false, "error": ...}.
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
ap.add_argument("--node-name", default="/brain")
ap.add_argument("--genome", required=True, help="the genome to set once the first configure failed")
ap.add_argument("--outside", required=True, help="a file outside node.parameter_files_dir: genome and checkpoint.path set to it are refused")
ap.add_argument("node", nargs=argparse.REMAINDER)
args = ap.parse_args()
node_cmd = args.node[1:] if args.node[:1] == ["--"] else args.node
subprocess.run(["ip", "link", "set", "lo", "up"], check=False, capture_output=True)

from geometry_msgs.msg import Twist
from lifecycle_msgs.msg import Transition, TransitionEvent
from lifecycle_msgs.srv import ChangeState, GetState
from rcl_interfaces.msg import Parameter, ParameterEvent, ParameterType, ParameterValue
from rcl_interfaces.srv import DescribeParameters, GetParameters, ListParameters, SetParameters
from sensor_msgs.msg import LaserScan
from std_msgs.msg import Header
from std_srvs.srv import Trigger

log = open(os.environ.get("ROBOT_NODE_LOG", "/dev/null"), "w")


def die_with_parent():
    import ctypes
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


proc = subprocess.Popen(node_cmd, stdout=log, stderr=subprocess.STDOUT, preexec_fn=die_with_parent)
rclpy.init()
# no parameter services of its own: with them, rclpy's multi-threaded executor handed this
# client answers of its own node's parameter services (rclpy 7.1.6)
me = rclpy.create_node("lifecycle_manager", start_parameter_services=False)
reliable = QoSProfile(reliability=ReliabilityPolicy.RELIABLE, history=HistoryPolicy.KEEP_LAST, depth=10)
seen = {"twists": [], "events": [], "parameter_events": []}
lock = threading.Lock()
out = {}


def finish(ok, error=None):
    out["ok"] = ok
    if error:
        out["error"] = error
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
    out["node_rc"] = proc.poll()
    print(json.dumps(out))
    sys.stdout.flush()
    os._exit(0)


def check(cond, msg):
    if not cond:
        finish(False, msg)


def on_twist(m):
    with lock:
        seen["twists"].append((time.monotonic(), m.linear.x, m.angular.z))


def on_event(m):
    with lock:
        seen["events"].append([m.transition.label, m.start_state.label, m.goal_state.label])


def on_param_event(m):
    if m.node == args.node_name:
        with lock:
            seen["parameter_events"].append([p.name for p in m.changed_parameters])


me.create_subscription(Twist, "/cmd_vel", on_twist, reliable)
me.create_subscription(TransitionEvent, f"{args.node_name}/transition_event", on_event, reliable)
me.create_subscription(ParameterEvent, "/parameter_events", on_param_event, QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE))
scan_pub = me.create_publisher(LaserScan, "/scan", qos_profile_sensor_data)
feeding = threading.Event()


def feed():
    while True:
        if feeding.is_set():
            m = LaserScan(header=Header(frame_id="laser"), angle_min=-1.57, angle_max=1.57, angle_increment=0.39, range_min=0.05, range_max=2.0)
            m.ranges = [2.0] * 4 + [0.3] * 4
            scan_pub.publish(m)
        time.sleep(0.02)


threading.Thread(target=feed, daemon=True).start()
# every entity made before the executor spins (rclpy does not make them safely while it does)
SERVICES = {"change_state": ChangeState, "get_state": GetState, "list_parameters": ListParameters,
            "describe_parameters": DescribeParameters, "get_parameters": GetParameters,
            "set_parameters": SetParameters, "save_checkpoint": Trigger}
clients = {name: me.create_client(t, f"{args.node_name}/{name}") for name, t in SERVICES.items()}
executor = rclpy.executors.MultiThreadedExecutor()
executor.add_node(me)
threading.Thread(target=executor.spin, daemon=True).start()
for name, c in clients.items():
    check(c.wait_for_service(timeout_sec=30.0), f"{name}: no service")


def call(srv_type, name, request, timeout=30.0):
    future = clients[name].call_async(request)
    end = time.monotonic() + timeout
    while not future.done() and time.monotonic() < end:
        time.sleep(0.01)
    check(future.done(), f"{name}: no answer in {timeout} s")
    return future.result()


def change(tid):
    return call(ChangeState, "change_state", ChangeState.Request(transition=Transition(id=tid))).success


def state():
    return call(GetState, "get_state", GetState.Request()).current_state.label


def value(v):
    return {ParameterType.PARAMETER_DOUBLE: v.double_value, ParameterType.PARAMETER_STRING: v.string_value,
            ParameterType.PARAMETER_INTEGER: v.integer_value, ParameterType.PARAMETER_BOOL: v.bool_value}.get(v.type)


def set_param(name, v):
    if isinstance(v, bool):
        pv = ParameterValue(type=ParameterType.PARAMETER_BOOL, bool_value=v)
    elif isinstance(v, str):
        pv = ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=v)
    else:
        pv = ParameterValue(type=ParameterType.PARAMETER_DOUBLE, double_value=v)
    r = call(SetParameters, "set_parameters", SetParameters.Request(parameters=[Parameter(name=name, value=pv)])).results[0]
    return r.successful, r.reason


def twists_since(t0):
    with lock:
        return [t for t in seen["twists"] if t[0] >= t0]


try:
    check(state() == "unconfigured", f"starts {state()}")
    check(not change(Transition.TRANSITION_CONFIGURE), "configure with a missing genome succeeded")
    check(state() == "unconfigured", f"after a failed configure: {state()}")
    # the parameters that name files, pointed outside node.parameter_files_dir: refused, with the reason
    for key in ["checkpoint.path", "genome"]:
        ok, why = set_param(key, args.outside)
        check(not ok and "outside node.parameter_files_dir" in why, f"set {key} outside the files directory: {ok} {why}")
    out["refused_file"] = why
    ok, why = set_param("genome", args.genome)
    check(ok, f"set genome: {why}")
    check(change(Transition.TRANSITION_CONFIGURE), "configure failed")
    check(state() == "inactive", f"after configure: {state()}")

    names = call(ListParameters, "list_parameters", ListParameters.Request()).result.names
    for n in ["node.rate_hz", "genome", "log.level", "decoders.cmd_vel.linear_x.limit"]:
        check(n in names, f"{n} not listed: {names}")
    out["parameters"] = len(names)
    d = call(DescribeParameters, "describe_parameters", DescribeParameters.Request(names=["node.rate_hz", "decoders.cmd_vel.linear_x.limit"])).descriptors
    check(d[0].type == ParameterType.PARAMETER_DOUBLE and "Bursts per second" in d[0].description and d[0].read_only, f"node.rate_hz described as {d[0]}")
    check(d[0].floating_point_range and d[0].floating_point_range[0].to_value == 100000.0, f"node.rate_hz range {d[0].floating_point_range}")
    check(not d[1].read_only, f"decoders.cmd_vel.linear_x.limit read-only: {d[1]}")
    v = call(GetParameters, "get_parameters", GetParameters.Request(names=["node.rate_hz", "genome"])).values
    check(value(v[0]) == 50.0 and value(v[1]) == os.path.realpath(args.genome), f"get: {[value(x) for x in v]}")

    feeding.set()
    time.sleep(0.5)
    check(not twists_since(0), "Twists while inactive")
    check(change(Transition.TRANSITION_ACTIVATE), "activate failed")
    t0 = time.monotonic()
    time.sleep(1.5)
    active = twists_since(t0)
    check(len(active) > 30 and any(x > 0.1 for _, x, _ in active), f"{len(active)} Twists while active, max linear.x {max([x for _, x, _ in active], default=0)}")
    out["twists_active"] = len(active)

    ok, why = set_param("decoders.cmd_vel.linear_x.limit", 0.05)
    check(ok, f"set the limit: {why}")
    t1 = time.monotonic()
    time.sleep(0.2)
    t2 = time.monotonic()
    time.sleep(1.0)
    limited = twists_since(t2)
    check(limited and all(abs(x) <= 0.05 + 1e-9 for _, x, _ in limited), f"beyond the new limit: {[x for _, x, _ in limited][:10]}")
    first = twists_since(t1)
    out["first_twist_after_set_s"] = round(first[0][0] - t1, 3) if first else None
    ok, why = set_param("backend.learning", False)
    check(ok, f"switch learning off while active: {why}")
    ok, why = set_param("node.rate_hz", 10.0)
    check(not ok and "read at configure" in why, f"set node.rate_hz while active: {ok} {why}")
    out["refused"] = why
    time.sleep(0.3)
    with lock:
        check(["decoders.cmd_vel.linear_x.limit"] in seen["parameter_events"], f"/parameter_events: {seen['parameter_events']}")

    t0 = time.monotonic()
    check(change(Transition.TRANSITION_DEACTIVATE), "deactivate failed")
    time.sleep(0.5)
    late = twists_since(t0)
    check(late and late[-1][1:] == (0.0, 0.0), f"no zero Twist after deactivate: {late[-3:]}")
    t1 = time.monotonic()
    time.sleep(0.7)
    check(not twists_since(t1), f"{len(twists_since(t1))} Twists after deactivate")

    saved = call(Trigger, "save_checkpoint", Trigger.Request())
    check(saved.success and os.path.exists(saved.message), f"save_checkpoint: {saved}")
    out["checkpoint"] = saved.message

    check(change(Transition.TRANSITION_ACTIVATE), "second activate failed")
    t0 = time.monotonic()
    time.sleep(0.7)
    check(len(twists_since(t0)) > 10, "no Twists after the second activate")
    check(change(Transition.TRANSITION_DEACTIVATE), "second deactivate failed")
    check(change(Transition.TRANSITION_CLEANUP), "cleanup failed")
    check(state() == "unconfigured", f"after cleanup: {state()}")
    feeding.clear()
    check(change(Transition.TRANSITION_UNCONFIGURED_SHUTDOWN), "shutdown failed")
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        finish(False, "the node did not end after shutdown")
    with lock:
        out["events"] = seen["events"]
    finish(True)
except Exception as e:  # noqa: BLE001 - any failure is the test's, said in the JSON
    import traceback
    finish(False, f"{type(e).__name__}: {e}\n{traceback.format_exc()}")
