"""Client and Lock: libdlock's client and lock handles, for Python.

Threads: a C client may be used by one thread at a time. A Client therefore
keeps a pool of C clients and lends one to each lock for the lock's whole
life (its acquire, extends and release), and to each status, list or doctor
call: a Client may be shared by any number of threads and asyncio tasks,
and a waiting acquire never holds up another thread's release. A Lock may
be used from several threads; its calls are serialised.
"""

import atexit
import ctypes
import logging
import os
import threading
import weakref

from . import _args, _lib, errors
from .info import merge_stats, report_from, stats_from, status_from

log = logging.getLogger("dlock")

# Idle C clients a Client keeps for the next lock (more are opened while
# more locks are in flight, and closed when they come back).
DEFAULT_POOL_SIZE = 8


# A fork's child inherits the parent's Clients and Locks, but not the
# library's threads: a release there would end the parent's lock, and a
# close would wait for a renewal thread that is not there. Each Client
# knows the generation it was made in; the child's is one more.
_generation = [0]


def _after_fork_in_child():
    _generation[0] += 1


os.register_at_fork(after_in_child=_after_fork_in_child)


def _parents(what):
    return errors.make(errors.code_of("DLOCK_EINVAL"),
                       message=f"{what} of the parent process: after os.fork(), open a new "
                               "Client in the child")


def _not_copied(self, *_):
    """A Client or Lock stands for handles of the C library: a copy would
    share them, and its release or close would free another's."""
    raise TypeError(f"a dlock {type(self).__name__} cannot be copied or pickled: "
                    + ("open a Client in each process" if isinstance(self, Client) else
                       "pass its name, token and fence instead"))


class _Conn:
    """One C client, lent to one caller at a time, with what each lock it
    is lent to reuses: the out-parameter of the acquire (the lock's handle
    while that lock lives) and the mutex of that lock's calls."""

    __slots__ = ("handle", "tainted", "out", "out_ref", "mutex")

    def __init__(self, handle):
        self.handle = handle
        self.tainted = False  # a cancel may be pending on it: never pooled again
        self.out = ctypes.c_void_p()
        self.out_ref = ctypes.byref(self.out)
        self.mutex = threading.Lock()


