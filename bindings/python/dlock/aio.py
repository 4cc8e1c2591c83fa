"""asyncio: a blocking acquire on a thread of its own, cancelled through the
library's cancel when the task is cancelled."""

import asyncio
import threading


class AsyncAcquire:
    """What Client.alock() returns: `async with` it, or await it."""

    def __init__(self, attempt):
        self._attempt = attempt
        self._lock = None

    def __await__(self):
        return self._acquire().__await__()

    async def __aenter__(self):
        self._lock = await self._acquire()
        return self._lock

    async def __aexit__(self, exc_type, exc, tb):
        lock, self._lock = self._lock, None
        return await asyncio.to_thread(lock.__exit__, exc_type, exc, tb)

    async def _acquire(self):
        loop = asyncio.get_running_loop()
        done = loop.create_future()

        def deliver(result, error):
            if not done.cancelled():
                if error is None:
                    done.set_result(result)
                else:
                    done.set_exception(error)

        def run():
            try:
                result, error = self._attempt.run(), None
            except BaseException as e:  # handed to the task
                result, error = None, e
            loop.call_soon_threadsafe(deliver, result, error)

        # Not the loop's default executor: a few long waits would fill it.
        threading.Thread(target=run, name="dlock-acquire", daemon=True).start()
        try:
            return await asyncio.shield(done)
        except asyncio.CancelledError:
            self._attempt.cancel()
            await self._after_cancel(done)
            raise

    @staticmethod
    async def _after_cancel(done):
        """The wait ends soon after the cancel; a lock it took all the same
        (it came just before the cancel) is released."""
        while not done.done():
            try:
                await asyncio.shield(done)
            except asyncio.CancelledError:
                continue
            except Exception:
                return
        if done.exception() is None:
            lock = done.result()
            try:
                await asyncio.to_thread(lock.release)
            except Exception:  # it expires by its TTL
                pass
