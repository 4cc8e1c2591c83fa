"""Locks across processes of one program: a fork's child leaves the
parent's locks alone and exits; a program that ends while a lock with
on_lost is lost under it exits; an exception goes through pickle (a
process pool's worker)."""

import concurrent.futures
import copy
import os
import pickle
import subprocess
import sys
import textwrap

import pytest

import dlock

from conftest import generous


def test_a_forked_child_leaves_the_parents_lock_alone(client, server, name):
    with client.lock(name, ttl=30) as lock:
        pid = os.fork()
        if pid == 0:  # the child: pytest's process too, so it leaves by os._exit
            code = 0
            try:
                try:
                    lock.release()
                    code = 3  # it must refuse
                except dlock.InvalidArgument:
                    pass
                try:
                    client.lock(name + ":child", wait=0)
                    code = 4
                except dlock.InvalidArgument:
                    pass
                lock.__exit__(None, None, None)  # the end of the inherited block
                client.close()  # waits for none of the parent's threads
            except BaseException:
                code = 5
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
        assert server.command("GET", name) == lock.token
        with pytest.raises(dlock.Busy):
            client.lock(name, wait=0)
        assert lock.held()
    assert server.command("EXISTS", name) == "0"


CHILD = textwrap.dedent("""
    import subprocess, sys
    import dlock
    client = dlock.Client(sys.argv[1])
    lock = client.lock(sys.argv[2], ttl=0.03, on_lost=lambda lock, error: None)
    subprocess.run(["redis-cli", "-p", sys.argv[3], "DEL", sys.argv[2]], capture_output=True)
""")


def test_a_program_ends_while_its_lock_is_lost(server, name):
    """The renewal (every 10 ms) finds the loss while the interpreter shuts
    down: the exit frees the lock before, and the process ends."""
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(dlock.__file__)))
    for i in range(5):
        done = subprocess.run([sys.executable, "-c", CHILD, server.url, f"{name}:{i}",
                               str(server.port)], env=env, timeout=generous(20))
        assert done.returncode == 0


def fails_busy(url, name):
    with dlock.Client(url) as c:
        c.lock(name, wait=0)


def test_an_error_goes_through_pickle(client, server, name):
    with client.lock(name, ttl=30):
        with pytest.raises(dlock.Busy) as raised:
            client.lock(name, wait=0)
        error = raised.value
        for again in (copy.copy(error), pickle.loads(pickle.dumps(error))):
            assert type(again) is dlock.Busy
            assert (again.code, again.name, again.detail, str(again)) == \
                (error.code, error.name, error.detail, str(error))
        with concurrent.futures.ProcessPoolExecutor(1) as pool:
            with pytest.raises(dlock.Busy):
                pool.submit(fails_busy, server.url, name).result(timeout=generous(20))


def test_a_lock_or_client_is_neither_copied_nor_pickled(client, name):
    """A copy would share the C handles: its release freed the handle the
    pool lent to the next lock, which it released (and crashed after)."""
    lock = client.lock(name, ttl=30)
    for thing in (lock, client):
        for copier in (copy.copy, copy.deepcopy, pickle.dumps):
            with pytest.raises(TypeError, match="cannot be copied or pickled"):
                copier(thing)
    lock.release()
    other = client.lock(name + ":other", ttl=30)
    assert other.held()
    other.release()