class Client:
    """A client of one Redis server, of several (Redlock: a lock on a
    majority of them), of a Sentinel set or of a Cluster, depending on the
    URLs: redis://[[user]:password@]host[:port][/db], rediss:// (TLS),
    unix:///path, redis-sentinel://host[:port][,host...][/db]#name.

    Durations are seconds (floats); None means the library's default.
    Opening checks the options and URLs (InvalidArgument); connections are
    made on first use. Use it as a context manager, or call close().
    """

    __copy__ = __deepcopy__ = __reduce__ = __reduce_ex__ = _not_copied

    def __init__(self, urls="redis://127.0.0.1:6379", *, user=None, password=None,
                 connect_timeout=None, command_timeout=None, node_timeout=None,
                 fence_ttl=None, drift_factor=None, tls=False, tls_ca_file=None,
                 tls_ca_dir=None, tls_cert_file=None, tls_key_file=None, tls_sni=None,
                 tls_insecure=False, replicas=0, restart_delay=None, inspect=False,
                 audit=False, audit_maxlen=None, pool_size=DEFAULT_POOL_SIZE):
        self._lib = _lib.get()
        self._generation = _generation[0]
        self._guard = threading.Lock()
        self._idle = []
        self._open = set()  # every C client not yet closed
        self._waiting = set()  # attempts in a waiting acquire, for cancel()
        self._closed = False
        self._retired = _lib.Stats(min_renewal_margin_ms=-1)  # of C clients closed
        self._pool_size = _args.integer(pool_size, "pool_size", 1, 1024)
        self._options = self._make_options(
            _args.urls(urls), user, password, connect_timeout, command_timeout,
            node_timeout, fence_ttl, drift_factor, tls, tls_ca_file, tls_ca_dir,
            tls_cert_file, tls_key_file, tls_sni, tls_insecure, replicas, restart_delay,
            inspect, audit, audit_maxlen)
        self._idle.append(self._open_conn())
        self.nodes = [self._lib.dlock_client_node_label(self._idle[0].handle, i).decode()
                      for i in range(self._lib.dlock_client_nodes(self._idle[0].handle))]

    def _make_options(self, urls, user, password, connect_timeout, command_timeout,
                      node_timeout, fence_ttl, drift_factor, tls, tls_ca_file, tls_ca_dir,
                      tls_cert_file, tls_key_file, tls_sni, tls_insecure, replicas,
                      restart_delay, inspect, audit, audit_maxlen):
        o = _lib.ClientOptions()
        self._lib.dlock_client_options_init(ctypes.byref(o), _lib.CLIENT_OPTIONS_VERSION)
        # The byte strings must outlive every open: keep them with the struct.
        self._urls = (ctypes.c_char_p * len(urls))(*urls)
        o.urls = self._urls
        o.n_urls = len(urls)
        o.user = _args.optional_text(user, "user")
        o.password = _args.optional_text(password, "password")
        o.connect_timeout_ms = _args.optional_ms(connect_timeout, "connect_timeout")
        o.command_timeout_ms = _args.optional_ms(command_timeout, "command_timeout")
        o.node_timeout_ms = _args.optional_ms(node_timeout, "node_timeout")
        o.fence_ttl_ms = _args.optional_ms(fence_ttl, "fence_ttl", high_ms=_lib.TTL_MAX_MS)
        if drift_factor is not None:
            if not _args.is_number(drift_factor):
                raise TypeError(f"drift_factor must be a number, not {type(drift_factor).__name__}")
            if not 0 < drift_factor < 0.5:  # as the library takes it
                raise ValueError(f"drift_factor must be above 0 and below 0.5, not {drift_factor}")
            o.drift_factor = drift_factor
        o.tls = _args.flag(tls, "tls")
        o.tls_ca_file = _args.path(tls_ca_file, "tls_ca_file")
        o.tls_ca_dir = _args.path(tls_ca_dir, "tls_ca_dir")
        o.tls_cert_file = _args.path(tls_cert_file, "tls_cert_file")
        o.tls_key_file = _args.path(tls_key_file, "tls_key_file")
        o.tls_sni = _args.optional_text(tls_sni, "tls_sni")
        o.tls_insecure = _args.flag(tls_insecure, "tls_insecure")
        o.replicas = _args.integer(replicas, "replicas", 0, _lib.REPLICAS_MAX)
        o.restart_delay_ms = _args.optional_ms(restart_delay, "restart_delay")
        o.inspect = _args.flag(inspect, "inspect")
        # The audit (the project's docs/operations.md): every grant and end
        # of this client's locks in the name's stream, read by `dlock audit`.
        o.audit = _args.flag(audit, "audit")
        if audit_maxlen is not None:
            o.audit_maxlen = _args.integer(audit_maxlen, "audit_maxlen", 1, _lib.AUDIT_MAXLEN_MAX)
        # ctypes keeps the bytes objects assigned to c_char_p fields alive
        # with the structure.
        return o

    def _open_conn(self):
        handle = ctypes.c_void_p()
        why = ctypes.create_string_buffer(256)
        rc = self._lib.dlock_client_open(ctypes.byref(handle), ctypes.byref(self._options),
                                         why, len(why))
        if rc:
            raise errors.make(rc, why.value.decode(errors="replace"))
        _lib.count_handle("client", 1)
        conn = _Conn(handle)  # the c_void_p itself: no conversion at each call
        with self._guard:
            self._open.add(conn)
        return conn

    def _close_conn(self, conn):
        """With the guard held."""
        merge_stats(self._retired, self._c_stats(conn))
        self._open.discard(conn)
        self._lib.dlock_client_close(conn.handle)
        _lib.count_handle("client", -1)

    def _checkout(self):
        if self._generation != _generation[0]:
            raise _parents("a Client")
        with self._guard:
            if self._closed:
                raise errors.make(errors.code_of("DLOCK_EINVAL"), message="the client is closed")
            if self._idle:
                return self._idle.pop()
        return self._open_conn()

    def _checkin(self, conn):
        if not (self._closed or conn.tainted or len(self._idle) >= self._pool_size):
            self._idle.append(conn)  # atomic
            if not self._closed:
                return
            conn = None  # close() ran meanwhile: empty the list again
        with self._guard:
            if conn is not None:
                self._close_conn(conn)
            while self._closed and self._idle:
                self._close_conn(self._idle.pop())

    def _fail(self, conn, rc):
        """The exception for `rc`, with the C client's message; gives the
        C client back."""
        detail = self._lib.dlock_client_errmsg(conn.handle).decode(errors="replace")
        self._checkin(conn)
        return errors.make(rc, detail)

    def close(self):
        """Closes the idle connections. Locks still held keep theirs until
        they are released (or garbage collected); no new lock can be taken.
        Calling it again does nothing. In a fork's child, a Client of the
        parent only forgets its C clients (they are the parent's)."""
        with self._guard:
            self._closed = True
            if self._generation != _generation[0]:
                self._idle.clear()
                self._open.clear()
                return
            while self._idle:
                self._close_conn(self._idle.pop())

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: nothing left to tell
            pass

    def __repr__(self):
        state = "closed" if self._closed else "open"
        return f"<dlock.Client {','.join(self.nodes)} {state}>"

    def lock(self, name, ttl=30, wait=None, permits=None, fair=False, shared=False,
             renew=True, max_hold=None, on_lost=None, lease=None):
        """Takes the lock `name` and returns it (a Lock, usable as a context
        manager that releases it). See Lock for the arguments."""
        if (permits is None and fair is False and shared is False and max_hold is None
                and lease is None and on_lost is None):  # a plain mutex: the short way
            last = _last_plain  # the same objects as last time: the same spec
            if last[0] is ttl and last[1] is wait and last[2] is renew:
                spec = last[3]
            else:
                spec = _plain_spec(ttl, wait, renew)
            if not spec.waiting:  # one try, nothing to cancel, no callback
                try:
                    c_name = _args.names.get(name) or _args.name(name)
                except TypeError:  # unhashable: name() says what is wrong with it
                    c_name = _args.name(name)
                if self._closed or self._generation != _generation[0]:
                    conn = self._checkout()  # raises
                else:
                    try:
                        conn = self._idle.pop()  # atomic; close() empties it under the guard
                    except IndexError:
                        conn = self._checkout()
                rc = self._lib.fast.acquire(conn.out_ref, conn.handle, c_name, spec.c_ttl_ms,
                                            spec.opts_ref)
                if rc:
                    raise self._fail(conn, rc)
                next(_lib.locks_made)
                return Lock(self, conn, name, spec, None)
        else:
            spec = _spec(ttl, wait, permits, fair, shared, renew, max_hold, lease)
        return _Attempt(self, name, spec, on_lost).run()

    def alock(self, name, ttl=30, wait=None, permits=None, fair=False, shared=False,
              renew=True, max_hold=None, on_lost=None, lease=None):
        """The same as lock(), for asyncio: `async with client.alock(...) as
        lock:` or `lock = await client.alock(...)`. The acquire runs on a
        thread of its own; cancelling the task cancels its wait."""
        from .aio import AsyncAcquire
        spec = _spec(ttl, wait, permits, fair, shared, renew, max_hold, lease)
        return AsyncAcquire(_Attempt(self, name, spec, on_lost))

    def cancel(self):
        """Cancels every waiting acquire of this client now in progress: each
        raises Canceled. Safe from any thread."""
        with self._guard:
            waiting = list(self._waiting)
        for attempt in waiting:
            attempt.cancel()

    def _call(self, fn, *args):
        """fn(out, c_client, *args) -> rc; returns out's value."""
        conn = self._checkout()
        out = ctypes.c_void_p()
        rc = fn(ctypes.byref(out), conn.handle, *args)
        if rc:
            raise self._fail(conn, rc)
        self._checkin(conn)
        return out.value

    def status(self, name):
        """What the servers say about `name` (a Status), without a handle."""
        data = _args.name(name)
        handle = self._call(self._lib.dlock_status_query, data)
        _lib.count_handle("status", 1)
        try:
            return status_from(self._lib, handle, data, self.nodes)
        finally:
            self._lib.dlock_status_free(handle)
            _lib.count_handle("status", -1)

    def list(self, pattern=None):
        """The names held by dlock clients (sorted) that match the glob
        `pattern` (None: all), found with SCAN."""
        data = _args.optional_text(pattern, "pattern")
        handle = self._call(self._lib.dlock_list_names, data)
        _lib.count_handle("names", 1)
        try:
            at = self._lib.dlock_names_at
            return [at(handle, i).decode("utf-8", "surrogateescape")
                    for i in range(self._lib.dlock_names_count(handle))]
        finally:
            self._lib.dlock_names_free(handle)
            _lib.count_handle("names", -1)

    def doctor(self, name=None, ttl=30):
        """Can these servers keep a lock? A Report of findings. `name`: the
        prefix of the scratch lock it tries the commands on."""
        data = None if name is None else _args.name(name)
        ttl_ms = _args.ms(ttl, "ttl", _lib.TTL_MIN_MS, _lib.TTL_MAX_MS)
        handle = self._call(self._lib.dlock_doctor, data, ttl_ms)
        _lib.count_handle("report", 1)
        try:
            return report_from(self._lib, handle)
        finally:
            self._lib.dlock_report_free(handle)
            _lib.count_handle("report", -1)

    def _c_stats(self, conn):
        s = _lib.Stats()
        s.version = _lib.STATS_VERSION
        self._lib.dlock_client_stats(conn.handle, ctypes.byref(s))
        return s

    def stats(self):
        """The counters of every C client this Client opened (a Stats)."""
        with self._guard:
            raw = [self._retired] + [self._c_stats(c) for c in self._open]
        return stats_from(raw, len(self.nodes))


