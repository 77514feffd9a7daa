"""An rmw_zenoh service client played by an independent Zenoh peer (PyPI eclipse-zenoh) with
independent CDR code (PyPI rosbags), for tests/node_services.rs: the node's lifecycle walk, a
parameter get and set, and ~/save_checkpoint, each a query on rmw_zenoh's service key
`<domain>/<service>/<pkg>::srv::dds_::<Type>_/<RIHS01>` with the 33-byte attachment (sequence
number, time, client GID); the reply must carry the same sequence number and GID back.
Prints one JSON summary line on stdout; exits non-zero with the reason on failure.
"""

import argparse
import json
import os
import struct
import sys
import threading
import time

import zenoh
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

# The service types' hashes as ROS 2 Jazzy ships them (share/<pkg>/srv/<Type>.json).
SERVICES = {
    "lifecycle_msgs/srv/ChangeState": "RIHS01_356fe34f0475a43acf54542013af4167b0e729f77ea22ffb045c6ad8e20668e5",
    "lifecycle_msgs/srv/GetState": "RIHS01_800a0a5aae599782b02932de0caf563f6dc4e7e94b794eadde075ba2cbef9795",
    "lifecycle_msgs/srv/GetAvailableTransitions": "RIHS01_59b7ecefce0982a8a844b9f2c4f14764c1c4543cc55e72924e2aa4adad83e9bc",
    "rcl_interfaces/srv/GetParameters": "RIHS01_bf9803d5c74cf989a5de3e0c2e99444599a627c7ff75f97b8c05b01003675cbc",
    "rcl_interfaces/srv/SetParameters": "RIHS01_56eed9a67e169f9cb6c1f987bc88f868c14a8fc9f743a263bc734c154015d7e0",
    "std_srvs/srv/Trigger": "RIHS01_eeff2cd6fa5ad9d27cdf4dec64818317839b62f212a91e6b5304b634b2062c5f",
}
# The request and response messages (.srv halves), registered with rosbags.
SRV = {
    "lifecycle_msgs/srv/ChangeState": ("lifecycle_msgs/Transition transition", "bool success"),
    "lifecycle_msgs/srv/GetState": ("", "lifecycle_msgs/State current_state"),
    "lifecycle_msgs/srv/GetAvailableTransitions": ("", "lifecycle_msgs/TransitionDescription[] available_transitions"),
    "rcl_interfaces/srv/GetParameters": ("string[] names", "rcl_interfaces/ParameterValue[] values"),
    "rcl_interfaces/srv/SetParameters": ("rcl_interfaces/Parameter[] parameters", "rcl_interfaces/SetParametersResult[] results"),
    "std_srvs/srv/Trigger": ("", "bool success\nstring message"),
}
TWIST = "RIHS01_9c45bf16fe0983d80e3cfe750d6835843d265a9a6c46bd2e609fcddde6fb8d2a"
SCAN = "RIHS01_64c191398013af96509d518dac71d5164f9382553fce5c1f8cca5be7924bd828"

ap = argparse.ArgumentParser()
ap.add_argument("--connect", required=True)
ap.add_argument("--node", default="neuroburst")
ap.add_argument("--checkpoint", required=True, help="where the node writes its checkpoint")
ap.add_argument("--format", choices=["rmw", "ros2dds"], default="rmw",
                help="ros2dds: what zenoh-bridge-ros2dds sends for a DDS client (plain keys, plain CDR)")
args = ap.parse_args()

store = get_typestore(Stores.ROS2_JAZZY)
def msg_name(srv_type, half):
    """rosbags names every type pkg/msg/Name: the service's halves under those names."""
    return srv_type.replace("/srv/", "/msg/") + "_" + half


for srv, (req, resp) in SRV.items():
    # an empty message is one uint8 on the wire, as rosidl makes it
    store.register(get_types_from_msg(req or "uint8 structure_needs_at_least_one_member", msg_name(srv, "Request")))
    store.register(get_types_from_msg(resp, msg_name(srv, "Response")))
T = store.types


def fail(msg):
    print(json.dumps({"ok": False, "error": msg}))
    sys.stdout.flush()
    os._exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


conf = zenoh.Config()
conf.insert_json5("mode", '"peer"')
conf.insert_json5("scouting/multicast/enabled", "false")
conf.insert_json5("connect/endpoints", json.dumps([args.connect]))
session = zenoh.open(conf)
GID = bytes(range(1, 17))
seq = [0]


