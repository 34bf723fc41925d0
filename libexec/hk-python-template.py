#!/usr/bin/python3
"""hk-python-template - hk-scale's Python template (hk-scale(8)).

hk-scale runs one per interpreter and user, as that user, in a cgroup of
its own, with a SOCK_SEQPACKET socket as fd 3.  It imports what the
starters' handlers need (http.server; FastAPI and uvicorn when they are
installed), says "ready", then forks an instance for each request:

    request: "spawn" NUL directory NUL argc NUL argv... NUL env...
             with fds: output, exec, go[, listener]
    reply:   "pid N", or "error WHY"

A spare fork waits for a request of its own, which hk-scale sends it
straight, without the template in between nor an answer to wait for:

    to hk-scale: "spare N" with fd: the spare's socket
    to the spare: a request as above, from hk-scale
    from hk-scale: "next" NUL directory NUL argc NUL argv... NUL (no
             environment): the spare is used, or gone

The next spare is made SPARE_DELAY after a "next" (not beside the
instance just started, on the same CPUs).  The spare
warms itself up first (warm()): it serves one request of its own, made
up, through http.server and, where they are installed, FastAPI and
uvicorn, so that what an instance's first request would do for the
first time in this process (copies of the template's pages it writes,
a thread's start, first calls) is done before the request comes; no
code of any service runs in it, and no socket but a socketpair of its
own.  The template does it once too, so that what it imports lazily
is shared.  Before the next spare, the template compiles the script of
the request it answered or was told of ("next"), which the next
instances of that script run without compiling it again (the file's
device, inode, size and times must not have changed).

The instance is made hk-scale's child (clone's CLONE_PARENT; elsewhere
the child of a child that exits at once, reparented to hk-scale, a
subreaper) and supervised as an exec instance is.  It waits for a byte on go (hk-scale has moved it into the
instance's cgroup by then), sets up what the exec backend's child sets
up, closes exec (EOF: started, as an exec's close-on-exec says), and
runs the command's script or module as python3 would.  A failure is
printed to the output and told by a byte on exec.  EOF on fd 3 (hk-scale
gone) ends the template; its instances live on.

The template is not dumpable (PR_SET_DUMPABLE 0): no process of its
user, another service's function among them, may ptrace it or read its
memory, nor that of a spare fork, which may still become an instance of
any service of that user.  An instance is made dumpable again once it is
the instance of its own service, as a bare exec of it is.
"""
import array
import gc
import io
import os
import runpy
import select
import socket
import sys
import time

MSG_MAX = 1 << 20
SPARE_DELAY = 0.25	# s after an answer: the instance's start goes first
PR_SET_DUMPABLE = 4
USAGE = "usage: hk-python-template [--help]  (started by hk-scale, with " \
    "its socket as fd 3)"
EX_USAGE = 64
HELP = """
hk-scale's Python template (start_from = "python-template", hk.toml(5)):
an interpreter that has imported what the starters' handlers need, and
forks an instance of a service at each request of hk-scale, which starts
it as the services' user and talks to it over fd 3.  Not for running by
hand; see hk-scale(8)."""


def preload():
    """What the starters' handlers import, so that a fork has it."""
    import asyncio  # noqa: F401
    import email.utils  # noqa: F401
    import http.server  # noqa: F401
    import json  # noqa: F401
    import pkgutil  # noqa: F401 (runpy imports it at each run)
    import socketserver  # noqa: F401
    import traceback  # noqa: F401
    import urllib.parse  # noqa: F401
    for name in ("fastapi", "fastapi.responses", "fastapi.routing",
                 "starlette.middleware", "uvicorn", "uvicorn.config",
                 "uvicorn.server", "uvicorn.main", "uvicorn.lifespan.on",
                 "uvicorn.lifespan.off", "uvicorn.loops.auto",
                 "uvicorn.loops.asyncio",
                 "uvicorn.protocols.http.auto",
                 "uvicorn.protocols.http.h11_impl",
                 "uvicorn.protocols.http.httptools_impl",
                 "uvicorn.protocols.websockets.auto"):
        try:
            __import__(name)
        except Exception:
            pass


