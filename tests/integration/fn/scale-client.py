#!/usr/bin/env python3
# scale-client.py - a real client of scale.sock for the hk-scale tests
# (AF_UNIX, SOCK_SEQPACKET, one JSON object per message).
#
#   scale-client.py SOCK JSON            prints the reply, keys sorted
#   scale-client.py --subscribe SOCK OUT  subscribes; one line per message
#                                         appended to OUT until closed
#   scale-client.py --status SOCK SVC FIELD  prints one field of status
#   scale-client.py --states SOCK         one status: "service state pid"
#   scale-client.py --batch SOCK JSON...  the requests on one connection,
#                                         then --states
#   scale-client.py --hold SOCK N         subscribes and reads nothing for
#                                         N seconds (a stuck subscriber)
#   scale-client.py --flood SOCK N JSON   N requests on one connection
#   scale-client.py --events SOCK OUT     binds a datagram socket (as
#                                         events.sock or NOTIFY_SOCKET) and
#                                         appends one line per datagram
import json
import os
import socket
import sys
import time


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(20)
    s.connect(path)
    return s


def call(path, req):
    s = connect(path)
    s.send(req.encode())
    reply = json.loads(s.recv(65536))
    s.close()
    return reply


def line(msg):
    return json.dumps(msg, sort_keys=True, separators=(",", ":"))


def subscribe(path, out):
    s = connect(path)
    s.settimeout(None)
    s.send(b'{"op":"subscribe"}')
    with open(out, "a") as f:
        while True:
            data = s.recv(65536)
            if not data:
                f.write("closed\n")
                return
            f.write(line(json.loads(data)) + "\n")
            f.flush()


def datagrams(path, out):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        os.unlink(path)
    except OSError:
        pass
    s.bind(path)
    with open(out, "a") as f:
        while True:
            data = s.recv(65536).decode(errors="replace")
            try:
                data = line(json.loads(data))
            except ValueError:
                data = data.replace("\n", " ")
            f.write(data + "\n")
            f.flush()


def main():
    if sys.argv[1] == "--events":
        return datagrams(sys.argv[2], sys.argv[3])
    if sys.argv[1] == "--subscribe":
        return subscribe(sys.argv[2], sys.argv[3])
    if sys.argv[1] == "--status":
        reply = call(sys.argv[2], '{"op":"status"}')
        for svc in reply["services"]:
            if svc["service"] == sys.argv[3]:
                v = svc[sys.argv[4]]
                print("" if v is None else v)
        return 0
    if sys.argv[1] == "--batch":
        s = connect(sys.argv[2])
        for req in sys.argv[3:]:
            s.send(req.encode())
            s.recv(65536)
        s.send(b'{"op":"status"}')
        reply = json.loads(s.recv(65536))
        for svc in reply["services"]:
            print(svc["service"], svc["state"],
                  "-" if svc["pid"] is None else "pid")
        return 0
    if sys.argv[1] == "--states":
        reply = call(sys.argv[2], '{"op":"status"}')
        for svc in reply["services"]:
            print(svc["service"], svc["state"],
                  "-" if svc["pid"] is None else "pid")
        return 0
    if sys.argv[1] == "--flood":
        s = connect(sys.argv[2])
        for _ in range(int(sys.argv[3])):
            s.send(sys.argv[4].encode())
            s.recv(65536)
        return 0
    if sys.argv[1] == "--hold":
        s = connect(sys.argv[2])
        s.send(b'{"op":"subscribe"}')
        s.recv(65536)
        print("subscribed", flush=True)
        time.sleep(float(sys.argv[3]))
        return 0
    print(line(call(sys.argv[1], sys.argv[2])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