def dds(t):
    pkg, kind, name = t.split("/")
    return f"{pkg}::{kind}::dds_::{name}_"


def call(service, srv_type, **fields):
    """One call: the reply's CDR decoded, its attachment checked."""
    seq[0] += 1
    name = msg_name(srv_type, "Request")
    req = T[name](**fields) if fields else T[name](structure_needs_at_least_one_member=0)
    payload = bytes(store.serialize_cdr(req, name))
    if args.format == "ros2dds":
        # the bridge's query: the plain service name, the request's client GUID and sequence
        # number as its own 16-byte attachment, which the reply need not carry
        att = GID[:8] + struct.pack("<q", seq[0])
        replies = list(session.get(f"{args.node}/{service}", payload=payload, attachment=att, timeout=30.0))
    else:
        att = struct.pack("<qq", seq[0], time.time_ns()) + bytes([16]) + GID
        key = f"0/{args.node}/{service}/{dds(srv_type)}/{SERVICES[srv_type]}"
        replies = list(session.get(key, payload=payload, attachment=att, timeout=30.0))
    check(len(replies) == 1, f"{service}: {len(replies)} replies")
    r = replies[0]
    check(r.ok is not None, f"{service}: an error reply: {r.err}")
    if args.format == "ros2dds":
        return store.deserialize_cdr(r.ok.payload.to_bytes(), msg_name(srv_type, "Response"))
    a = r.ok.attachment.to_bytes() if r.ok.attachment is not None else b""
    check(len(a) == 33, f"{service}: reply attachment of {len(a)} bytes")
    got_seq, _ = struct.unpack("<qq", a[:16])
    check(got_seq == seq[0] and a[16] == 16 and a[17:] == GID, f"{service}: the reply's attachment is not ours: {a.hex()}")
    return store.deserialize_cdr(r.ok.payload.to_bytes(), msg_name(srv_type, "Response"))


def state():
    return call("get_state", "lifecycle_msgs/srv/GetState").current_state.label


def change(tid, label):
    return call("change_state", "lifecycle_msgs/srv/ChangeState", transition=T["lifecycle_msgs/msg/Transition"](id=tid, label=label)).success


