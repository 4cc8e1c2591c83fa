"""dlock: distributed locks on Redis, over libdlock (the C library).

    import dlock
    with dlock.Client("redis://127.0.0.1:6379") as client:
        with client.lock("nightly-report", ttl=30) as lock:
            write_report(fence=lock.fence)

See the package's README for the whole API.
"""

from ._lib import LibraryError, live_handles, load
from .client import Client, Lock
from .errors import (AuthError, Busy, Canceled, Error, InvalidArgument, LimitMismatch, Lost,
                     NoQuorum, NoReplicas, NotOwner, OutOfMemory, Paused, ProtocolError, ServerError,
                     SystemFailure, Timeout, TLSError, Unavailable, WrongType)
from .info import Finding, Holder, NodeStats, NodeStatus, Report, Severity, Stats, Status

__version__ = "0.3.0"


def library_version():
    """The version of the loaded libdlock (loading it if need be)."""
    from . import _lib
    return _lib.get().version_text


__all__ = [
    "AuthError", "Busy", "Canceled", "Client", "Error", "Finding", "Holder", "InvalidArgument",
    "LibraryError", "LimitMismatch", "Lock", "Lost", "NoQuorum", "NoReplicas", "NodeStats",
    "NodeStatus", "NotOwner", "OutOfMemory", "Paused", "ProtocolError", "Report", "ServerError", "Severity",
    "Stats", "Status", "SystemFailure", "TLSError", "Timeout", "Unavailable", "WrongType",
    "library_version", "live_handles", "load",
]