def warm_http():
    """One made-up request through http.server's threading server, on
    a socketpair (no listener anyone else could reach)."""
    import http.server
    import selectors

    class Warm(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        wbufsize = -1

        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", "1")
            self.end_headers()
            self.wfile.write(b"x")

        def log_message(self, fmt, *args):
            pass

    a, b = socket.socketpair()
    srv = http.server.ThreadingHTTPServer("", Warm,
                                          bind_and_activate=False)
    srv.daemon_threads = False	# server_close() joins it
    srv.block_on_close = True
    try:
        b.sendall(b"GET /warm?x=1 HTTP/1.1\r\nHost: warm\r\n"
                  b"Content-Length: 0\r\nConnection: close\r\n\r\n")
        with selectors.PollSelector() as sel:
            sel.register(b, selectors.EVENT_READ)
            srv.process_request(a, "")	# its thread answers
            sel.select(5)
        while b.recv(4096):
            pass
    finally:
        srv.server_close()	# joins the thread
        srv.socket.close()
        a.close()
        b.close()


def warm_fastapi():
    """One made-up request through a FastAPI app shaped as the
    starter's (a path route, an http middleware), served by uvicorn's
    HTTP protocol on asyncio, over a socketpair; uvicorn's config
    loaded as the starter's is (its logging set up, then undone)."""
    try:
        import asyncio
        import uvicorn
        from fastapi import FastAPI, Request
        from fastapi.responses import PlainTextResponse
        from uvicorn.server import ServerState
    except Exception:
        return
    app = FastAPI()

    @app.api_route("/{path:path}", methods=["GET", "POST"])
    async def handle(request: Request, path: str):
        body = await request.body()
        return PlainTextResponse("%s %d" % (path, len(body)))

    @app.middleware("http")
    async def log_request(request: Request, call_next):
        return await call_next(request)

    config = uvicorn.Config(app, host="127.0.0.1", port=0,
                            access_log=False, log_level="warning",
                            lifespan="off")
    config.load()
    unlog(("uvicorn", "uvicorn.error", "uvicorn.access"))
    state = ServerState()

    async def serve_one(a, b):
        loop = asyncio.get_running_loop()
        transport, _ = await loop.connect_accepted_socket(
            lambda: config.http_protocol_class(config=config,
                                               server_state=state), a)
        await loop.sock_sendall(b, b"GET /warm?x=1 HTTP/1.1\r\n"
                                b"Host: warm\r\nConnection: close\r\n\r\n")
        while await asyncio.wait_for(loop.sock_recv(b, 4096), 5):
            pass
        transport.close()

    a, b = socket.socketpair()
    a.setblocking(False)
    b.setblocking(False)
    try:
        asyncio.run(serve_one(a, b))
    finally:
        a.close()
        b.close()


def unlog(names):
    """The loggers named as a new interpreter has them: no handler, no
    level of their own."""
    import logging
    for name in names:
        log = logging.getLogger(name)
        for h in list(log.handlers):
            log.removeHandler(h)
        log.setLevel(logging.NOTSET)
        log.propagate = True
        log.disabled = False


def warm_setup():
    """What an instance's set-up does first: its stdio's text layers
    (on /dev/null), an environment variable set and unset."""
    fd = os.open(os.devnull, os.O_WRONLY)
    try:
        for f in (io.TextIOWrapper(io.BufferedWriter(
                io.FileIO(fd, "w", closefd=False))),
                io.TextIOWrapper(io.FileIO(fd, "w", closefd=False),
                                 write_through=True,
                                 errors="backslashreplace")):
            f.write("warm\n")
            f.flush()
    finally:
        os.close(fd)
    os.environ["HK_WARM"] = "1"
    del os.environ["HK_WARM"]


def warm():
    """What an instance's first request would do first, done ahead."""
    for fn in (warm_setup, warm_http, warm_fastapi):
        try:
            fn()
        except Exception:
            pass


LIBC = []	# ctypes' libc, made once by the template for its forks


def dumpable(on):
    """prctl(PR_SET_DUMPABLE): whether a process of the same user may
    ptrace this one or read its /proc/PID/mem."""
    import ctypes
    if not LIBC:
        LIBC.append(ctypes.CDLL(None, use_errno=True))
    if LIBC[0].prctl(PR_SET_DUMPABLE, 1 if on else 0, 0, 0, 0) == -1:
        raise OSError(ctypes.get_errno(), "prctl PR_SET_DUMPABLE")


CODE = {}	# absolute path: (stat_key(), the script compiled)


def stat_key(path):
    st = os.stat(path)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns,
            st.st_ctime_ns)


