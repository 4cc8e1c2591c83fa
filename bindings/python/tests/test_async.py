"""asyncio: async with client.alock(...), and cancellation of a wait."""

import asyncio
import time

import pytest

import dlock

from conftest import generous


def test_alock_takes_and_releases(client, name):
    async def main():
        async with client.alock(name, ttl=5) as lock:
            assert lock.held()
            with pytest.raises(dlock.Busy):
                await client.alock(name, wait=0)
        assert not lock.held()
        lock = await client.alock(name)
        lock.release()

    asyncio.run(main())


def test_cancelling_a_waiting_task_cancels_its_wait(client, name):
    holder = client.lock(name, ttl=10)

    async def main():
        waiter = asyncio.create_task(client.alock(name, wait=None).__aenter__())
        other = asyncio.create_task(asyncio.sleep(0.05))  # the loop is not blocked
        await other
        await asyncio.sleep(0.3)
        start = time.monotonic()
        waiter.cancel()
        try:
            with pytest.raises(asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(waiter), generous(2))
            return time.monotonic() - start
        finally:
            if not waiter.done():  # the wait went on: end it, so the failure shows
                holder.release()
                await asyncio.gather(waiter, return_exceptions=True)

    assert asyncio.run(main()) < generous(0.2)
    # The canceled wait took nothing, and the client waits again afterwards.
    assert client.status(name).fence == holder.fence
    holder.release()

    async def again():
        async with client.alock(name, wait=generous(1)) as lock:
            return lock.fence

    assert asyncio.run(again()) > holder.fence
    assert dlock.live_handles()["lock"] == 0


def test_client_cancel_ends_a_waiting_acquire(client, name):
    import threading
    holder = client.lock(name, ttl=10)
    done = threading.Event()

    def cancel():  # from 0.3 s on, until the wait has begun and ended
        time.sleep(0.3)
        while not done.is_set():
            client.cancel()
            done.wait(0.05)

    canceller = threading.Thread(target=cancel)
    canceller.start()
    start = time.monotonic()
    try:
        with pytest.raises(dlock.Canceled):
            client.lock(name, wait=generous(3))
    finally:
        done.set()
        canceller.join()
    assert 0.3 <= time.monotonic() - start < generous(0.3) + 1
    holder.release()
    client.lock(name, wait=1).release()  # the next wait is not canceled
