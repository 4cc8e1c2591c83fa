"""The C ABI of libdlock.so.1, mirrored with ctypes.

Everything here follows include/dlock.h field by field; the tests compile a
program against the header and compare every size and offset with these
structures, so a change of the header cannot go unnoticed.
"""

import ctypes
import itertools
import os
import threading

# Versions of the library this binding was written against: (major, minor).
# A library of another minor version (0.x) may have other structures.
KNOWN_VERSIONS = ((0, 3),)
SONAME = "libdlock.so.1"

CLIENT_OPTIONS_VERSION = 1
ACQUIRE_OPTIONS_VERSION = 1
STATS_VERSION = 1

NAME_MAX = 1024
TTL_MIN_MS = 10
TTL_MAX_MS = 2147483647
DURATION_MAX_MS = 3153600000000
TOKEN_LEN = 32
NODES_MAX = 15
PERMITS_MAX = 1024
LEASE_MIN_MS = 30
LEASE_MAX_MS = 3600000
REPLICAS_MAX = 1000
AUDIT_MAXLEN_MAX = 10000000
WAIT_FOREVER = -1

c_char_p = ctypes.c_char_p
c_int64 = ctypes.c_int64
c_uint64 = ctypes.c_uint64
c_int = ctypes.c_int
c_unsigned = ctypes.c_uint
c_size_t = ctypes.c_size_t
c_void_p = ctypes.c_void_p


class ClientOptions(ctypes.Structure):
    _fields_ = [
        ("version", c_unsigned),
        ("urls", ctypes.POINTER(c_char_p)),
        ("n_urls", c_size_t),
        ("user", c_char_p),
        ("password", c_char_p),
        ("connect_timeout_ms", c_int64),
        ("command_timeout_ms", c_int64),
        ("node_timeout_ms", c_int64),
        ("fence_ttl_ms", c_int64),
        ("drift_factor", ctypes.c_double),
        ("tls", c_int),
        ("tls_ca_file", c_char_p),
        ("tls_ca_dir", c_char_p),
        ("tls_cert_file", c_char_p),
        ("tls_key_file", c_char_p),
        ("tls_sni", c_char_p),
        ("tls_insecure", c_int),
        ("inspect", c_int),
        ("replicas", c_int),
        ("restart_delay_ms", c_int64),
        ("metrics_names_max", c_unsigned),
        ("audit", c_int),
        ("audit_maxlen", c_unsigned),
    ]


# void (*dlock_lost_fn)(dlock_lock *lock, int reason, void *arg)
LOST_FN = ctypes.CFUNCTYPE(None, c_void_p, c_int, c_void_p)
# void (*dlock_retry_fn)(int code, const char *detail, int64_t retry_in_ms, void *arg)
RETRY_FN = ctypes.CFUNCTYPE(None, c_int, c_char_p, c_int64, c_void_p)


class AcquireOptions(ctypes.Structure):
    _fields_ = [
        ("version", c_unsigned),
        ("wait_ms", c_int64),
        ("backoff_max_ms", c_int64),
        ("no_io_retry", c_int),
        ("auto_renew", c_int),
        ("max_hold_ms", c_int64),
        ("on_lost", LOST_FN),
        ("on_lost_arg", c_void_p),
        ("permits", c_unsigned),
        ("fair", c_int),
        ("lease_ms", c_int64),
        ("shared", c_int),
        ("on_retry", RETRY_FN),
        ("on_retry_arg", c_void_p),
    ]


class Holder(ctypes.Structure):
    _fields_ = [
        ("host", c_char_p),
        ("pid", ctypes.c_long),
        ("since_ms", c_int64),
        ("ttl_ms", c_int64),
        ("slot", c_unsigned),
        ("fence", c_uint64),
    ]


class NodeStatus(ctypes.Structure):
    _fields_ = [
        ("code", c_int),
        ("error", c_char_p),
        ("held", c_int),
        ("ttl_ms", c_int64),
        ("fence", c_uint64),
    ]


class Finding(ctypes.Structure):
    _fields_ = [
        ("id", c_char_p),
        ("severity", c_int),
        ("server", c_char_p),
        ("evidence", c_char_p),
        ("fix", c_char_p),
        ("offset_ms", c_int64),
    ]


