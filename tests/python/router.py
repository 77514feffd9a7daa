"""A Zenoh router (PyPI eclipse-zenoh) on one loopback endpoint, multicast scouting off, standing in
for the robot's rmw_zenohd. Runs until killed."""
import sys
import time

import zenoh

conf = zenoh.Config()
conf.insert_json5("mode", '"router"')
conf.insert_json5("scouting/multicast/enabled", "false")
conf.insert_json5("listen/endpoints", f'["{sys.argv[1]}"]')
conf.insert_json5("connect/endpoints", "[]")
s = zenoh.open(conf)
print("router up", flush=True)
while True:
    time.sleep(1)
