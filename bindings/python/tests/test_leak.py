"""No C handle outlives its Python object: ten thousand lock cycles leave
none behind."""

import gc
import resource

import dlock
from dlock import client as client_module


def test_ten_thousand_cycles_leave_no_handle(server, name):
    def on_lost(lock, error):
        pass

    before = dlock.live_handles()
    with dlock.Client(server.url, pool_size=2) as client:
        for i in range(10000):
            if i % 4 == 0:
                with client.lock(name, ttl=5, on_lost=on_lost) as lock:
                    assert lock.held()
            elif i % 4 == 1:
                client.lock(name, wait=0, renew=False).release()
            elif i % 4 == 2:
                client.lock(f"{name}:{i}", ttl=1)  # dropped: freed, left to expire
                client.status(name)
            else:
                held = client.lock(name, ttl=5, renew=False)
                try:
                    client.lock(name, wait=0)
                except dlock.Busy:
                    pass
                held.release()
            if i == 1000:
                rss_at_1000 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        during = dlock.live_handles()
        assert during["lock"] == before["lock"] and during["status"] == before["status"]
        assert during["client"] - before["client"] <= 2  # the pool
    gc.collect()
    assert dlock.live_handles() == before
    assert client_module._lost_table == {}
    grown_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_at_1000
    assert grown_kb < 3 * 1024  # a dlock_lock not freed per cycle grows it by 9 MB