# on_lost: one C callback for every lock; its argument is a key into this
# table of the Locks that asked for it.
_lost_table = {}
_lost_next = [0]
_lost_guard = threading.Lock()
_in_callback = threading.local()


class _Watch:
    """What a lock with on_lost has more: the callback, its key in the
    table (whose entry it is), a weak reference to the Lock (a Lock that is
    collected stops its renewal) or the reason of a loss that came before
    the acquire returned, and whether the loss was told."""

    __slots__ = ("on_lost", "key", "ref", "reason", "lost")

    def __init__(self, on_lost):
        self.on_lost = on_lost
        self.ref = None
        self.reason = None
        self.lost = False
        with _lost_guard:
            _lost_next[0] += 1
            self.key = _lost_next[0]
            _lost_table[self.key] = self


def _on_lost(_c_lock, reason, arg):
    watch = _lost_table.get(arg)
    if watch is None:
        return
    with _lost_guard:
        lock = watch.ref() if watch.ref is not None else None
        if lock is None:
            watch.reason = reason
            return
    _tell_lost(lock, reason)


def _tell_lost(lock, reason):
    watch = lock._watch
    watch.lost = True
    _in_callback.active = True
    try:
        watch.on_lost(lock, errors.make(reason))
    except BaseException:  # the renewal thread must go on
        log.exception("dlock: the on_lost callback of %r raised", lock.name)
    finally:
        _in_callback.active = False


