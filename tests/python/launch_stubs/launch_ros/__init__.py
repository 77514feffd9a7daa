"""Stub of ROS 2's `launch_ros` package (see launch/__init__.py)."""
