"""One wire contract: the dlock command and redis-py's Lock exclude a lock
taken from Python, and the other way round."""

import subprocess
import time

import pytest
import redis

import dlock

from conftest import cli_path, generous

BUSY = 75  # the command's exit code for a busy lock


def cli(server, *args):
    return subprocess.run([cli_path(), "-q", "-r", server.url, *args], capture_output=True,
                          text=True, timeout=generous(2))


def test_the_command_and_python_exclude_each_other(client, server, name):
    with client.lock(name, ttl=5) as lock:
        assert cli(server, "run", "-n", name, "--", "true").returncode == BUSY
    holder = subprocess.Popen([cli_path(), "-r", server.url, "run", name, "--", "sleep", "2"])
    try:
        deadline = time.monotonic() + generous(1)
        while not client.status(name).held:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        with pytest.raises(dlock.Busy):
            client.lock(name, wait=0)
        with client.lock(name, wait=generous(2)) as after:  # woken by its release
            assert after.fence > lock.fence
    finally:
        holder.wait()
    assert holder.returncode == 0


def test_redis_py_lock_and_dlock_exclude_each_other(client, server, name):
    r = redis.Redis(port=server.port)
    theirs = r.lock(name, timeout=5)
    assert theirs.acquire(blocking=False)
    with pytest.raises(dlock.Busy):
        client.lock(name, wait=0)
    theirs.release()
    with client.lock(name, ttl=5):
        assert not r.lock(name, timeout=5).acquire(blocking=False)
    assert r.lock(name, timeout=5).acquire(blocking=False)


def test_an_audited_client_is_read_by_dlock_audit(server, name):
    with dlock.Client(server.url, audit=True, audit_maxlen=100) as audited:
        for _ in range(3):
            with audited.lock(name, ttl=5, renew=False):
                pass
    events = [e[1][b"event"] for e in redis.Redis(port=server.port).xrange(
        "{%s}:dlock:audit:%s" % (name, name))]
    assert events == [b"grant", b"release"] * 3
    verdict = cli(server, "audit", "--json", name)
    assert verdict.returncode == 0, verdict.stdout + verdict.stderr


def test_audit_options_are_checked_before_any_network_call():
    with pytest.raises(TypeError):
        dlock.Client("redis://127.0.0.1:1", audit="yes")
    with pytest.raises(ValueError):
        dlock.Client("redis://127.0.0.1:1", audit=True, audit_maxlen=0)
