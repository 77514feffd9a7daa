"""A Foxglove WebSocket client of its own (PyPI `websockets`), speaking `foxglove.sdk.v1` as the
protocol's spec describes (github.com/foxglove/ws-protocol): it reads the server's `serverInfo` and
`advertise` messages, subscribes to every channel, and collects the binary `messageData` frames
(opcode 1, subscription id u32, log time u64, payload) until the server closes or --seconds pass.

usage: view_client.py --url ws://127.0.0.1:PORT [--seconds S] [--wait S] --out FILE.json
--wait: keep trying to connect this long (the server may not be up yet).
Writes {"server": ..., "channels": [{id, topic, encoding, schemaName, schemaEncoding}],
"messages": [{"topic", "log_time", "sha256", "size"}], "errors": [the server's error statuses]}
and prints a one-line summary; exits 2 when the server sent an error status (e.g. a subscription
refused as "Unknown channel ID": a topic the client would never see)."""
import argparse
import hashlib
import json
import struct
import sys
import time

from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

ap = argparse.ArgumentParser()
ap.add_argument("--url", required=True)
ap.add_argument("--seconds", type=float, default=60.0)
ap.add_argument("--wait", type=float, default=30.0)
ap.add_argument("--out", required=True)
args = ap.parse_args()

deadline = time.time() + args.wait
while True:
    try:
        ws = connect(args.url, subprotocols=["foxglove.sdk.v1"], open_timeout=5, max_size=None)
        break
    except (OSError, TimeoutError) as e:
        if time.time() > deadline:
            print(json.dumps({"error": f"cannot connect to {args.url}: {e}"}))
            sys.exit(1)
        time.sleep(0.2)

if ws.subprotocol != "foxglove.sdk.v1":
    print(json.dumps({"error": f"subprotocol {ws.subprotocol!r}"}))
    sys.exit(1)

server, channels, subs, messages, errors = None, {}, {}, [], []
end = time.time() + args.seconds
try:
    while time.time() < end:
        try:
            frame = ws.recv(timeout=max(0.1, end - time.time()))
        except TimeoutError:
            break
        if isinstance(frame, str):
            msg = json.loads(frame)
            if msg["op"] == "serverInfo":
                server = {k: msg.get(k) for k in ("name", "capabilities", "supportedEncodings")}
            elif msg["op"] == "advertise":
                new = []
                for c in msg["channels"]:
                    channels[c["id"]] = {k: c.get(k) for k in ("id", "topic", "encoding", "schemaName", "schemaEncoding")}
                    channels[c["id"]]["schemaBytes"] = len(c.get("schema", ""))
                    sub = len(subs) + 1
                    subs[sub] = c["id"]
                    new.append({"id": sub, "channelId": c["id"]})
                ws.send(json.dumps({"op": "subscribe", "subscriptions": new}))
            elif msg["op"] == "status" and msg.get("level") == 2:
                errors.append(msg.get("message"))
        else:
            if frame[0] != 1:
                continue
            sub, log_time = struct.unpack_from("<IQ", frame, 1)
            payload = frame[13:]
            topic = channels[subs[sub]]["topic"]
            messages.append({"topic": topic, "log_time": log_time, "sha256": hashlib.sha256(payload).hexdigest(), "size": len(payload)})
except ConnectionClosed:
    pass

json.dump({"server": server, "channels": list(channels.values()), "messages": messages, "errors": errors}, open(args.out, "w"))
per_topic = {}
for m in messages:
    per_topic[m["topic"]] = per_topic.get(m["topic"], 0) + 1
print(json.dumps({"channels": len(channels), "messages": per_topic, "errors": errors}))
sys.exit(2 if errors else 0)
