"""A lock lost while held: on_lost runs on the renewal thread, held() turns
false, and the end of its with block raises Lost."""

import logging
import threading
import time

import pytest

import dlock

from conftest import generous


def lose(server, name, how):
    if how == "deleted":
        server.command("DEL", name)
    else:
        server.command("SET", name, "someone-else", "PX", "60000")


@pytest.mark.parametrize("how", ["deleted", "overwritten"])
def test_a_lost_lock_calls_on_lost_and_raises_lost(client, server, name, how):
    told = []
    done = threading.Event()

    def on_lost(lock, error):
        told.append((lock, error, threading.current_thread() is threading.main_thread(),
                     lock.held()))
        done.set()

    with pytest.raises(dlock.Lost) as raised:
        with client.lock(name, ttl=0.3, on_lost=on_lost) as lock:
            lose(server, name, how)
            assert done.wait(generous(0.3))
            assert not lock.held() and lock.validity == 0
    ((who, error, on_main, held_then),) = told
    assert who is lock and isinstance(error, dlock.NotOwner) and not on_main and not held_then
    assert "lost" in str(raised.value)


def test_a_loss_without_renewal_raises_lost_at_the_end_of_the_block(client, server, name):
    with pytest.raises(dlock.Lost):
        with client.lock(name, ttl=5, renew=False):
            server.command("DEL", name)


def test_a_body_exception_keeps_its_place_and_notes_the_loss(client, server, name):
    with pytest.raises(KeyError) as raised:
        with client.lock(name, ttl=5, renew=False):
            server.command("DEL", name)
            raise KeyError("the body's")
    assert any("lost" in note for note in raised.value.__notes__)


def test_a_callback_that_raises_is_logged_and_the_renewal_goes_on(client, server, name, caplog):
    done = threading.Event()

    def on_lost(lock, error):
        done.set()
        raise RuntimeError("a bad callback")

    with caplog.at_level(logging.ERROR, logger="dlock"):
        lock = client.lock(name, ttl=0.3, on_lost=on_lost)
        server.command("DEL", name)
        assert done.wait(generous(0.3))
        with pytest.raises(dlock.Lost):
            lock.release()
    assert "on_lost callback" in caplog.text and "a bad callback" in caplog.text
    # The same C client (the pool's last one) and its renewal thread go on.
    with client.lock(name, ttl=1) as again:
        assert again._conn is lock._conn
        time.sleep(2.5)
        assert again.held()


def test_the_callback_cannot_release_from_the_renewal_thread(client, server, name):
    seen = []
    done = threading.Event()

    def on_lost(lock, error):
        try:
            lock.release()
        except RuntimeError as e:
            seen.append(str(e))
        done.set()

    lock = client.lock(name, ttl=0.3, on_lost=on_lost)
    server.command("DEL", name)
    assert done.wait(generous(0.3))
    assert "on_lost" in seen[0]
    with pytest.raises(dlock.Lost):
        lock.release()


def test_on_lost_needs_renewal_and_a_callable(client, name):
    with pytest.raises(ValueError):
        client.lock(name, renew=False, on_lost=print)
    with pytest.raises(TypeError):
        client.lock(name, on_lost="print")