def script_of(argv):
    """The script argv runs, as given; None for a module."""
    i = 1 + (len(argv) > 2 and argv[1] == "-u")
    return None if argv[i] == "-m" else argv[i]


def head(buf, n):
    """The directory and argv of the request in buf[:n], read without
    a copy of the environment that follows (its secrets), or None."""
    fields, at = [], 0
    while len(fields) < 3 or len(fields) < 3 + int(fields[2]):
        end = buf.find(b"\0", at, n)
        if end == -1 or len(fields) > 1024:
            return None
        fields.append(bytes(buf[at:end]))
        at = end + 1
    return os.fsdecode(fields[1]), [os.fsdecode(a) for a in fields[3:]]


def remember(buf, n):
    """Compiles the script of the request in buf[:n] for the next forks,
    as runpy would, unless it is known already.  Off the start's path:
    after the answer, before the next spare."""
    try:
        directory, argv = head(buf, n)
        script = script_of(argv)
        if script is None:
            return
        path = os.path.abspath(os.path.join(directory, script))
        key = stat_key(path)
        if path in CODE and CODE[path][0] == key:
            return
        with io.open_code(path) as f:
            CODE[path] = (key, compile(f.read(), script, "exec",
                                       dont_inherit=True))
    except (OSError, ValueError, TypeError, SyntaxError):
        pass		# the instance compiles it, and says what is wrong


def compiled(script):
    """The template's code of script, if the file is as it was then."""
    path = os.path.abspath(script)
    try:
        if path in CODE and CODE[path][0] == stat_key(path) and \
                hasattr(runpy, "_run_module_code"):
            return CODE[path][1]
    except OSError:
        pass
    return None


def fail(execw, what, why):
    """Printed for the log, and a byte on exec: the exit gives why."""
    try:
        os.write(2, ("%s: %s\n" % (what, why)).encode())
        os.write(execw, b"x")
    finally:
        os._exit(127)


def parse(msg):
    fields = bytes(msg).split(b"\0")
    if fields[-1] == b"":
        fields.pop()
    if len(fields) < 3 or fields[0] != b"spawn":
        raise ValueError("bad request")
    argc = int(fields[2])
    argv = [os.fsdecode(a) for a in fields[3:3 + argc]]
    env = [os.fsdecode(e) for e in fields[3 + argc:]]
    if len(argv) != argc or argc < 2:
        raise ValueError("bad request")
    return os.fsdecode(fields[1]), argv, env


def stdio(unbuffered):
    """Python's own stdout and stderr, on the instance's fds 1 and 2."""
    out = io.FileIO(1, "w", closefd=False)
    err = io.FileIO(2, "w", closefd=False)
    if unbuffered:
        sys.stdout = io.TextIOWrapper(out, write_through=True)
        sys.stderr = io.TextIOWrapper(err, write_through=True,
                                      errors="backslashreplace")
    else:
        sys.stdout = io.TextIOWrapper(io.BufferedWriter(out))
        sys.stderr = io.TextIOWrapper(io.BufferedWriter(err),
                                      line_buffering=True,
                                      errors="backslashreplace")
    sys.__stdout__, sys.__stderr__ = sys.stdout, sys.stderr


