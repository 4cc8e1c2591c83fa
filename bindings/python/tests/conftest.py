"""Fixtures: real redis-server processes on free loopback ports in temporary
directories, started and stopped (by pid) by the tests; the library from
$DLOCK_LIBRARY, else from $DLOCK_BUILD_DIR, else from the source tree's
build/ folder."""

import os
import pathlib
import signal
import socket
import ssl
import subprocess
import sys
import time
import uuid

import pytest

SOURCE_DIR = pathlib.Path(__file__).resolve().parents[3]
sys.path.insert(0, str(SOURCE_DIR / "bindings" / "python"))

if not os.environ.get("DLOCK_LIBRARY"):
    build = pathlib.Path(os.environ.get("DLOCK_BUILD_DIR", SOURCE_DIR / "build"))
    os.environ["DLOCK_LIBRARY"] = str(build / "libdlock.so.1")

import dlock  # noqa: E402

SLOWDOWN = float(os.environ.get("DLOCK_TEST_SLOWDOWN", "1"))


def generous(seconds):
    """An upper bound for a timing check: ten times, scaled by the load."""
    return 10 * seconds * SLOWDOWN


def cli_path():
    if os.environ.get("DLOCK_CLI"):
        return os.environ["DLOCK_CLI"]
    return str(pathlib.Path(os.environ["DLOCK_LIBRARY"]).parent / "tools" / "dlock" / "dlock")


def _ping(port, certs=None):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as plain:
            s = plain
            if certs:
                ctx = ssl.create_default_context(cafile=str(certs / "ca.crt"))
                ctx.load_cert_chain(str(certs / "client.crt"), str(certs / "client.key"))
                s = ctx.wrap_socket(plain, server_hostname="127.0.0.1")
            s.sendall(b"PING\r\n")
            return s.recv(16)[:1] in (b"+", b"-")  # PONG, or NOAUTH with a password
    except OSError:
        return False


class RedisServer:
    """One redis-server, persistence off, on a free loopback port; with
    `certs` (tests/support/make_certs.sh's), TLS only, on that port, clients
    showing a certificate."""

    def __init__(self, directory, *extra, certs=None):
        self.dir = directory
        self.extra = extra
        self.certs = certs
        self.proc = None
        self.port = None
        for _ in range(20):
            with socket.socket() as s:  # a free port, below the ephemeral range
                port = 20000 + int.from_bytes(os.urandom(2), "big") % 12000
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    continue
            if self._start(port):
                return
        raise RuntimeError("redis-server did not start")

    def _start(self, port):
        listen = ["--port", str(port)]
        if self.certs:
            c = self.certs
            listen = ["--port", "0", "--tls-port", str(port), "--tls-cert-file",
                      str(c / "server.crt"), "--tls-key-file", str(c / "server.key"),
                      "--tls-ca-cert-file", str(c / "ca.crt"), "--tls-auth-clients", "yes"]
        self.proc = subprocess.Popen(
            ["redis-server", *listen, "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(self.dir), "--logfile", f"redis-{port}.log",
             *self.extra], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + generous(1)
        while time.monotonic() < deadline:
            if _ping(port, self.certs):
                self.port = port
                return True
            if self.proc.poll() is not None:
                return False
            time.sleep(0.02)
        self.stop()
        return False

    @property
    def url(self):
        return f"redis://127.0.0.1:{self.port}"

    def pause(self):
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self):
        os.kill(self.proc.pid, signal.SIGCONT)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGCONT)
            self.proc.terminate()
            self.proc.wait(timeout=generous(1))

    def command(self, *args):
        """One command with redis-cli; its output."""
        return subprocess.run(["redis-cli", "-p", str(self.port), *args], check=True,
                              capture_output=True, text=True).stdout.strip()


@pytest.fixture
def servers(tmp_path):
    """A factory: servers(n) starts n servers; all stop after the test."""
    started = []

    def start(n=1, *extra, certs=None):
        new = []
        for _ in range(n):
            d = tmp_path / f"redis{len(started)}"
            d.mkdir()
            new.append(RedisServer(d, *extra, certs=certs))
            started.append(new[-1])
        return new

    yield start
    for s in started:
        s.stop()


@pytest.fixture(scope="session")
def shared_server(tmp_path_factory):
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    yield server
    server.stop()


@pytest.fixture
def server(shared_server):
    return shared_server


@pytest.fixture
def client(server):
    with dlock.Client(server.url) as c:
        yield c


@pytest.fixture
def name(request):
    """A lock name of this test's own."""
    return f"py:{request.node.name}:{uuid.uuid4().hex[:8]}"
