#!/usr/bin/env bash
# The test command (README, .ci/run): installs what the tests need, builds the r2r node in a
# colcon workspace per distro against a real ROS 2 Jazzy and Kilted (PyPI wheels,
# tests/ros2/venv.sh), then runs `cargo test --profile ci` (Cargo.toml's `ci` profile: release
# without LTO, built in half the time). The real-ROS tests (tests/ros2_rcl.rs) find that workspace
# through NEUROBURST_ROS2_ENV. Arguments go to `cargo test` (e.g. `tests/run.sh ros2_rcl::`: one
# file's tests).
set -euo pipefail
# a failure inside $(...) (a workspace that does not build) ends the script too
shopt -s inherit_errexit
cd "$(dirname "$0")/.."
root=$PWD
# Every phase says when it ended (CI's budget: 40 minutes on 2 cores).
phase() { echo "tests/run.sh: [$((SECONDS / 60))m$((SECONDS % 60))s] $*" >&2; }

# System packages: a C compiler (bundled sqlite), python3-venv, EGL (the simulated camera), Vulkan
# (lavapipe: the wgpu backend's tests), and for the r2r node libclang
# (bindgen), cmake (neuroburst_msgs, Cyclone DDS of the bridge) and iproute2 (loopback inside `unshare -n`).
need=()
command -v cc >/dev/null || need+=(gcc g++)
command -v cmake >/dev/null || need+=(cmake)
command -v ip >/dev/null || need+=(iproute2)
# the simulated robot's camera (examples/sim/bridge.py): MuJoCo renders offscreen through EGL (Mesa)
ls /usr/lib/x86_64-linux-gnu/libEGL_mesa.so.0 >/dev/null 2>&1 || need+=(libegl1 libegl-mesa0 libgl1-mesa-dri)
python3 -c 'import ensurepip, venv' 2>/dev/null || need+=(python3-venv)
ls /usr/lib/llvm-*/lib/libclang.so* /usr/lib/x86_64-linux-gnu/libclang*.so* >/dev/null 2>&1 || need+=(libclang-dev)
# the wgpu backend's tests (tests/wgpu.rs): a Vulkan loader and Mesa's lavapipe, a Vulkan device on the CPU
ls /usr/lib/x86_64-linux-gnu/libvulkan.so.1 /usr/share/vulkan/icd.d/lvp_icd.*.json >/dev/null 2>&1 || need+=(libvulkan1 mesa-vulkan-drivers)
if [ ${#need[@]} -gt 0 ]; then
  echo "tests/run.sh: installing ${need[*]} (apt-get)"
  sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
  phase "Debian packages installed"
fi

# ROS 2 from PyPI (tests/ros2/venv.sh), and a colcon workspace per distro: neuroburst_msgs, then
# neuroburst with r2r, in the tests' build profile (`ci`). The workspaces' cargo target is this
# repository's target/ (shared dependencies; r2r and neuroburst are built again for each distro).
# Prints the workspace's env.sh.
workspace() {
  local distro=$1 env_sh ws stamp
  env_sh=$(tests/ros2/venv.sh "$distro")
  ws=$root/target/colcon-$distro
  mkdir -p "$ws/src" "$ws/build"
  touch "$root/target/COLCON_IGNORE"
  ln -sfn "$root" "$ws/src/neuroburst"
  ln -sfn "$root/target" "$ws/build/neuroburst"
  # r2r generates its bindings once per environment (its paths, not the packages in them): when
  # the venv's packages change, its build is done again.
  stamp=$(ls "$(dirname "$env_sh")"/.ready-* 2>/dev/null | head -1)
  if [ -n "$stamp" ] && [ "$(cat "$ws/.venv-stamp" 2>/dev/null)" != "$stamp" ]; then
    rm -rf "$root"/target/ci/build/r2r* "$root"/target/ci/.fingerprint/r2r*
    echo "$stamp" > "$ws/.venv-stamp"
  fi
  (
    . "$env_sh"
    # r2r 0.9.7 (the latest) refuses ROS_DISTRO=kilted by name; its code for Kilted's rcl is its
    # Jazzy code (the distro cfgs it has: Jazzy's and Rolling's paths are one), so it is built so.
    if [ "$distro" = kilted ]; then export ROS_DISTRO=jazzy; fi
    cd "$ws"
    colcon build --base-paths src/neuroburst src/neuroburst/msg --event-handlers console_cohesion- \
      --cargo-args --profile ci --features ros2 >&2
  )
  phase "ROS 2 $distro: venv and colcon workspace built"
  cat > "$ws/env.sh" <<ENV
. "$env_sh"
. "$ws/install/setup.sh"
ENV
  echo "$ws/env.sh"
}
# zenoh-bridge-ros2dds for the DDS-path test: the crates.io plugin (Cyclone DDS, built with cmake)
# in a small binary of the node's Zenoh version (tests/ros2/bridge), unoptimised. It builds beside
# the workspaces (a target of its own), using the core their builds leave idle (pip, cmake, bindgen,
# the last crates' compiles); its log is target/ros2dds-bridge.log.
mkdir -p target
cargo build --profile ci --locked --manifest-path tests/ros2/bridge/Cargo.toml --target-dir "$root/target/ros2dds-bridge" \
  >target/ros2dds-bridge.log 2>&1 &
bridge_build=$!
# FEAGI's own genome code (feagi-evolutionary from crates.io) for the FEAGI 3.0 tests
# (tests/feagi_v3.rs): a small binary, tests/feagi; its log is target/feagi-peer.log.
cargo build --profile ci --locked --manifest-path tests/feagi/Cargo.toml --target-dir "$root/target/feagi-peer" \
  >target/feagi-peer.log 2>&1 &
feagi_build=$!
# Kilted's venv fills (pip: the network and one core) while Jazzy's workspace builds.
tests/ros2/venv.sh kilted >/dev/null &
kilted_venv=$!
jazzy=$(workspace jazzy)
wait "$kilted_venv"
kilted=$(workspace kilted)
export NEUROBURST_ROS2_ENV=$jazzy
wait "$bridge_build" || { tail -30 target/ros2dds-bridge.log >&2; echo "tests/run.sh: zenoh-bridge-ros2dds did not build (target/ros2dds-bridge.log)" >&2; exit 1; }
export NEUROBURST_ROS2DDS_BRIDGE=$root/target/ros2dds-bridge/ci/neuroburst-ros2dds-bridge
phase "zenoh-bridge-ros2dds built"
wait "$feagi_build" || { tail -30 target/feagi-peer.log >&2; echo "tests/run.sh: the FEAGI peer did not build (target/feagi-peer.log)" >&2; exit 1; }
export NEUROBURST_FEAGI_PEER=$root/target/feagi-peer/ci/neuroburst-feagi-peer

log=$root/target/test-output.log
cargo test --profile ci "$@" 2>&1 | tee "$log"
phase "tests run"
# The real-ROS tests again on ROS 2 Kilted (its colcon workspace, r2r, rclpy robots), unless the
# arguments chose other tests.
if [ $# -eq 0 ] || [[ "$*" == *ros2_* ]]; then
  NEUROBURST_ROS2_ENV=$kilted cargo test --profile ci --test integration -- ros2_rcl:: ros2_bridge:: 2>&1 | tee "$log.kilted"
  phase "ROS 2 tests run on Kilted"
fi
# The coverage-guided fuzzers (tests/fuzz/run.sh: each target for FUZZ_SECONDS, 45 by default),
# unless the arguments chose other tests; a crash fails the run and leaves its input in
# tests/fuzz/regressions/.
if [ $# -eq 0 ] || [[ "$*" == *fuzz* ]]; then
  tests/fuzz/run.sh
  phase "fuzz targets run"
fi
# How many tests ran on the real ROS 2 (a skip says so above; CI makes it a failure).
for t in ros2_rcl ros2_bridge; do
  for d in jazzy kilted; do
    f=$log; [ $d = kilted ] && f=$log.kilted
    n=$(grep -c "^test $t::.* \.\.\. ok$" "$f" 2>/dev/null || true)
    if [ "$n" -gt 0 ]; then echo "tests/run.sh: $n tests of tests/$t.rs passed on ROS 2 $d (rcl, Fast DDS, rclpy; $(dirname "${!d}"))"; fi
  done
done
