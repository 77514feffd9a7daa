#!/usr/bin/env bash
# A robot in the loop: the MuJoCo robot of bridge.py driven by a neuroburst node on simulated time
# (Zenoh on 127.0.0.1, no ROS install, no GPU), then what the robot did.
#
#   examples/sim/run.sh                          the avoider, 120 simulated s in the arena
#   examples/sim/run.sh --world examples/sim/room2.xml --pose=-1,0,0.3
#   examples/sim/run.sh --lesson                 examples/conditioning's brain taught live (camera)
#   examples/sim/run.sh --view                   the same in real time, served to Foxglove
#                                                (ws://127.0.0.1:8765, examples/sim/foxglove-layout.json)
#
# Other arguments go to bridge.py (--duration, --backend is not one: set NEUROBURST_BACKEND=cuda).
# Installs MuJoCo, eclipse-zenoh and rosbags from PyPI into target/sim-venv the first time.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
view=() lesson=0 pass=()
for a in "$@"; do
  case $a in
    --view) view=(--view) ;;
    --lesson) lesson=1 ;;
    *) pass+=("$a") ;;
  esac
done

venv=$root/target/sim-venv
stamp=$venv/.ready-mujoco-4.0.0-eclipse-zenoh-1.10.2-rosbags-0.11.9
if [ ! -e "$stamp" ]; then
  echo "run.sh: installing MuJoCo, eclipse-zenoh and rosbags into $venv" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check mujoco==4.0.0 eclipse-zenoh==1.10.2 rosbags==0.11.9
  touch "$stamp"
fi
cargo build --release --quiet --manifest-path "$root/Cargo.toml"

if [ $lesson = 1 ]; then
  genome=$root/examples/conditioning/genome.yaml config=$here/conditioning.yaml
  bridge=(--world "$here/lesson.xml" --lesson --rate 10 --camera-hz 10 --duration 30)
else
  genome=$here/avoider.yaml config=$here/config.yaml
  bridge=(--world "$here/arena.xml" --rate 50 --duration 120)
fi
if [ ${#view[@]} -gt 0 ]; then bridge+=(--pace 1); fi
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
work=$(mktemp -d)
# (errexit holds inside the trap too: a node that has ended must not make it fail)
trap 'kill -INT $node 2>/dev/null || true; wait $node 2>/dev/null || true; rm -rf "$work"' EXIT
(cd "$work" && exec "$root/target/release/neuroburst" node --genome "$genome" --config "$config" \
  --set "zenoh.listen=[tcp/127.0.0.1:$port]" --set checkpoint.on_shutdown=false \
  --set "backend.kind=${NEUROBURST_BACKEND:-cpu}" "${view[@]}" >node.log 2>&1) &
node=$!
for _ in $(seq 600); do
  grep -q "bursting at" "$work/node.log" 2>/dev/null && break
  kill -0 $node 2>/dev/null || { cat "$work/node.log" >&2; exit 1; }
  sleep 0.1
done
if [ ${#view[@]} -gt 0 ]; then
  echo "run.sh: the brain and the robot's pose at ws://127.0.0.1:8765 (Foxglove: Open connection;" \
    "layout examples/sim/foxglove-layout.json); the robot starts in 5 s" >&2
  sleep 5
fi
if ! "$venv/bin/python" "$here/bridge.py" --connect "tcp/127.0.0.1:$port" --wait 5 "${bridge[@]}" "${pass[@]}" >"$work/report.json"; then
  echo "run.sh: the simulation failed (bridge.py, above); the node's log:" >&2
  tail -20 "$work/node.log" >&2
  exit 1
fi
kill -INT $node
status=0
wait $node || status=$?
"$venv/bin/python" - "$work/report.json" <<'PY'
import json, sys
r = json.loads(open(sys.argv[1]).read().splitlines()[-1])
print(f"{r['sim_s']:.0f} simulated s in {r['wall_s']} s of wall time: {r['distance_m']} m covered, closest approach "
      f"{r['closest_m']} m, {r['collisions']} collisions, {r['twists']} Twists for {r['bursts']} bursts")
for t in r.get("trials", []):
    what = "cue + obstacle" if t["obstacle"] else "cue alone"
    print(f"  trial at {t['at']:4.0f} s, {what:14}: the robot backed {t['backed_m']} m")
if r.get("trials") and not r["camera"]:
    print("  (no camera: MuJoCo found no offscreen OpenGL here; Debian: libegl1 libegl-mesa0 libgl1-mesa-dri)")
PY
grep -E "stopped after" "$work/node.log" | sed 's/^.*INFO[^ ]* /node: /' || true
# the run succeeded when the node stopped cleanly on SIGINT and the bridge's report came back
if [ $status -ne 0 ]; then
  echo "run.sh: the node exited with status $status (its log follows)" >&2
  cat "$work/node.log" >&2
  exit $status
fi
