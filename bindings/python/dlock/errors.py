"""One exception per DLOCK_E... code of the C library, in one hierarchy."""

from . import _lib


class Error(Exception):
    """A failure of libdlock. `code` is the C code (a negative DLOCK_E...
    value, see `name`), `detail` the client's detailed message ("" when the
    library gave none). `str()` gives both."""

    def __init__(self, code, detail="", message=None):
        self.code = code
        self.detail = detail
        self.message = message
        lib = _lib.get()
        self.name = lib.dlock_err_name(code).decode()
        text = message or lib.dlock_strerror(code).decode()
        # The detail often says the code's words itself: not twice.
        super().__init__(detail if detail and text in detail else
                         f"{text}: {detail}" if detail else text)

    def __reduce__(self):
        # copy and pickle (a ProcessPoolExecutor's worker that raises)
        # rebuild it from what __init__ took, not from str().
        return (type(self), (self.code, self.detail, self.message))


class InvalidArgument(Error, ValueError):
    """DLOCK_EINVAL: an argument or option the library refused."""


class OutOfMemory(Error, MemoryError):
    """DLOCK_ENOMEM."""


class Busy(Error):
    """DLOCK_EBUSY: held by another owner (at once with wait=0, or until
    the wait ran out)."""


class Unavailable(Error):
    """The servers could not be reached or did not answer: DLOCK_ECONN,
    and the subclasses Timeout, NoQuorum and NoReplicas."""


class Timeout(Unavailable):
    """DLOCK_ETIMEDOUT: a server did not answer in time."""


class NoQuorum(Unavailable):
    """DLOCK_ENOQUORUM: no majority of the servers answered (Redlock)."""


class NoReplicas(Unavailable):
    """DLOCK_ENOREPLICAS: too few replicas acknowledged the write."""


class NotOwner(Error):
    """DLOCK_ENOTOWNER: someone else holds the lock, or it is gone."""


class Lost(Error):
    """DLOCK_ELOST, and a lock found lost when its `with` block ends."""


class Paused(Lost):
    """DLOCK_EPAUSED: the lock's validity ran out while the process was not
    running (stopped, or a paused VM), so no renewal could be sent in time."""


class ProtocolError(Error):
    """DLOCK_EPROTO: the server's reply made no sense."""


class ServerError(Error):
    """DLOCK_ESERVER: the server replied with an error."""


class AuthError(Error):
    """DLOCK_EAUTH: authentication or permission failure."""


class TLSError(Error):
    """DLOCK_ETLS."""


class Canceled(Error):
    """DLOCK_ECANCELED: the wait was canceled (Client.cancel())."""


class WrongType(Error):
    """DLOCK_EWRONGTYPE: the key holds another type, or a lock of another kind."""


class LimitMismatch(Error):
    """DLOCK_ELIMIT: the semaphore's permits in force are another number."""


class SystemFailure(Error):
    """DLOCK_ESYSTEM: a system call failed."""


CLASSES = {
    "DLOCK_EINVAL": InvalidArgument,
    "DLOCK_ENOMEM": OutOfMemory,
    "DLOCK_EBUSY": Busy,
    "DLOCK_ETIMEDOUT": Timeout,
    "DLOCK_ENOTOWNER": NotOwner,
    "DLOCK_ELOST": Lost,
    "DLOCK_ENOQUORUM": NoQuorum,
    "DLOCK_ECONN": Unavailable,
    "DLOCK_EPROTO": ProtocolError,
    "DLOCK_ESERVER": ServerError,
    "DLOCK_EAUTH": AuthError,
    "DLOCK_ETLS": TLSError,
    "DLOCK_ECANCELED": Canceled,
    "DLOCK_EWRONGTYPE": WrongType,
    "DLOCK_ESYSTEM": SystemFailure,
    "DLOCK_ELIMIT": LimitMismatch,
    "DLOCK_ENOREPLICAS": NoReplicas,
    "DLOCK_EPAUSED": Paused,
}

_by_code = {}


def error_class(code):
    """The exception class of a C code (Error for a code it does not know)."""
    cls = _by_code.get(code)
    if cls is None:
        cls = CLASSES.get(_lib.get().dlock_err_name(code).decode(), Error)
        _by_code[code] = cls
    return cls


def make(code, detail="", message=None):
    return error_class(code)(code, detail, message)


def code_of(name):
    """The C code named `name` ("DLOCK_EBUSY"), from the library's table."""
    lib = _lib.get()
    for code in range(-1, -64, -1):
        if lib.dlock_err_name(code).decode() == name:
            return code
    raise KeyError(name)
