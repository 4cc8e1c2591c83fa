"""TLS: the certificate is verified, mutual TLS with a client certificate."""

import subprocess

import pytest

import dlock

from conftest import SOURCE_DIR


@pytest.fixture
def tls_server(servers, tmp_path):
    certs = tmp_path / "certs"
    certs.mkdir()
    subprocess.run([str(SOURCE_DIR / "tests" / "support" / "make_certs.sh"), str(certs)],
                   check=True)
    (server,) = servers(1, certs=certs)
    return server, certs


def test_a_lock_over_mutual_tls(tls_server, name):
    server, certs = tls_server
    url = f"rediss://127.0.0.1:{server.port}"
    with dlock.Client(url, tls_ca_file=certs / "ca.crt", tls_cert_file=certs / "client.crt",
                      tls_key_file=certs / "client.key") as client:
        with client.lock(name, ttl=5) as lock:
            assert lock.held() and lock.fence > 0
    with dlock.Client(url, tls_ca_file=certs / "ca.crt", tls_cert_file=certs / "client.crt",
                      tls_key_file=certs / "client.key", tls_sni="other.example") as client:
        with pytest.raises(dlock.TLSError) as e:  # the name the certificate does not carry
            client.lock(name, wait=0)
        assert e.value.detail
    with dlock.Client(url, tls_ca_file=certs / "ca.crt") as client:  # no client certificate
        with pytest.raises(dlock.Error):
            client.lock(name, wait=0)
