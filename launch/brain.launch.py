"""The brain on the robot: `ros2 launch neuroburst brain.launch.py genome:=/path/to/genome.yaml`.

Runs `neuroburst node` with the package's configuration (config/node.yaml: topics and areas) and
ROS parameters (config/params.yaml), remapping the sensor and motor topics. transport:=zenoh (the
default) joins the robot's rmw_zenoh router at tcp/127.0.0.1:7447; transport:=ros2 uses rcl
through r2r (a build with `--cargo-args --features ros2`). lifecycle:=true starts it managed
(node.lifecycle): unconfigured, until a lifecycle manager (nav2_lifecycle_manager,
`ros2 lifecycle set /neuroburst configure`, then `activate`) brings it up.
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
        DeclareLaunchArgument("config", default_value=PathJoinSubstitution([share, "config", "node.yaml"]),
                              description="neuroburst configuration (topics, areas, backend)"),
        DeclareLaunchArgument("params_file", default_value=PathJoinSubstitution([share, "config", "params.yaml"]),
                              description="ROS parameters (rate, backend, checkpoint)"),
        DeclareLaunchArgument("namespace", default_value="", description="ROS namespace of the node"),
        DeclareLaunchArgument("transport", default_value="zenoh", description="zenoh | ros2"),
        DeclareLaunchArgument("lifecycle", default_value="false",
                              description="true: a managed node, configured and activated by a lifecycle manager"),
        DeclareLaunchArgument("router", default_value="tcp/127.0.0.1:7447", description="the robot's rmw_zenohd"),
        DeclareLaunchArgument("scan_topic", default_value="scan"),
        DeclareLaunchArgument("image_topic", default_value="camera/image_raw"),
        DeclareLaunchArgument("cmd_vel_topic", default_value="cmd_vel"),
        Node(
            package="neuroburst",
            executable="neuroburst",
            name="neuroburst",
            namespace=arg("namespace"),
            arguments=["node", "--genome", arg("genome"), "--config", arg("config"),
                       "--transport", arg("transport"), "--zenoh-mode", "peer", "--zenoh-connect", arg("router"),
                       "--set", ["node.lifecycle=", arg("lifecycle")]],
            parameters=[arg("params_file")],
            remappings=[("scan", arg("scan_topic")), ("camera/image_raw", arg("image_topic")),
                        ("cmd_vel", arg("cmd_vel_topic"))],
            output="screen",
        ),
    ])
