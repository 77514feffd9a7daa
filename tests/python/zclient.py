"""A Zenoh client configuration for the test scripts: `config` (a JSON5 file with certificates,
or none), client mode, multicast scouting off, one endpoint, giving up after `timeout_ms`."""
import json

import zenoh


def client_config(config, connect, timeout_ms):
    conf = zenoh.Config.from_file(config) if config else zenoh.Config()
    conf.insert_json5("mode", '"client"')
    conf.insert_json5("scouting/multicast/enabled", "false")
    conf.insert_json5("connect/endpoints", json.dumps([connect]))
    conf.insert_json5("connect/timeout_ms", str(timeout_ms))
    conf.insert_json5("connect/exit_on_failure", "true")
    return conf
