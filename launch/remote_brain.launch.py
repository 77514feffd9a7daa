"""The brain on another computer (a GPU workstation), a Zenoh client of the robot's router:
`ros2 launch neuroburst remote_brain.launch.py genome:=G.yaml robot:=tcp/<robot address>:7447`.

On the robot: `ros2 run rmw_zenoh_cpp rmw_zenohd` (its router listens on tcp/[::]:7447). Here no
ROS 2 needs to run: neuroburst speaks rmw_zenoh itself (keys, attachments, liveliness tokens), so
`ros2 node list` on the robot shows it. The default endpoint stays on this machine.
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare


def generate_launch_description():
    share = FindPackageShare("neuroburst")
    arg = LaunchConfiguration
    return LaunchDescription([
        DeclareLaunchArgument("genome", description="genome file (neuroburst YAML or FEAGI JSON)"),
        DeclareLaunchArgument("robot", default_value="tcp/127.0.0.1:7447",
                              description="the robot's rmw_zenohd endpoint, e.g. tcp/192.168.1.20:7447"),
        DeclareLaunchArgument("config", default_value=PathJoinSubstitution([share, "config", "node.yaml"])),
        DeclareLaunchArgument("params_file", default_value=PathJoinSubstitution([share, "config", "params.yaml"])),
        DeclareLaunchArgument("namespace", default_value=""),
        DeclareLaunchArgument("format", default_value="rmw", description="rmw | ros2dds (robot with zenoh-bridge-ros2dds)"),
        DeclareLaunchArgument("cmd_vel_topic", default_value="cmd_vel"),
        Node(
            package="neuroburst",
            executable="neuroburst",
            name="neuroburst",
            namespace=arg("namespace"),
            arguments=["node", "--genome", arg("genome"), "--config", arg("config"), "--transport", "zenoh",
                       "--zenoh-mode", "client", "--zenoh-connect", arg("robot"), "--zenoh-format", arg("format")],
            parameters=[arg("params_file")],
            remappings=[("cmd_vel", arg("cmd_vel_topic"))],
            output="screen",
        ),
    ])
