"""Redlock: a lock on a majority of independent servers."""

import pytest

import dlock


def test_redlock_holds_with_one_server_of_three_down(servers, name):
    nodes = servers(3)
    with dlock.Client([s.url for s in nodes], node_timeout=0.1) as client:
        nodes[2].stop()
        with client.lock(name, ttl=5) as lock:
            assert lock.held() and lock.fence > 0
            st = client.status(name)
            assert st.held and st.nodes_held == 2 and st.nodes[2].code != 0
            with pytest.raises(dlock.Busy):
                client.lock(name, wait=0)
        nodes[1].stop()
        with pytest.raises(dlock.NoQuorum) as e:
            client.lock(name, wait=0)
        assert nodes[1].url[len("redis://"):] in str(e.value)  # which servers failed


def test_two_servers_are_refused_at_open(servers):
    a, b = servers(2)
    with pytest.raises(dlock.InvalidArgument):
        dlock.Client([a.url, b.url])