def setup(directory, env, out, execw, lfd):
    """What the exec backend's child does before its exec (hk-scale)."""
    null = os.open("/dev/null", os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(out, 1)
    os.dup2(out, 2)
    first = 3
    if lfd != -1:
        os.dup2(lfd, 3)
        first = 4
    os.closerange(first, execw)
    os.closerange(execw + 1, os.sysconf("SC_OPEN_MAX"))
    os.environ.clear()
    for e in env:
        k, _, v = e.partition("=")
        if k:
            os.environ[k] = v
    if "LISTEN_FDS" in os.environ:
        os.environ["LISTEN_PID"] = str(os.getpid())
    if directory:
        os.chdir(directory)


def instance(msg, fds):
    """The forked instance: never returns but by SystemExit."""
    out, execw, go = fds[0], fds[1], fds[2]
    lfd = fds[3] if len(fds) > 3 else -1
    try:
        os.setsid()
        if os.read(go, 1) != b"g":
            os._exit(127)	# hk-scale gave up on it
        directory, argv, env = parse(msg)
        setup(directory, env, out, execw, lfd)
        dumpable(True)	# its own service's now, as an exec'd one is
    except Exception as e:
        import traceback
        where = traceback.extract_tb(e.__traceback__)[-1]
        fail(execw, "template", "%s (line %d: %s)" % (e, where.lineno,
                                                     where.line))
    i = 1
    unbuffered = argv[i] == "-u"
    i += unbuffered
    stdio(unbuffered)
    if argv[i] == "-m":
        module, args = argv[i + 1], argv[i + 2:]
        sys.argv = [module] + args
        sys.path[0] = os.getcwd()
    else:
        module, args = None, argv[i + 1:]
        script = argv[i]
        sys.argv = [script] + args
        sys.path[0] = os.path.dirname(os.path.abspath(script))
    code = compiled(script) if module is None else None
    os.close(execw)
    try:
        if module is not None:
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        elif code is not None:	# as run_path runs a file, compiled
            runpy._run_module_code(code, None, "__main__", pkg_name="",
                                   script_name=script)
        else:
            runpy.run_path(script, run_name="__main__")
    except SystemExit:
        raise
    except BaseException:
        import traceback
        traceback.print_exc()
        raise SystemExit(1)
    raise SystemExit(0)


def clone_parent():
    """A fork whose parent is ours, hk-scale (CLONE_PARENT): the
    instance is hk-scale's child at once, with no child in between to
    fork it, exit and be waited for (about 20 ms of a busy machine).
    Made as os.fork() makes it, the interpreter's own fork hooks around
    the system call, which holds the GIL (PyDLL).  None where the call
    is not known (x86_64 only): then spawn() forks twice."""
    if os.uname().machine != "x86_64":
        return None
    import ctypes
    libc = ctypes.PyDLL(None, use_errno=True)
    api = ctypes.pythonapi
    api.PyOS_BeforeFork()
    pid = libc.syscall(56, 0x00008000 | 17, 0, 0, 0, 0)  # clone, SIGCHLD
    if pid == 0:
        api.PyOS_AfterFork_Child()
        return 0
    api.PyOS_AfterFork_Parent()
    if pid == -1:
        return None
    return pid


def make_spare(sock):
    """An instance forked ahead of its request, waiting for it on a
    socket of its own: the fork is then off the start's path.  It is
    hk-scale's child (CLONE_PARENT), holds none of the template's
    sockets, and ends at EOF, with the template.  Its socket, or None
    where CLONE_PARENT is not known."""
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    pid = clone_parent()
    if pid == 0:
        sock.close()
        a.close()
        warm()
        buf = bytearray(MSG_MAX)
        try:
            n, fds = receive(b, buf)
        except Exception:
            os._exit(0)
        if n == 0:
            os._exit(0)	# the template is gone
        b.close()
        instance(memoryview(buf)[:n], fds)
    b.close()
    if pid is None:
        a.close()
        return None
    return (pid, a)


def hand(sock, spare):
    """The spare's socket to hk-scale ("spare N"), which sends the
    spare its request itself.  The template keeps no copy: the spare
    ends at EOF, when hk-scale lets it go or is gone."""
    pid, a = spare
    try:
        socket.send_fds(sock, [b"spare %d" % pid], [a.fileno()])
    except OSError:
        pass		# full or gone: EOF ends the spare
    finally:
        a.close()


def spawn(msg, fds, spare):
    """Hands the request to the spare, or forks the instance as
    hk-scale's child: "pid N"."""
    if len(fds) < 3:
        raise ValueError("bad request: %d fds" % len(fds))
    if spare is not None:
        pid, a = spare
        try:
            socket.send_fds(a, [msg], fds)
            return b"pid %d" % pid
        except OSError:
            pass		# it died: a fork, then
        finally:
            a.close()
    pid = clone_parent()
    if pid == 0:
        instance(msg, fds)
    if pid is not None:
        return b"pid %d" % pid
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            gpid = os.fork()
        except BaseException:
            os._exit(1)
        if gpid == 0:
            os.close(w)
            instance(msg, fds)
        os.write(w, str(gpid).encode())
        os._exit(0)
    os.close(w)
    data = os.read(r, 32)	# one write, before its exit
    os.close(r)
    os.waitpid(pid, 0)	# the instance is hk-scale's child once this returns
    if not data:
        raise OSError("fork failed")
    return b"pid " + data


def receive(sock, buf):
    """A request into buf, which the template zeroes after it: its
    secrets stay in no copy that a later instance of another service
    would inherit.  The length and the fds; 0 at EOF."""
    fdsize = array.array("i").itemsize
    n, anc, flags, _ = sock.recvmsg_into([buf],
                                         socket.CMSG_SPACE(8 * fdsize))
    fds = array.array("i")
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[:len(data) - len(data) % fdsize])
    if flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
        for fd in fds:
            os.close(fd)
        raise ValueError("request too long")
    return n, list(fds)


