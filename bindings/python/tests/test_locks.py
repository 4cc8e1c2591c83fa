"""Every kind of lock, against a real redis-server."""

import threading
import time

import pytest

import dlock

from conftest import generous


def test_a_mutex_excludes_and_its_fence_grows(client, name):
    with client.lock(name, ttl=5) as first:
        assert first.held() and 0 < first.validity <= 5
        assert len(first.token) == 32 and first.fence > 0 and first.slot == 0
        assert first.attempts == 1
        with pytest.raises(dlock.Busy) as e:
            client.lock(name, wait=0)
        assert e.value.code == -3 and "held by another owner" in str(e.value)
    assert not first.held() and first.validity == 0
    with client.lock(name, ttl=5) as second:
        assert second.fence > first.fence and second.token != first.token


def test_a_wait_that_runs_out_raises_busy_after_the_wait(client, name):
    with client.lock(name, ttl=10):
        start = time.monotonic()
        with pytest.raises(dlock.Busy) as e:
            client.lock(name, wait=0.3)
        elapsed = time.monotonic() - start
        assert 0.3 <= elapsed < generous(0.3) + 1
        # A queued waiter's last answer says when to try again, not when
        # the holder's key expires (in about 10 s): no expiry is claimed.
        assert "held by another owner" in str(e.value) and "expires in" not in str(e.value)


def test_a_waiter_gets_the_lock_at_the_release(client, name):
    holder = client.lock(name, ttl=10)
    got = {}

    def wait():
        with client.lock(name, wait=generous(2)) as lock:
            got["fence"] = lock.fence
            got["at"] = time.monotonic()

    t = threading.Thread(target=wait)
    t.start()
    time.sleep(0.2)
    released = time.monotonic()
    holder.release()
    t.join()
    assert got["fence"] > holder.fence
    assert got["at"] - released < generous(0.2)  # woken, not the TTL


def test_renewal_keeps_a_lock_past_its_ttl(client, name):
    with client.lock(name, ttl=1) as lock:  # renewed every third of a second
        time.sleep(2.5)
        assert lock.held()
        assert client.status(name).fence == lock.fence
    assert client.stats().renewals >= 2


def test_without_renewal_a_lock_expires_and_extend_keeps_it(client, name):
    lock = client.lock(name, ttl=0.3, renew=False)
    lock.extend(2)
    time.sleep(0.5)
    assert lock.held() and client.status(name).held
    lock.release()
    lock = client.lock(name, ttl=0.1, renew=False)
    time.sleep(0.3)
    assert not lock.held()
    with pytest.raises(dlock.NotOwner):
        lock.extend()
    with pytest.raises(dlock.NotOwner):
        lock.release()


def test_an_auto_renewed_lock_is_not_extended_by_hand(client, name):
    with client.lock(name, ttl=5) as lock:
        with pytest.raises(dlock.InvalidArgument):
            lock.extend(10)


def test_releasing_twice_says_it_was_released(client, name):
    lock = client.lock(name)
    lock.release()
    with pytest.raises(dlock.NotOwner, match="released"):
        lock.release()
    with lock:  # a with block after a release has nothing to do
        pass


def test_a_released_lock_leaves_its_c_client_to_the_next_alone(client, name):
    """The next lock reuses the C client, its out-parameter and its mutex:
    the lock released before keeps its fence and token and touches none of
    the next one's."""
    first = client.lock(name, wait=0, renew=False)
    fence, token = first.fence, first.token
    first.release()
    second = client.lock(name, wait=0, renew=False)
    assert second._conn is first._conn
    with pytest.raises(dlock.NotOwner, match="released"):
        first.release()
    with pytest.raises(dlock.NotOwner, match="released"):
        first.extend(5)
    del first  # its finalizer frees nothing
    assert second.held() and second.fence > fence and second.token != token
    second.extend(5)
    second.release()
    assert dlock.live_handles()["lock"] == 0


def test_a_semaphore_hands_out_its_permits(client, name):
    permits = [client.lock(name, ttl=5, permits=3) for _ in range(3)]
    assert sorted(p.slot for p in permits) == [0, 1, 2]
    with pytest.raises(dlock.Busy):
        client.lock(name, permits=3, wait=0)
    with pytest.raises(dlock.LimitMismatch):
        client.lock(name, permits=4, wait=0)
    st = client.status(name)
    assert st.limit == 3 and len(st.holders) == 3
    permits[1].release()
    again = client.lock(name, permits=3, wait=0)
    assert again.slot == 1
    for p in (permits[0], permits[2], again):
        p.release()