def main():
    # the service's liveliness token: rmw_zenoh's graph sees a service server of the right type
    if args.format == "rmw":
        tokens = [str(t.ok.key_expr) for t in session.liveliness().get("@ros2_lv/0/**", timeout=5.0) if t.ok is not None]
        want = f"/SS/%/%/{args.node}/%{args.node}%change_state/lifecycle_msgs::srv::dds_::ChangeState_/{SERVICES['lifecycle_msgs/srv/ChangeState']}/"
        check(any(want in t for t in tokens), f"no service token like {want} in {tokens}")

    twists = []
    lock = threading.Lock()


    def on_twist(s):
        v = store.deserialize_cdr(s.payload.to_bytes(), "geometry_msgs/msg/Twist")
        with lock:
            twists.append((time.monotonic(), v.linear.x, v.angular.z))


    rmw = args.format == "rmw"
    session.declare_subscriber(f"0/cmd_vel/{dds('geometry_msgs/msg/Twist')}/{TWIST}" if rmw else "cmd_vel", on_twist)
    scan_pub = session.declare_publisher(f"0/scan/{dds('sensor_msgs/msg/LaserScan')}/{SCAN}" if rmw else "scan")
    stop_scans = threading.Event()


    def scans():
        Header, Time, Scan = T["std_msgs/msg/Header"], T["builtin_interfaces/msg/Time"], T["sensor_msgs/msg/LaserScan"]
        import numpy as np
        n = 0
        while not stop_scans.is_set():
            n += 1
            # an obstacle close on the left half: the rover turns and drives
            ranges = np.array([2.0] * 4 + [0.3] * 4, dtype=np.float32)
            m = Scan(header=Header(stamp=Time(sec=0, nanosec=0), frame_id="laser"), angle_min=-1.57, angle_max=1.57, angle_increment=0.39,
                     time_increment=0.0, scan_time=0.0, range_min=0.05, range_max=2.0, ranges=ranges, intensities=np.array([], dtype=np.float32))
            att = struct.pack("<qq", n, time.time_ns()) + bytes([16]) + bytes(range(16, 32))
            scan_pub.put(bytes(store.serialize_cdr(m, "sensor_msgs/msg/LaserScan")), attachment=att if rmw else None)
            time.sleep(0.01)


    def twists_since(t0):
        with lock:
            return [t for t in twists if t[0] >= t0]


    summary = {}
    check(state() == "unconfigured", f"starts {state()}, not unconfigured")
    check(not change(3, ""), "activate from unconfigured succeeded")
    t0 = time.monotonic()
    check(change(1, "configure"), "configure failed")
    summary["configure_s"] = round(time.monotonic() - t0, 3)
    check(state() == "inactive", f"after configure: {state()}")
    labels = [d.transition.label for d in call("get_available_transitions", "lifecycle_msgs/srv/GetAvailableTransitions").available_transitions]
    check(sorted(labels) == ["activate", "cleanup", "shutdown"], f"inactive offers {labels}")
    threading.Thread(target=scans, daemon=True).start()
    time.sleep(0.5)
    check(not twists_since(0), f"{len(twists)} Twists while inactive")
    check(change(3, "activate"), "activate failed")
    t0 = time.monotonic()
    time.sleep(1.0)
    flowing = twists_since(t0)
    check(len(flowing) > 20, f"{len(flowing)} Twists in 1 s of activity")
    check(any(abs(x) > 0 or abs(z) > 0 for _, x, z in flowing), "only zero Twists while active")
    summary["twists_active"] = len(flowing)

    # a parameter: get, and a set that takes effect at the next burst
    v = call("get_parameters", "rcl_interfaces/srv/GetParameters", names=["decoders.cmd_vel.linear_x.limit", "node.rate_hz"]).values
    check(v[0].type == 3 and abs(v[0].double_value - 0.5) < 1e-9, f"decoders.cmd_vel.linear_x.limit = {v[0]}")
    PV, P = T["rcl_interfaces/msg/ParameterValue"], T["rcl_interfaces/msg/Parameter"]
    import numpy as np
    empty = dict(bool_value=False, integer_value=0, string_value="", byte_array_value=np.array([], dtype=np.uint8),
                 bool_array_value=np.array([], dtype=np.bool_), integer_array_value=np.array([], dtype=np.int64),
                 double_array_value=np.array([], dtype=np.float64), string_array_value=[])
    def double(name, x):
        return P(name=name, value=PV(type=3, double_value=x, **empty))
    r = call("set_parameters", "rcl_interfaces/srv/SetParameters", parameters=[double("decoders.cmd_vel.linear_x.limit", 0.05), double("node.rate_hz", 5.0)]).results
    check(r[0].successful and not r[1].successful and "read at configure" in r[1].reason, f"set answers {r}")
    time.sleep(0.3)
    t0 = time.monotonic()
    time.sleep(0.5)
    after = twists_since(t0)
    check(after and all(abs(x) <= 0.05 + 1e-9 for _, x, _ in after), f"linear.x beyond the new limit 0.05: {[x for _, x, _ in after][:10]}")
    summary["limited"] = len(after)

    t0 = time.monotonic()
    check(change(4, "deactivate"), "deactivate failed")
    time.sleep(0.5)
    late = twists_since(t0)
    check(late and late[-1][1:] == (0.0, 0.0), f"no zero Twist after deactivate: {late[-3:]}")
    t1 = time.monotonic()
    time.sleep(0.5)
    check(not twists_since(t1), f"{len(twists_since(t1))} Twists after deactivate")
    check(state() == "inactive", f"after deactivate: {state()}")

    saved = call("save_checkpoint", "std_srvs/srv/Trigger")
    check(saved.success and os.path.exists(saved.message), f"save_checkpoint: {saved}")
    check(os.path.abspath(saved.message) == os.path.abspath(args.checkpoint), f"saved to {saved.message}")
    summary["checkpoint"] = saved.message

    check(change(3, "activate"), "second activate failed")
    t0 = time.monotonic()
    time.sleep(0.5)
    check(len(twists_since(t0)) > 10, "no Twists after the second activate")
    check(change(4, "deactivate") and change(2, "cleanup"), "deactivate and cleanup failed")
    check(state() == "unconfigured", f"after cleanup: {state()}")
    refused = call("save_checkpoint", "std_srvs/srv/Trigger")
    check(not refused.success and "unconfigured" in refused.message, f"save while unconfigured: {refused}")
    stop_scans.set()
    check(change(5, "shutdown"), "shutdown failed")
    summary["ok"] = True
    print(json.dumps(summary))
    sys.stdout.flush()
    os._exit(0)


try:
    main()
except Exception as e:  # noqa: BLE001 - any failure is the test's failure, said on stdout
    import traceback
    traceback.print_exc()
    fail(f"{type(e).__name__}: {e}")