class NodeStats(ctypes.Structure):
    _fields_ = [("errors", c_uint64), ("timeouts", c_uint64)]


class Stats(ctypes.Structure):
    _fields_ = [
        ("version", c_unsigned),
        ("acquisitions", c_uint64),
        ("busy", c_uint64),
        ("waits", c_uint64),
        ("wait_ms", c_int64),
        ("renewals", c_uint64),
        ("min_renewal_margin_ms", c_int64),
        ("losses", c_uint64),
        ("nodes", c_size_t),
        ("node", NodeStats * NODES_MAX),
    ]


# The structures the tests compare with the header: Python name -> C type.
STRUCTS = {
    "dlock_client_options": ClientOptions,
    "dlock_acquire_options": AcquireOptions,
    "dlock_holder": Holder,
    "dlock_node_status": NodeStatus,
    "dlock_finding": Finding,
    "dlock_node_stats": NodeStats,
    "dlock_stats": Stats,
}

_P = c_void_p
_PP = ctypes.POINTER(c_void_p)

# name: (restype, argtypes)
PROTOTYPES = {
    "dlock_version": (c_char_p, []),
    "dlock_strerror": (c_char_p, [c_int]),
    "dlock_err_name": (c_char_p, [c_int]),
    "dlock_client_options_init": (c_int, [ctypes.POINTER(ClientOptions), c_unsigned]),
    "dlock_client_open": (c_int, [_PP, ctypes.POINTER(ClientOptions), ctypes.c_char_p, c_size_t]),
    "dlock_client_close": (None, [_P]),
    "dlock_client_errmsg": (c_char_p, [_P]),
    "dlock_client_cancel": (None, [_P]),
    "dlock_client_nodes": (c_size_t, [_P]),
    "dlock_client_node_label": (c_char_p, [_P, c_size_t]),
    "dlock_client_stats": (c_int, [_P, ctypes.POINTER(Stats)]),
    "dlock_acquire_options_init": (c_int, [ctypes.POINTER(AcquireOptions), c_unsigned]),
    "dlock_lock_acquire": (c_int, [_PP, _P, c_char_p, c_int64, ctypes.POINTER(AcquireOptions)]),
    "dlock_lock_release": (c_int, [_P]),
    "dlock_lock_extend": (c_int, [_P, c_int64]),
    "dlock_lock_validity_ms": (c_int64, [_P]),
    "dlock_lock_held": (c_int, [_P]),
    "dlock_lock_attempts": (c_unsigned, [_P]),
    "dlock_lock_token": (c_char_p, [_P]),
    "dlock_lock_name": (c_char_p, [_P]),
    "dlock_lock_fence": (c_uint64, [_P]),
    "dlock_lock_slot": (c_unsigned, [_P]),
    "dlock_lock_free": (None, [_P]),
    "dlock_status_query": (c_int, [_PP, _P, c_char_p]),
    "dlock_status_held": (c_int, [_P]),
    "dlock_status_ttl_ms": (c_int64, [_P]),
    "dlock_status_fence": (c_uint64, [_P]),
    "dlock_status_holders": (c_size_t, [_P]),
    "dlock_status_holder": (ctypes.POINTER(Holder), [_P, c_size_t]),
    "dlock_status_limit": (c_unsigned, [_P]),
    "dlock_status_shared": (c_int, [_P]),
    "dlock_status_nodes_answered": (c_unsigned, [_P]),
    "dlock_status_nodes_held": (c_unsigned, [_P]),
    "dlock_status_node": (ctypes.POINTER(NodeStatus), [_P, c_size_t]),
    "dlock_status_free": (None, [_P]),
    "dlock_list_names": (c_int, [_PP, _P, c_char_p]),
    "dlock_names_count": (c_size_t, [_P]),
    "dlock_names_at": (c_char_p, [_P, c_size_t]),
    "dlock_names_free": (None, [_P]),
    "dlock_doctor": (c_int, [_PP, _P, c_char_p, c_int64]),
    "dlock_report_count": (c_size_t, [_P]),
    "dlock_report_finding": (ctypes.POINTER(Finding), [_P, c_size_t]),
    "dlock_report_worst": (c_int, [_P]),
    "dlock_report_free": (None, [_P]),
}