def test_a_semaphore_waiter_keeps_its_place_for_its_lease(client, server, name):
    """lease applies to a semaphore's waiters too: the queue keeps the
    waiter's place until the end of the lease it asked for."""
    holders = [client.lock(name, ttl=5, permits=2) for _ in range(2)]
    got = []

    def wait():
        with client.lock(name, ttl=5, permits=2, lease=60, wait=generous(3)) as lock:
            got.append(lock.slot)

    def lease_left_ms():  # the waiters' lease ends, server ms (docs/semaphores.md)
        ends = server.command("ZRANGE", "{%s}:dlock:waiter-leases:%s" % (name, name),
                              "0", "-1", "WITHSCORES").split()
        if not ends:
            return None
        now = server.command("TIME").split()
        return int(ends[1]) - (int(now[0]) * 1000 + int(now[1]) // 1000)

    waiter = threading.Thread(target=wait)
    waiter.start()
    deadline = time.monotonic() + generous(1)
    while lease_left_ms() is None:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert 50000 < lease_left_ms() <= 60000  # not the default 2 s
    holders[1].release()
    waiter.join()
    assert got == [1]
    holders[0].release()


def test_a_fair_lock_serves_its_waiters_in_order(client, server, name):
    order = []
    holder = client.lock(name, ttl=5, fair=True)

    def wait(i):
        with client.lock(name, ttl=5, fair=True, wait=generous(3)):
            order.append(i)

    def queued():  # the queue's key (docs/fair.md)
        return int(server.command("ZCARD", "{%s}:dlock:queue:%s" % (name, name)))

    threads = []
    for i in range(3):
        threads.append(threading.Thread(target=wait, args=(i,)))
        threads[-1].start()
        deadline = time.monotonic() + generous(1)
        while queued() < i + 1:  # each queues behind the one before
            assert time.monotonic() < deadline
            time.sleep(0.01)
    holder.release()
    for t in threads:
        t.join()
    assert order == [0, 1, 2]


def test_shared_holders_exclude_an_exclusive_one(client, name):
    a = client.lock(name, shared=True)
    b = client.lock(name, shared=True)
    assert client.status(name).shared
    with pytest.raises(dlock.Busy):
        client.lock(name, wait=0)
    a.release()
    b.release()
    with client.lock(name, wait=0):
        with pytest.raises(dlock.Busy):
            client.lock(name, shared=True, wait=0)


def test_max_hold_ends_the_renewal(client, name):
    lost = threading.Event()
    with pytest.raises(dlock.Lost):
        with client.lock(name, ttl=0.2, max_hold=0.5, on_lost=lambda l, e: lost.set()) as lock:
            assert lost.wait(generous(1))
            assert not lock.held()
    assert client.stats().losses == 1


def test_status_list_and_doctor(client, name):
    assert not client.status(name).held
    with client.lock(name, ttl=5) as lock:
        st = client.status(name)
        assert st.held and st.fence == lock.fence and 0 < st.ttl <= 5
        assert st.nodes_answered == 1 and st.nodes[0].server == client.nodes[0]
        (holder,) = st.holders
        assert holder.pid > 0 and holder.fence == lock.fence and abs(holder.since - time.time()) < 60
        assert name in client.list("py:*")
        assert client.list(name) == [name]
    assert client.list(name) == []
    report = client.doctor()
    assert "NO_PERSISTENCE" in [f.id for f in report.findings]  # the tests' servers keep nothing
    assert report.worst >= dlock.Severity.WARNING


def test_stats_count_acquisitions_and_busy(server, name):
    with dlock.Client(server.url) as client:
        with client.lock(name):
            with pytest.raises(dlock.Busy):
                client.lock(name, wait=0)
        s = client.stats()
        assert (s.acquisitions, s.busy, s.losses) == (1, 1, 0)
        assert len(s.nodes) == 1


def test_a_wrong_password_is_an_auth_error(servers, name):
    (server,) = servers(1, "--requirepass", "s3cret")
    with dlock.Client(server.url, password="wrong") as client:
        with pytest.raises(dlock.AuthError) as e:
            client.lock(name)
        assert "s3cret" not in str(e.value) and "wrong" not in str(e.value)
    with dlock.Client(server.url.replace("//", "//:s3cret@")) as client:
        client.lock(name).release()
    with dlock.Client(server.url, password="s3cret") as client:
        client.lock(name).release()
        assert "s3cret" not in repr(client)


def test_a_closed_client_takes_no_lock(server, name):
    client = dlock.Client(server.url)
    lock = client.lock(name)
    client.close()
    with pytest.raises(dlock.Error, match="closed"):
        client.lock(name + "2")
    assert lock.held()  # a lock taken before keeps its connection
    lock.release()
    assert dlock.live_handles()["lock"] == 0
