"""A Zenoh router (PyPI eclipse-zenoh) on one endpoint, multicast scouting off, standing in for
the robot's rmw_zenohd. Runs until killed.

usage: router.py ENDPOINT [CONFIG.json5]   (CONFIG: a router configuration file, e.g. the shipped
config/robot_router.json5, whose listen endpoints are replaced by ENDPOINT)"""
import sys
import time

import zenoh

conf = zenoh.Config.from_file(sys.argv[2]) if len(sys.argv) > 2 else zenoh.Config()
conf.insert_json5("mode", '"router"')
conf.insert_json5("scouting/multicast/enabled", "false")
conf.insert_json5("listen/endpoints", f'["{sys.argv[1]}"]')
conf.insert_json5("connect/endpoints", "[]")
s = zenoh.open(conf)
print("router up", flush=True)
while True:
    time.sleep(1)
