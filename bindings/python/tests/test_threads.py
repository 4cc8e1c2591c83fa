"""One Client shared by threads: locks exclude each other across them, and a
thread that waits does not hold up the holder's release."""

import threading
import time


from conftest import generous


def test_threads_sharing_a_client_take_turns(client, name):
    inside = []
    errors = []

    def worker():
        try:
            for _ in range(20):
                with client.lock(name, ttl=5, wait=generous(5)):
                    inside.append(1)
                    if len(inside) > 1:
                        errors.append("two holders at once")
                    time.sleep(0.001)
                    inside.pop()
        except Exception as e:  # reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert client.stats().acquisitions == 160


def test_a_waiter_forever_does_not_block_the_release(client, name):
    holder = client.lock(name, ttl=30)
    got = threading.Event()

    def wait():
        with client.lock(name, wait=None):
            got.set()

    t = threading.Thread(target=wait)
    t.start()
    time.sleep(0.3)  # it waits now, with a C client of its own
    start = time.monotonic()
    holder.release()
    assert got.wait(generous(0.5))
    assert time.monotonic() - start < generous(0.5)
    t.join()


def test_getters_are_safe_while_another_thread_releases(client, name):
    for _ in range(50):
        lock = client.lock(name, ttl=5)
        stop = threading.Event()

        def read():
            while not stop.is_set():
                lock.held()
                lock.validity

        t = threading.Thread(target=read)
        t.start()
        lock.release()
        stop.set()
        t.join()
        assert not lock.held()
