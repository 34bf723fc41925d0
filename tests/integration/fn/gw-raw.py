#!/usr/bin/env python3
"""gw-raw.py - a raw HTTP client for hk-activate's tests.

    gw-raw.py PORT [-t SECONDS] [-p SECONDS] PART ...

Connects to 127.0.0.1:PORT and sends each PART ("\\r\\n" escapes are
understood; "@N" sends N bytes of "x"), pausing -p seconds between parts,
then reads until the server closes or -t seconds (default 5) pass.  Prints
what was received, then "closed" if the server closed the connection or
"open" if it was still open, and "after S" (seconds, one decimal) on the
last line.
"""
import socket
import sys
import time


def main():
    args = sys.argv[1:]
    port = int(args.pop(0))
    limit, pause = 5.0, 0.0
    while args and args[0] in ("-t", "-p"):
        flag, val = args.pop(0), float(args.pop(0))
        if flag == "-t":
            limit = val
        else:
            pause = val
    start = time.monotonic()
    s = socket.create_connection(("127.0.0.1", port))
    got, state = b"", "open"
    try:
        for i, part in enumerate(args):
            if part.startswith("@"):
                data = b"x" * int(part[1:])
            else:
                data = part.encode().decode("unicode_escape").encode("latin1")
            s.sendall(data)
            if pause and i + 1 < len(args):
                time.sleep(pause)
        s.settimeout(0.1)
        while time.monotonic() - start < limit:
            try:
                b = s.recv(65536)
            except socket.timeout:
                continue
            if not b:
                state = "closed"
                break
            got += b
    except (BrokenPipeError, ConnectionResetError):
        state = "closed"
    sys.stdout.write(got.decode("latin1").replace("\r\n", "\n"))
    print(state)
    print("after %.1f" % (time.monotonic() - start))


if __name__ == "__main__":
    main()