def _watch_loss(lock):
    """Fills the lock's entry; tells a loss that came before."""
    watch = lock._watch
    with _lost_guard:
        watch.ref = weakref.ref(lock)
        reason = watch.reason
    if reason is not None:
        _tell_lost(lock, reason)


_on_lost_c = _lib.LOST_FN(_on_lost)


class _Spec:
    """The checked options of client.lock(), as the library takes them.
    Read-only once made, so one may serve many acquisitions at once."""

    __slots__ = ("ttl_ms", "c_ttl_ms", "opts", "opts_ref", "renew", "waiting", "semaphore")

    def __init__(self, ttl, wait, permits, fair, shared, renew, max_hold, lease):
        self.ttl_ms = _args.ms(ttl, "ttl", _lib.TTL_MIN_MS, _lib.TTL_MAX_MS)
        self.c_ttl_ms = ctypes.c_int64(self.ttl_ms)  # as the untyped acquire takes it
        o = self.opts = _lib.AcquireOptions(_lib.ACQUIRE_OPTIONS_VERSION)
        o.wait_ms = _args.wait_ms(wait)
        self.waiting = o.wait_ms != 0
        o.auto_renew = self.renew = _args.flag(renew, "renew")
        o.fair = _args.flag(fair, "fair")
        o.shared = _args.flag(shared, "shared")
        if permits is not None:
            o.permits = _args.integer(permits, "permits", 1, _lib.PERMITS_MAX)
            if o.permits > 1 and (fair or shared):
                raise ValueError("a semaphore (permits > 1) is neither fair nor shared")
        if fair and shared:
            raise ValueError("a lock is fair or shared, not both")
        if lease is not None:
            if not fair and o.permits <= 1:
                raise ValueError("lease is the presence lease of a queued waiter: "
                                 "it needs fair=True or permits > 1")
            o.lease_ms = _args.ms(lease, "lease", _lib.LEASE_MIN_MS, _lib.LEASE_MAX_MS)
        if max_hold is not None:
            o.max_hold_ms = _args.ms(max_hold, "max_hold", 1, _lib.DURATION_MAX_MS)
            if not renew:
                raise ValueError("max_hold limits the renewal: it needs renew=True")
            if o.max_hold_ms < self.ttl_ms:
                raise ValueError("max_hold must not be shorter than the ttl")
        self.semaphore = o.permits > 1
        self.opts_ref = ctypes.byref(o)


