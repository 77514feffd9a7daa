"""Validate launch files without ROS: run each generate_launch_description() against the stub
`launch`/`launch_ros` modules, resolve every substitution, and build the command line that
launch_ros would run (executable, arguments, then --ros-args with the node name, namespace,
params files and remappings, as launch_ros appends them). Prints one JSON object per launch file
with that command; the Rust test runs it with `--check`.

usage: check_launch.py SHARE_DIR LIB_DIR LAUNCH_FILE... [-- name:=value ...]
"""

import importlib.util
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "launch_stubs"))

from launch import LaunchDescription  # noqa: E402
from launch.actions import DeclareLaunchArgument  # noqa: E402
from launch_ros.actions import Node  # noqa: E402

argv = sys.argv[1:]
given = {}
if "--" in argv:
    i = argv.index("--")
    given = dict(a.split(":=", 1) for a in argv[i + 1:])
    argv = argv[:i]
share_dir, lib_dir, files = argv[0], argv[1], argv[2:]


class Context:
    def __init__(self, args):
        self.args = args

    def share(self, package):
        path = os.path.join(share_dir, package) if os.path.isdir(os.path.join(share_dir, package)) else share_dir
        return path

    def resolve(self, v):
        if isinstance(v, str):
            return v
        if isinstance(v, (list, tuple)):
            return "".join(self.resolve(x) for x in v)
        return v.perform(self)


for f in files:
    spec = importlib.util.spec_from_file_location("launch_file", f)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    ld = mod.generate_launch_description()
    assert isinstance(ld, LaunchDescription), f"{f}: generate_launch_description() returned {ld!r}"
    declared = [e for e in ld.entities if isinstance(e, DeclareLaunchArgument)]
    nodes = [e for e in ld.entities if isinstance(e, Node)]
    assert nodes, f"{f}: no Node"
    args = {}
    for d in declared:
        if d.name in given:
            args[d.name] = given[d.name]
        elif d.default_value is not None:
            args[d.name] = d.default_value
        else:
            raise SystemExit(f"{f}: launch argument {d.name!r} has no default; give it after --")
    unknown = set(given) - {d.name for d in declared}
    assert not unknown, f"{f}: {unknown} are not launch arguments"
    ctx = Context(args)
    for n in nodes:
        assert n.package == "neuroburst", f"{f}: package {n.package}"
        exe = os.path.join(lib_dir, n.executable)
        assert os.access(exe, os.X_OK), f"{f}: executable {exe} missing"
        cmd = [exe] + [ctx.resolve(a) for a in n.arguments] + ["--ros-args"]
        if n.name:
            cmd += ["-r", f"__node:={ctx.resolve(n.name)}"]
        ns = ctx.resolve(n.namespace) if n.namespace is not None else ""
        if ns:
            cmd += ["-r", f"__ns:={ns if ns.startswith('/') else '/' + ns}"]
        for p in n.parameters:
            path = ctx.resolve(p)
            assert os.path.isfile(path), f"{f}: parameters file {path} missing"
            cmd += ["--params-file", path]
        for a, b in n.remappings:
            cmd += ["-r", f"{ctx.resolve(a)}:={ctx.resolve(b)}"]
        print(json.dumps({"launch": os.path.basename(f), "cmd": cmd}))
