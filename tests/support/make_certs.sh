#!/usr/bin/env bash
# make_certs.sh DIR: a test CA; a server certificate for 127.0.0.1, ::1 and
# localhost; one for another host name; a client certificate. All in DIR.
set -euo pipefail
cd "$1"
quiet() { "$@" >/dev/null 2>&1; }
quiet openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=dlock test CA" \
  -keyout ca.key -out ca.crt
issue() { # NAME SUBJECT_ALT_NAMES [extendedKeyUsage]
  quiet openssl req -newkey rsa:2048 -nodes -subj "/CN=$1" -keyout "$1.key" -out "$1.csr"
  printf 'subjectAltName=%s\nextendedKeyUsage=%s\n' "$2" "${3:-serverAuth}" >"$1.ext"
  quiet openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
    -extfile "$1.ext" -out "$1.crt"
}
issue server "IP:127.0.0.1,IP:::1,DNS:localhost"
issue other "DNS:other.example"
issue client "DNS:client.example" clientAuth