def hk_socket():
    """fd 3, hk-scale's socket; a usage error when run by hand."""
    if len(sys.argv) > 1:
        if sys.argv[1:] == ["--help"]:
            print(USAGE)
            print(HELP)
            sys.exit(0)
        print(USAGE, file=sys.stderr)
        sys.exit(EX_USAGE)
    try:
        sock = socket.socket(fileno=3)
    except OSError as e:
        sock, why = None, e.strerror
    else:
        why = "not a SOCK_SEQPACKET Unix socket"
        if sock.family != socket.AF_UNIX or \
                sock.type != socket.SOCK_SEQPACKET:
            sock.detach()
            sock = None
    if sock is None:
        print("hk-python-template: fd 3: %s: it runs under hk-scale only"
              % why, file=sys.stderr)
        print(USAGE, file=sys.stderr)
        sys.exit(EX_USAGE)
    return sock


def main():
    sock = hk_socket()
    dumpable(False)
    preload()
    warm()
    # What is imported stays out of the collector's sight: a collection
    # in an instance would otherwise touch, and copy, every page of it.
    gc.collect()
    gc.freeze()
    buf = bytearray(MSG_MAX)
    sock.send(b"ready")
    due = time.monotonic()	# when the next spare is made: at once
    while True:
        if due is not None:
            wait = due - time.monotonic()
            if wait <= 0 or not select.select([sock], [], [], wait)[0]:
                spare, due = make_spare(sock), None
                if spare is not None:	# None: CLONE_PARENT unknown
                    hand(sock, spare)
                continue
        try:
            n, fds = receive(sock, buf)
        except InterruptedError:
            continue
        except ValueError as e:
            buf[:] = bytes(MSG_MAX)
            sock.send(("error %s" % e).encode())
            continue
        if n == 0:
            os._exit(0)	# hk-scale is gone
        if buf.startswith(b"next\0"):
            for fd in fds:
                os.close(fd)
            if due is None:
                due = time.monotonic() + SPARE_DELAY
            remember(buf, n)
            buf[:n] = bytes(n)
            continue
        try:
            reply = spawn(memoryview(buf)[:n], fds, None)
        except Exception as e:
            reply = ("error %s" % e).encode()
        for fd in fds:
            os.close(fd)
        sock.send(reply)
        remember(buf, n)
        buf[:n] = bytes(n)

if __name__ == "__main__":
    main()
