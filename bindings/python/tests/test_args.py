"""Wrong arguments raise TypeError or ValueError before anything is sent:
the client points at a port where no server listens, so a call that went
out would raise Unavailable instead."""

import math

import pytest

import dlock
from dlock import _args

NOWHERE = "redis://127.0.0.1:9"


@pytest.fixture
def offline():
    with dlock.Client(NOWHERE, connect_timeout=0.2) as c:
        yield c


BAD_LOCKS = [
    (TypeError, dict(name=42)),
    (ValueError, dict(name="")),
    (ValueError, dict(name="x" * 1025)),
    (ValueError, dict(name="a\0b")),
    (TypeError, dict(ttl="30")),
    (TypeError, dict(ttl=True)),
    (TypeError, dict(ttl=None)),
    (ValueError, dict(ttl=0)),
    (ValueError, dict(ttl=0.001)),
    (ValueError, dict(ttl=-1)),
    (ValueError, dict(ttl=math.nan)),
    (ValueError, dict(ttl=1e10)),
    (ValueError, dict(ttl=1e306)),  # no finite number of milliseconds
    (ValueError, dict(wait=1e306)),
    (ValueError, dict(max_hold=1e306)),
    (ValueError, dict(wait=-1)),
    (TypeError, dict(wait="forever")),
    (TypeError, dict(permits=2.0)),
    (ValueError, dict(permits=0)),
    (ValueError, dict(permits=1025)),
    (ValueError, dict(permits=2, fair=True)),
    (ValueError, dict(permits=2, shared=True)),
    (ValueError, dict(fair=True, shared=True)),
    (TypeError, dict(fair=1)),
    (TypeError, dict(renew="yes")),
    (TypeError, dict(ttl=None, wait=None, renew=None)),
    (ValueError, dict(renew=False, max_hold=60)),
    (ValueError, dict(ttl=30, max_hold=10)),
    (ValueError, dict(lease=1)),
    (ValueError, dict(permits=1, lease=1)),
    (ValueError, dict(fair=True, lease=0.001)),
    (ValueError, dict(permits=2, lease=3601)),
    (TypeError, dict(on_lost=3)),
]


@pytest.mark.parametrize("error,kwargs", BAD_LOCKS, ids=[repr(k) for _, k in BAD_LOCKS])
def test_a_bad_lock_argument_is_refused_before_any_call(offline, error, kwargs):
    kwargs.setdefault("name", "n")
    with pytest.raises(error):
        offline.lock(**kwargs)
    with pytest.raises(error):
        offline.alock(**kwargs)
    stats = offline.stats()
    assert stats.nodes[0].errors == 0 and stats.acquisitions == 0


def test_a_checked_argument_lets_no_lookalike_through(offline):
    """True == 1 and 0 == False in Python: the options checked once are
    not taken for those of another type."""
    with pytest.raises(dlock.Unavailable):
        offline.lock("n", ttl=1, wait=0, renew=True)
    for bad in (dict(ttl=True, wait=0), dict(ttl=1, wait=False), dict(ttl=1, wait=0, renew=1)):
        with pytest.raises(TypeError):
            offline.lock("n", **bad)
    for bad in (["n"], 42, bytearray(b"n")):  # a name checked once lets no other kind through
        with pytest.raises(TypeError):
            offline.lock(bad, ttl=1, wait=0, renew=True)


def test_a_good_argument_does_go_out(offline):
    with pytest.raises(dlock.Unavailable):
        offline.lock("n", wait=0)
    assert offline.stats().nodes[0].errors > 0  # what the checks above look at


BAD_CLIENTS = [
    (TypeError, dict(urls=42)),
    (ValueError, dict(urls=[])),
    (ValueError, dict(urls=[NOWHERE] * 16)),
    (TypeError, dict(urls=[NOWHERE, 3, NOWHERE])),
    (ValueError, dict(urls="redis://\0")),
    (dlock.InvalidArgument, dict(urls="http://example.org")),
    (TypeError, dict(password=12)),
    (TypeError, dict(connect_timeout="1")),
    (ValueError, dict(command_timeout=0)),
    (ValueError, dict(drift_factor=1.5)),
    (ValueError, dict(drift_factor=0.5)),
    (TypeError, dict(tls="yes")),
    (TypeError, dict(tls_ca_file=3)),
    (ValueError, dict(replicas=-1)),
    (TypeError, dict(bogus=1)),
]


@pytest.mark.parametrize("error,kwargs", BAD_CLIENTS, ids=[repr(k) for _, k in BAD_CLIENTS])
def test_a_bad_client_option_is_refused(error, kwargs):
    kwargs.setdefault("urls", NOWHERE)
    with pytest.raises(error):
        dlock.Client(**kwargs)


def test_bad_arguments_of_the_other_calls(offline):
    with pytest.raises(TypeError):
        offline.status(None)
    with pytest.raises(TypeError):
        offline.list(3)
    with pytest.raises(ValueError):
        offline.doctor(ttl=0)
    with pytest.raises(TypeError):
        offline.alock("n", bogus=1)
    assert offline.stats().nodes[0].errors == 0


def test_a_closed_client_refuses_as_an_invalid_argument():
    c = dlock.Client(NOWHERE)
    c.close()
    for call in (lambda: c.lock("n", wait=0), lambda: c.lock("n", wait=5),
                 lambda: c.status("n"), lambda: c.list()):
        with pytest.raises(dlock.InvalidArgument, match="the client is closed"):
            call()


def test_a_range_error_says_its_bounds_in_full():
    with pytest.raises(ValueError, match=r"ttl must be 0\.001 to 2147483\.647 seconds, not 3000000.0"):
        _args.ms(3e6, "ttl", 1, 2147483647)


def test_an_error_says_the_code_s_words_once(client, name):
    with client.lock(name, ttl=30):
        with pytest.raises(dlock.Busy) as e:
            client.lock(name, wait=0)
    assert str(e.value).count("held by another owner") == 1
