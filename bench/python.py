#!/usr/bin/python3
"""dlock for Python beside redis-py's Lock and the C library, in one run
against one redis-server:

- the binding's cost: the C library's uncontended cycle (bench/c_loop.c,
  loaded into this process), a bare ctypes loop and the binding's cycle, in
  alternating batches of 100 cycles, so that the machine's drift hits them
  alike;
- uncontended: acquire (try once) + release cycles per second of one name
  in one process: the C library (bench/dlock-bench uncontended), the binding
  (renew=False, as the C loop, and with its default renew=True) and
  redis-py's Lock; short rounds interleaved, the median of each;
- contended: 8 and 64 processes take turns on one name for a fixed window
  (each acquire waits at most to the window's end, so the run is bounded):
  handoffs per second and requests per grant (INFO commandstats) of the
  binding (renewed, its default; the default mutex and fair) and of
  redis-py's Lock (its default polling, sleep=0.1, and sleep=0.001).

  /usr/bin/python3 bench/python.py [--build build] [--seconds 2] [--rounds 9] [--json FILE]
"""

import argparse
import ctypes
import json
import multiprocessing
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

SOURCE = pathlib.Path(__file__).resolve().parents[1]
if "--build" in sys.argv[:-1]:  # the library of that build, before dlock is imported
    os.environ["DLOCK_BUILD_DIR"] = sys.argv[sys.argv.index("--build") + 1]
sys.path.insert(0, str(SOURCE / "bindings" / "python" / "tests"))
from conftest import RedisServer  # noqa: E402  (sets DLOCK_LIBRARY, finds the package)

import dlock  # noqa: E402
import redis  # noqa: E402


def c_uncontended(build, port, seconds):
    out = subprocess.run([str(build / "bench" / "dlock-bench"), "uncontended", "--port",
                          str(port), "--seconds", str(seconds)], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)["cycles_per_s"]


def c_loop(build, tmp):
    """bench/c_loop.c built against the build's library, loaded here."""
    so = pathlib.Path(tmp) / "c_loop.so"
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", f"-I{SOURCE / 'include'}", "-o", str(so),
                    str(SOURCE / "bench" / "c_loop.c"), f"-L{build}", "-ldlock",
                    f"-Wl,-rpath,{build}"], check=True)
    lib = ctypes.CDLL(str(so))
    lib.bench_c_cycles.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
    return lib.bench_c_cycles


def alternating(url, c_cycles, seconds, batch=100):
    """The C loop, a bare ctypes loop (the three calls of a cycle made the
    binding's way, untyped, with a reused out-parameter; nothing else: the
    floor of any binding over ctypes) and the binding's loop, in
    alternating batches of `batch` cycles in this process: cycles/s of each."""
    from dlock import _lib
    fast = _lib.get().fast
    clients = [dlock.Client(url) for _ in range(3)]  # a C client each
    c_handle, raw_handle = clients[0]._idle[0].handle, clients[1]._idle[0].handle
    binding = clients[2]
    lock = ctypes.c_void_p()
    out, ttl = ctypes.byref(lock), ctypes.c_int64(30000)

    def c_batch():
        if c_cycles(c_handle, b"bench:c", batch):
            raise RuntimeError("the C loop failed")

    def raw_batch():
        for _ in range(batch):
            fast.acquire(out, raw_handle, b"bench:raw", ttl, None)
            fast.release(lock)
            fast.free(lock)

    def binding_batch():
        for _ in range(batch):
            binding.lock("bench:py", wait=0, renew=False).release()

    batches = {"c-loop": c_batch, "ctypes-floor": raw_batch, "dlock-python": binding_batch}
    spent = dict.fromkeys(batches, 0.0)
    for run in batches.values():  # warm-up
        run()
    n, end = 0, time.perf_counter() + 3 * seconds
    while time.perf_counter() < end:
        for key, run in batches.items():
            t = time.perf_counter()
            run()
            spent[key] += time.perf_counter() - t
        n += batch
    for c in clients:
        c.close()
    return {key: n / s for key, s in spent.items()}


def loop_rate(cycle, seconds):
    for _ in range(200):  # warm-up
        cycle()
    n, start = 0, time.perf_counter()
    end = start + seconds
    while True:
        for _ in range(100):
            cycle()
        n += 100
        now = time.perf_counter()
        if now >= end:
            return n / (now - start)


def py_uncontended(url, seconds, renew):
    with dlock.Client(url) as client:
        return loop_rate(lambda: client.lock("bench:py", wait=0, renew=renew).release(), seconds)


def redis_py_uncontended(port, seconds):
    r = redis.Redis(port=port)

    def cycle():
        lock = r.lock("bench:redis-py", timeout=30)
        lock.acquire(blocking=False)
        lock.release()

    return loop_rate(cycle, seconds)


# The commands each client sends itself (one request each); the GET, SET,
# DEL... inside their scripts are counted by Redis too, and left out.
TOP_LEVEL = {
    "dlock-python": {"evalsha", "eval", "subscribe", "unsubscribe", "script", "script|load"},
    "dlock-python-fair": {"evalsha", "eval", "subscribe", "unsubscribe", "script", "script|load"},
    "redis-py": {"set", "evalsha", "eval", "script", "script|load"},
}


