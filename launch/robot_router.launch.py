"""The robot's side of a remote brain: its Zenoh router, reachable from the GPU host.
`ros2 launch neuroburst robot_router.launch.py router_config:=/path/to/robot_router.json5`

Starts `rmw_zenohd` (package rmw_zenoh_cpp) with config/robot_router.json5 (ZENOH_ROUTER_CONFIG_URI).
The robot's nodes run with RMW_IMPLEMENTATION=rmw_zenoh_cpp and connect to it as usual; on the GPU
host: `neuroburst node --genome G.yaml --config config/remote_brain.yaml --zenoh-connect
tcp/<robot>:7447`, or `ros2 launch neuroburst remote_brain.launch.py genome:=G.yaml
robot:=tcp/<robot>:7447` (docs/distributed.md). The shipped router configuration listens on
loopback only: add the robot's address there first.
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, SetEnvironmentVariable
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare


def generate_launch_description():
    share = FindPackageShare("neuroburst")
    return LaunchDescription([
        DeclareLaunchArgument("router_config", default_value=PathJoinSubstitution([share, "config", "robot_router.json5"]),
                              description="Zenoh router configuration (listen endpoints: the robot's address)"),
        SetEnvironmentVariable("ZENOH_ROUTER_CONFIG_URI", LaunchConfiguration("router_config")),
        Node(package="rmw_zenoh_cpp", executable="rmw_zenohd", name="rmw_zenohd", output="screen"),
    ])
