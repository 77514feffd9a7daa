"""Stub of ROS 2's `launch` package: just enough to run generate_launch_description() and
inspect the result without ROS (tests/python/check_launch.py)."""


class LaunchDescription:
    def __init__(self, entities=None):
        self.entities = list(entities or [])