def requests(port, impl):
    stats = redis.Redis(port=port).info("commandstats")
    return sum(v["calls"] for k, v in stats.items()
               if k.removeprefix("cmdstat_") in TOP_LEVEL[impl])


def dlock_worker(url, name, start, end, out, _sleep, fair=False):
    grants = []
    with dlock.Client(url) as client:
        while time.time() < start:
            time.sleep(0.001)
        while (left := end - time.time()) > 0:
            try:
                with client.lock(name, ttl=3, wait=left, fair=fair):
                    grants.append(time.time())
            except dlock.Busy:
                break
            except dlock.Timeout:
                # The try begun as the window ends is given 50 ms; on two
                # cores busy with 64 processes its reply can come later.
                if time.time() < end:
                    raise
                break
    out.put((os.getpid(), grants))


def dlock_fair_worker(url, name, start, end, out, sleep):
    dlock_worker(url, name, start, end, out, sleep, fair=True)


def redis_py_worker(port, name, start, end, out, sleep):
    grants = []
    r = redis.Redis(port=port)
    while time.time() < start:
        time.sleep(0.001)
    while (left := end - time.time()) > 0:
        lock = r.lock(name, timeout=3, sleep=sleep, blocking_timeout=left)
        if not lock.acquire():
            break
        grants.append(time.time())
        lock.release()
    out.put((os.getpid(), grants))


def contended(server, impl, procs, seconds, sleep=0.1):
    """Handoffs (a grant to another process than the previous grant's) per
    second and requests per grant, in a window of `seconds`: each acquire
    waits at most to the window's end, so the run is bounded."""
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    start = time.time() + 0.5 + procs * 0.02  # every process is up by then
    end = start + seconds
    name = f"bench:{impl}:{procs}:{sleep}"
    target, where = {"dlock-python": (dlock_worker, server.url),
                     "dlock-python-fair": (dlock_fair_worker, server.url),
                     "redis-py": (redis_py_worker, server.port)}[impl]
    workers = [ctx.Process(target=target, args=(where, name, start, end, out, sleep))
               for _ in range(procs)]
    for w in workers:
        w.start()
    time.sleep(max(0.0, start - time.time()))
    before = requests(server.port, impl)
    time.sleep(max(0.0, end - time.time()))
    after = requests(server.port, impl)
    grants = []
    for _ in workers:
        pid, times = out.get(timeout=30)
        grants += [(t, pid) for t in times if t <= end]
    for w in workers:
        w.join(timeout=5)
        if w.is_alive():
            w.kill()
    grants.sort()
    handoffs = sum(1 for a, b in zip(grants, grants[1:]) if a[1] != b[1])
    return {"grants_per_s": len(grants) / seconds, "handoffs_per_s": handoffs / seconds,
            "requests_per_grant": (after - before) / max(len(grants), 1)}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default=str(SOURCE / "build"))
    p.add_argument("--seconds", type=float, default=2, help="each contended window")
    p.add_argument("--rounds", type=int, default=9, help="uncontended rounds of 0.5 s each")
    p.add_argument("--json")
    a = p.parse_args()
    build = pathlib.Path(a.build)
    d = tempfile.mkdtemp(prefix="dlock-bench-py-")
    server = RedisServer(pathlib.Path(d))
    try:
        alt = alternating(server.url, c_loop(build, d), a.seconds * 2)
        result = {"alternating_cycles_per_s": alt,
                  "binding_cost": 1 - alt["dlock-python"] / alt["c-loop"],
                  "ctypes_floor_cost": 1 - alt["ctypes-floor"] / alt["c-loop"]}
        rates = {"c": [], "dlock-python": [], "dlock-python-renew": [], "redis-py": []}
        for _ in range(a.rounds):  # short and interleaved: drift hits them alike
            rates["c"].append(c_uncontended(build, server.port, 0.5))
            rates["dlock-python"].append(py_uncontended(server.url, 0.5, False))
            rates["dlock-python-renew"].append(py_uncontended(server.url, 0.5, True))
            rates["redis-py"].append(redis_py_uncontended(server.port, 0.5))
        result["uncontended_cycles_per_s"] = {k: statistics.median(v) for k, v in rates.items()}
        for procs in (8, 64):
            for impl in ("dlock-python", "dlock-python-fair"):
                result[f"contended-{procs}-{impl}"] = contended(server, impl, procs, a.seconds)
            for sleep in (0.1, 0.001):  # redis-py's default poll, and a fast one
                result[f"contended-{procs}-redis-py-sleep-{sleep}"] = contended(
                    server, "redis-py", procs, a.seconds, sleep)
        result["redis"] = server.command("INFO", "server").split("redis_version:")[1].split()[0]
    finally:
        server.stop()
        shutil.rmtree(d, ignore_errors=True)
    text = json.dumps(result, indent=2, sort_keys=True)
    print(text)
    if a.json:
        pathlib.Path(a.json).write_text(text + "\n")


if __name__ == "__main__":
    main()