# Specs already checked, by their arguments and the arguments' types (so
# that a cached 0 does not let False through): a loop that takes the same
# kind of lock checks its options once.
_specs = {}
_plain_specs = {}  # plain mutexes: by ttl, wait (with their types) and renew
_SPECS_MAX = 256
_NONE = object()  # matches no argument
_last_plain = (_NONE, _NONE, _NONE, None)  # ttl, wait, renew: the objects, and their spec


def _plain_spec(ttl, wait, renew):
    global _last_plain
    key = (ttl, ttl.__class__, wait, wait.__class__, renew, renew.__class__)
    spec = _plain_specs.get(key)
    if spec is None:
        spec = _spec(ttl, wait, None, False, False, renew, None, None)
        if len(_plain_specs) < _SPECS_MAX:
            _plain_specs[key] = spec
    _last_plain = (ttl, wait, renew, spec)  # one store: another thread reads it whole
    return spec


def _spec(ttl, wait, permits, fair, shared, renew, max_hold, lease):
    key = (ttl, type(ttl), wait, type(wait), permits, type(permits), fair, type(fair), shared,
           type(shared), renew, type(renew), max_hold, type(max_hold), lease, type(lease))
    spec = _specs.get(key)
    if spec is None:
        spec = _Spec(ttl, wait, permits, fair, shared, renew, max_hold, lease)
        if len(_specs) >= _SPECS_MAX:
            _specs.clear()
        _specs[key] = spec
    return spec


class _Attempt:
    """One acquisition: its name and spec, and the C client lent to it
    while it runs (and afterwards to the lock it took)."""

    __slots__ = ("client", "name", "c_name", "spec", "on_lost", "conn", "guard", "canceled")

    def __init__(self, client, name, spec, on_lost):
        self.client = client
        self.name = name
        self.c_name = _args.name(name)
        self.spec = spec
        self.on_lost = on_lost
        if on_lost is not None:
            if not callable(on_lost):
                raise TypeError(f"on_lost must be callable, not {type(on_lost).__name__}")
            if not spec.renew:
                raise ValueError("on_lost is called by the renewal: it needs renew=True")
        self.conn = None  # the C client, while its waiting acquire runs
        self.guard = None  # made for a waiting acquire only
        self.canceled = False

    def cancel(self):
        """Safe from any thread: the wait in progress (or the one this
        attempt is about to start) ends with Canceled. The C client's cancel
        outlasts a wait that had just ended: that client is never pooled."""
        self.canceled = True
        guard = self.guard
        if guard is None:  # its wait has not started: it will see `canceled`
            return
        with guard:
            conn = self.conn
            if conn is not None:
                conn.tainted = True
                self.client._lib.dlock_client_cancel(conn.handle)

    def run(self):
        client = self.client
        conn = client._checkout()
        spec = self.spec
        opts = spec.opts_ref
        watch = None
        if self.on_lost is not None:
            watch = _Watch(self.on_lost)
            own = _lib.AcquireOptions.from_buffer_copy(spec.opts)
            own.on_lost = _on_lost_c
            own.on_lost_arg = watch.key
            opts = ctypes.byref(own)
        if spec.waiting:
            self._start_wait(conn)
        try:
            rc = client._lib.fast.acquire(conn.out_ref, conn.handle, self.c_name,
                                          spec.c_ttl_ms, opts)
        finally:
            if spec.waiting:
                self._end_wait()
        if rc:
            if watch is not None:
                _lost_table.pop(watch.key, None)
            raise client._fail(conn, rc)
        next(_lib.locks_made)
        lock = Lock(client, conn, self.name, spec, watch)
        if watch is not None:
            _watch_loss(lock)
        return lock

    def _start_wait(self, conn):
        client = self.client
        with client._guard:
            if self.guard is None:
                self.guard = threading.Lock()
            client._waiting.add(self)
        with self.guard:
            self.conn = conn
        if self.canceled:
            self.cancel()

    def _end_wait(self):
        with self.guard:
            self.conn = None
        with self.client._guard:
            self.client._waiting.discard(self)


