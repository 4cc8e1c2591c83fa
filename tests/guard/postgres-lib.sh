# shellcheck shell=bash
# Sourced by the guard tests: a throwaway PostgreSQL cluster in a temporary
# folder, on a free loopback port, run by an unprivileged user (PostgreSQL
# refuses to run as root: as root, the cluster belongs to `nobody`), stopped
# by pid.
#   start_postgres DIR   sets PG_PORT, PG_PID and PSQL (psql with the
#                        connection's options, as the superuser `dlock`)
#   stop_postgres

# Debian's postgresql packages keep the server's programs out of PATH.
pg_bindir() {
  local dir
  dir=$(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
  if [ -z "$dir" ] || [ ! -x "$dir/initdb" ]; then
    echo "no PostgreSQL server found under /usr/lib/postgresql (scripts/deps postgresql)" >&2
    return 1
  fi
  echo "$dir"
}

# What runs a command as the cluster's owner. setpriv execs the command, so
# that $! of a server started in the background is the server's pid.
pg_owner() {
  PG_OWNER=()
  [ "$(id -u)" -eq 0 ] && PG_OWNER=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
  return 0
}

start_postgres() {
  local dir=$1/pg bin port
  bin=$(pg_bindir) || return 1
  pg_owner
  mkdir -p "$dir"
  if [ "$(id -u)" -eq 0 ]; then
    chmod 755 "$1"
    chown nobody:nogroup "$dir"
  fi
  "${PG_OWNER[@]}" "$bin/initdb" -D "$dir/data" -U dlock --auth=trust --no-sync -E UTF8 \
    --locale=C >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; return 1; }
  for _ in $(seq 10); do
    port=$((20000 + RANDOM % 12000))
    port_is_free "$port" || continue
    "${PG_OWNER[@]}" "$bin/postgres" -D "$dir/data" -p "$port" -c listen_addresses=127.0.0.1 \
      -c unix_socket_directories="$dir" -c fsync=off -c max_connections=60 \
      >"$dir/postgres-$port.log" 2>&1 &
    PG_PID=$!
    for _ in $(seq 400); do
      if "$bin/pg_isready" -q -h 127.0.0.1 -p "$port"; then
        PG_PORT=$port
        # shellcheck disable=SC2034 # for the caller
        PSQL="psql -X -q -h 127.0.0.1 -p $PG_PORT -U dlock -d postgres -v ON_ERROR_STOP=1"
        return 0
      fi
      kill -0 "$PG_PID" 2>/dev/null || break
      sleep 0.05
    done
    stop_postgres
  done
  echo "postgres did not start (see $dir/postgres-*.log)" >&2
  return 1
}

# Fast shutdown (SIGINT): open sessions are ended.
stop_postgres() {
  if [ -n "${PG_PID:-}" ]; then
    kill -INT "$PG_PID" 2>/dev/null || true
    wait "$PG_PID" 2>/dev/null || true
    PG_PID=""
  fi
}