class LibraryError(ImportError):
    """libdlock.so.1 cannot be loaded, or is a version this binding does not know."""


def parse_version(text):
    """(major, minor, patch) of "0.2.0", or None."""
    parts = text.split(".")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        return None
    return tuple(int(p) for p in parts)


def open_library(path):
    """Loads the library at `path` (a file, or a name for the dynamic
    loader), checks its version and declares every function's types."""
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise LibraryError(f"cannot load {path}: {e}") from None
    if not hasattr(lib, "dlock_version"):
        raise LibraryError(f"{path} is not libdlock (no dlock_version)")
    lib.dlock_version.restype = c_char_p
    lib.dlock_version.argtypes = []
    text = lib.dlock_version().decode("ascii", "replace")
    version = parse_version(text)
    if version is None or version[:2] not in KNOWN_VERSIONS:
        known = ", ".join(f"{a}.{b}.x" for a, b in KNOWN_VERSIONS)
        raise LibraryError(f"{path} is libdlock {text}; this binding knows {known}")
    for name, (restype, argtypes) in PROTOTYPES.items():
        try:
            fn = getattr(lib, name)
        except AttributeError:
            raise LibraryError(f"{path} (libdlock {text}) has no {name}") from None
        fn.restype = restype
        fn.argtypes = argtypes
    lib.fast = Fast(lib)
    lib.version_text = text
    return lib


class Fast:
    """The calls of a lock's cycle, as second function objects without
    argtypes: ctypes then passes the arguments as they are instead of
    converting each at every call, which halves the cost of an acquire. The
    binding gives them only arguments of the exact C type: c_void_p handles,
    bytes, a c_int64, byref() of a c_void_p or of the options.

    token and fence, read once after each acquire, only read a field of the
    handle (no lock, no I/O: the header lets on_lost call them): they keep
    the GIL (PyDLL), which saves letting it go and taking it back."""

    __slots__ = ("acquire", "release", "free", "token", "fence")

    def __init__(self, lib):
        keeps_gil = ctypes.PyDLL(lib._name, handle=lib._handle)  # the same library
        for attr in self.__slots__:
            name = "dlock_lock_" + attr
            # A new function object each: lib's own keeps its argtypes.
            fn = (keeps_gil if attr in ("token", "fence") else lib)[name]
            fn.restype = PROTOTYPES[name][0]
            setattr(self, attr, fn)


def library_path():
    """Where the library is taken from: $DLOCK_LIBRARY (a file), else the
    system's dynamic loader (its SONAME)."""
    return os.environ.get("DLOCK_LIBRARY") or SONAME


_loaded = None
_loading = threading.Lock()


def get():
    """The loaded library, loaded on first use."""
    global _loaded
    if _loaded is None:
        with _loading:
            if _loaded is None:
                _loaded = open_library(library_path())
    return _loaded


def load(path=None):
    """Loads the library from `path` (default: $DLOCK_LIBRARY, else the
    system's) before any other use; returns its version string. Loading
    another library once one is in use is refused."""
    global _loaded
    with _loading:
        wanted = path or library_path()
        if _loaded is None:
            _loaded = open_library(wanted)
        elif _loaded._name != wanted:
            raise LibraryError(f"libdlock is already loaded from {_loaded._name}")
    return _loaded.version_text


# Live C handles of each kind, for the tests' leak check: counters of the
# handles made and freed (next() on an itertools.count is atomic, so no
# lock on the fast path).
_KINDS = ("client", "lock", "status", "names", "report")
_made = {k: itertools.count() for k in _KINDS}
_freed = {k: itertools.count() for k in _KINDS}
# A lock's cycle counts with next() on these directly.
locks_made = _made["lock"]
locks_freed = _freed["lock"]


def count_handle(kind, delta):
    next(_made[kind] if delta > 0 else _freed[kind])


def _value(counter):
    return int(repr(counter)[len("count("):-1])


def live_handles():
    """How many C handles of each kind the binding holds now."""
    return {k: _value(_made[k]) - _value(_freed[k]) for k in _KINDS}