# The getters of every Lock against the free of its handle: held for a
# getter's call or the swap of the handle only (never during a free, which
# waits for an on_lost callback in progress, and that may call the getters).
_free_guard = threading.Lock()


class Lock:
    """A lock taken by Client.lock(). As a context manager it releases the
    lock at the end of the block, and raises Lost there if the lock was lost
    on the way (a body's own exception gets a note instead).

    name, ttl (seconds), token (the owner token), fence (the fencing token:
    pass it to the resource, which refuses anything older), slot (a
    semaphore's permit) and attempts do not change. validity and held() say
    whether it is still certainly held (no round trip). Keep a reference
    while you hold it: a Lock that is garbage collected stops its renewal
    and its lock expires after the TTL.
    """

    __slots__ = ("_client", "_conn", "_handle", "_watch", "_spec", "_token", "name", "fence",
                 "slot", "attempts", "__weakref__")

    __copy__ = __deepcopy__ = __reduce__ = __reduce_ex__ = _not_copied

    def __init__(self, client, conn, name, spec, watch):
        lib = client._lib
        handle = conn.out  # the C client's out-parameter, this lock's while it lives
        self._client = client
        self._conn = conn  # its mutex serialises release and extend
        self._handle = handle
        self._watch = watch  # None without on_lost
        self._spec = spec
        self.name = name
        self._token = lib.fast.token(handle)
        self.fence = lib.fast.fence(handle)
        # A mutex's slot is 0, and a single try is one attempt: no call for
        # them on the fast path.
        self.slot = lib.dlock_lock_slot(handle) if spec.semaphore else 0
        self.attempts = lib.dlock_lock_attempts(handle) if spec.waiting else 1

    @property
    def token(self):
        """The owner token: 32 lower-case hex characters."""
        return self._token.decode()

    @property
    def ttl(self):
        """The TTL asked for, in seconds."""
        return self._spec.ttl_ms / 1000

    @property
    def renew(self):
        """Whether the library's renewal thread renews it."""
        return bool(self._spec.renew)

    def __repr__(self):
        state = "held" if self.held() else "not held"
        return f"<dlock.Lock {self.name!r} fence={self.fence} {state}>"

    def _getter(self, fn, gone):
        watch = self._watch
        if watch is not None and watch.lost:
            return gone
        with _free_guard:
            return gone if self._handle is None else fn(self._handle)

    @property
    def validity(self):
        """Seconds the lock is still certainly held; 0 once lost or released."""
        return self._getter(self._client._lib.dlock_lock_validity_ms, 0) / 1000

    def held(self):
        """True while the lock is certainly held: not lost, not released, its
        validity not run out. Safe from any thread, and from on_lost."""
        return bool(self._getter(self._client._lib.dlock_lock_held, 0))

    def _not_in_callback(self, what):
        if self._watch is not None and getattr(_in_callback, "active", False):
            raise RuntimeError(f"{what}() from an on_lost callback: it runs on the renewal thread")

    def extend(self, ttl=None):
        """Sets the TTL to `ttl` seconds (default: the lock's) from now, if
        the lock is still ours; raises NotOwner if it is not. A lock renewed
        automatically (renew=True) cannot be extended by hand."""
        self._not_in_callback("extend")
        ttl_ms = self._spec.ttl_ms if ttl is None else \
            _args.ms(ttl, "ttl", _lib.TTL_MIN_MS, _lib.TTL_MAX_MS)
        if self._client._generation != _generation[0]:
            raise _parents("a lock")
        with self._conn.mutex:
            if self._handle is None:
                raise errors.NotOwner(errors.code_of("DLOCK_ENOTOWNER"), "it was released")
            rc = self._client._lib.dlock_lock_extend(self._handle, ttl_ms)
            if rc:
                detail = self._client._lib.dlock_client_errmsg(self._conn.handle)
                raise errors.make(rc, detail.decode(errors="replace"))

    def release(self):
        """Releases the lock if it is still ours (an atomic compare-and-
        delete) and frees its handle, whatever the outcome: a lock whose
        release failed expires after its TTL. Raises NotOwner (it is not
        ours: it expired or someone else took it), Lost (an auto-renewed lock
        that was lost), or the I/O error."""
        if self._watch is not None:
            self._not_in_callback("release")
        if self._client._generation != _generation[0]:
            raise _parents("a lock")
        conn = self._conn
        conn.mutex.acquire()  # acquire() and release(): half the cost of `with`
        try:
            handle = self._handle
            if handle is None:
                raise errors.NotOwner(errors.code_of("DLOCK_ENOTOWNER"), "it was released")
            rc = self._client._lib.fast.release(handle)
            detail = self._client._lib.dlock_client_errmsg(conn.handle).decode(errors="replace") \
                if rc else ""
            self._free()
        finally:
            conn.mutex.release()
        if rc:
            raise errors.make(rc, detail)

    def _free(self):
        _free_guard.acquire()  # nothing in between can raise
        handle, self._handle = self._handle, None
        _free_guard.release()
        if handle is None:
            return
        self._client._lib.fast.free(handle)
        next(_lib.locks_freed)
        if self._watch is not None:
            _lost_table.pop(self._watch.key, None)
        self._client._checkin(self._conn)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if self._handle is None:
            return False
        if self._client._generation != _generation[0]:
            return False  # a fork's child leaving the block: the lock is the parent's
        try:
            self.release()
        except (errors.NotOwner, errors.Lost) as e:
            lost = errors.Lost(e.code, e.detail, message="the lock was lost before the end of its with block")
            if exc is None:
                raise lost from e
            _note(exc, f"dlock: {lost}")
        except errors.Error as e:
            if exc is None:
                raise
            _note(exc, f"dlock: the release failed: {e}")
        return False

    def __del__(self):
        if self._handle is None:
            return
        if self._client._generation != _generation[0]:
            self._handle = None  # the parent's: its memory is the child's copy
            return
        try:
            with self._conn.mutex:
                self._free()
        except Exception:  # interpreter shutdown: the lock expires by its TTL
            pass


@atexit.register
def _free_watched_locks():
    """At exit, before the interpreter stops running Python code, frees the
    locks that have an on_lost callback: their renewal stops, so no loss is
    told to a callback the shutdown would end halfway (which would leave
    the C lock's free waiting for it for ever). They expire by their TTL,
    as every lock still held at exit does."""
    if _generation[0]:
        return  # a fork's child: the locks are the parent's
    with _lost_guard:
        locks = [w.ref() for w in _lost_table.values() if w.ref is not None]
    for lock in locks:
        if lock is None or lock._handle is None:
            continue
        mutex = lock._conn.mutex
        if mutex.acquire(timeout=1):  # a release in progress on a daemon thread
            try:
                lock._free()
            finally:
                mutex.release()


def _note(exc, text):
    """Adds `text` to the traceback of `exc` (Python 3.11 and later)."""
    if hasattr(exc, "add_note"):
        exc.add_note(text)
