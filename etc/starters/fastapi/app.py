#!/usr/bin/env python3
"""@NAME@ - an HTTP function for hk, on FastAPI under uvicorn.

Edit handle() below.  hk starts this program on the first request and
stops it (SIGTERM) when it has been idle: uvicorn serves the listening
socket hk hands over (LISTEN_FDS), or 127.0.0.1:$PORT when run by hand:

	PORT=8080 python3 app.py

Needs FastAPI and uvicorn for the python3 that runs it (Debian:
apt-get install python3-fastapi python3-uvicorn).  One line per request
goes to stderr, without the query string or the body.
"""
import os
import socket
import sys

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import PlainTextResponse

NAME = "@NAME@"

app = FastAPI()


@app.api_route("/{path:path}", methods=["GET", "HEAD", "POST", "PUT",
                                         "DELETE", "PATCH"])
async def handle(request: Request, path: str):
    """The function: every path and method."""
    body = await request.body()
    return PlainTextResponse("hello from %s: %s /%s, %d bytes received\n"
                             % (NAME, request.method, path, len(body)))


@app.middleware("http")
async def log_request(request: Request, call_next):
    # uvicorn's access log is off: it would print the query string.
    response = await call_next(request)
    sys.stderr.write("%s: %s %s %d\n" % (NAME, request.method,
                                         request.url.path,
                                         response.status_code))
    sys.stderr.flush()
    return response


def main():
    handed = (os.environ.get("LISTEN_PID") == str(os.getpid())
              and os.environ.get("LISTEN_FDS") == "1")
    port = os.environ.get("PORT", "")
    if not handed and (not port.isdigit() or not 0 < int(port) < 65536):
        sys.stderr.write("%s: fatal: PORT is not set to a port\n" % NAME)
        sys.exit(64)
    # uvicorn sets TCP_NODELAY: head and body are not held for the
    # client's delayed ACK.  On SIGTERM it stops accepting, closes idle
    # connections, finishes the requests in flight and returns.
    config = uvicorn.Config(app, host="127.0.0.1",
                            port=int(port) if port.isdigit() else 0,
                            access_log=False, log_level="warning",
                            lifespan="off")
    server = uvicorn.Server(config)
    if handed:
        server.run(sockets=[socket.socket(fileno=3)])
    else:
        server.run()


if __name__ == "__main__":
    main()
