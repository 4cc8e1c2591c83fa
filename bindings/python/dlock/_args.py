"""Checks of the arguments, before anything is sent: TypeError for a value
of the wrong type, ValueError for one out of range. Durations are seconds
(int or float), rounded up to whole milliseconds for the library."""

import math
import os

from . import _lib


def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _seconds(ms_value):
    """A bound in ms as seconds, in full: 2147483.647, not 2.14748e+06."""
    return f"{ms_value / 1000:.3f}".rstrip("0").rstrip(".")


def ms(value, what, low_ms, high_ms):
    """Seconds -> milliseconds, low_ms <= result <= high_ms."""
    if not is_number(value):
        raise TypeError(f"{what} must be a number of seconds, not {type(value).__name__}")
    if math.isnan(value) or math.isinf(value):
        raise ValueError(f"{what} must be a finite number of seconds, not {value}")
    # Compared before the product: 1e306 s in ms is no finite float.
    in_reach = 0 <= value <= high_ms / 1000 + 1
    result = math.ceil(round(value * 1000, 6)) if in_reach else None
    if result is None or result < low_ms or result > high_ms:
        raise ValueError(f"{what} must be {_seconds(low_ms)} to {_seconds(high_ms)} seconds, "
                         f"not {value}")
    return result


def optional_ms(value, what, low_ms=1, high_ms=_lib.DURATION_MAX_MS):
    """None -> 0 (the library's default), else ms()."""
    return 0 if value is None else ms(value, what, low_ms, high_ms)


def wait_ms(wait):
    """None or math.inf: forever; 0: try once; else seconds."""
    if wait is None or (is_number(wait) and wait == math.inf):
        return _lib.WAIT_FOREVER
    return ms(wait, "wait", 0, _lib.DURATION_MAX_MS)


def flag(value, what):
    if not isinstance(value, bool):
        raise TypeError(f"{what} must be True or False, not {type(value).__name__}")
    return int(value)


def integer(value, what, low, high):
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{what} must be an int, not {type(value).__name__}")
    if value < low or value > high:
        raise ValueError(f"{what} must be {low} to {high}, not {value}")
    return value


def text(value, what):
    """A str (or bytes) without NUL, as bytes."""
    if isinstance(value, str):
        data = value.encode("utf-8", "surrogateescape")
    elif isinstance(value, bytes):
        data = value
    else:
        raise TypeError(f"{what} must be str or bytes, not {type(value).__name__}")
    if b"\0" in data:
        raise ValueError(f"{what} must not contain a NUL character")
    return data


def optional_text(value, what):
    return None if value is None else text(value, what)


def path(value, what):
    """None, or a str or os.PathLike file name, as bytes."""
    if value is None:
        return None
    try:
        return text(os.fsencode(value), what)
    except TypeError:
        raise TypeError(f"{what} must be a path, not {type(value).__name__}") from None


# Names already checked, as bytes: a loop on one name encodes it once.
names = {}
_NAMES_MAX = 256


def name(value):
    try:
        data = names.get(value)
    except TypeError:  # unhashable: text() says what is wrong with it
        data = None
    if data is not None:
        return data
    data = text(value, "name")
    if not 1 <= len(data) <= _lib.NAME_MAX:
        raise ValueError(f"a lock name is 1 to {_lib.NAME_MAX} bytes, not {len(data)}")
    if type(value) in (str, bytes):  # not a subclass, whose == may differ
        if len(names) >= _NAMES_MAX:
            names.clear()
        names[value] = data
    return data


def urls(value):
    """One URL (str) or several (a list or tuple of str), as bytes."""
    items = [value] if isinstance(value, (str, bytes)) else value
    if not isinstance(items, (list, tuple)):
        raise TypeError(f"urls must be a URL or a list of URLs, not {type(value).__name__}")
    if not 1 <= len(items) <= _lib.NODES_MAX:
        raise ValueError(f"a client has 1 to {_lib.NODES_MAX} URLs, not {len(items)}")
    return [text(u, "a URL") for u in items]
