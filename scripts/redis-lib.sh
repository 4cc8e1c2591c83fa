# Sourced by scripts/demo and scripts/bench: a throwaway redis-server on a
# free loopback port, stopped by pid.
#   start_redis DIR    sets REDIS_PORT and REDIS_PID
#   stop_redis

port_is_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Tries one port: 0 once the server answers, 1 if it exited (port taken).
try_redis_port() {
  local dir=$1 port=$2
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" \
    --logfile "$dir/redis-$port.log" --daemonize no &
  REDIS_PID=$!
  for _ in $(seq 200); do
    redis-cli -p "$port" ping >/dev/null 2>&1 && return 0
    kill -0 "$REDIS_PID" 2>/dev/null || break
    sleep 0.05
  done
  kill "$REDIS_PID" 2>/dev/null || true
  wait "$REDIS_PID" 2>/dev/null || true
  REDIS_PID=""
  return 1
}

start_redis() {
  local dir=$1 port
  # Below Linux's ephemeral range (32768-60999), so that no client socket of
  # the tests holds the port; and a port taken all the same is retried.
  for _ in $(seq 10); do
    port=$((20000 + RANDOM % 12000))
    port_is_free "$port" || continue
    if try_redis_port "$dir" "$port"; then
      REDIS_PORT=$port
      return 0
    fi
  done
  echo "redis-server did not start (see $dir/redis-*.log)" >&2
  return 1
}

stop_redis() {
  if [ -n "${REDIS_PID:-}" ]; then
    kill "$REDIS_PID" 2>/dev/null || true
    wait "$REDIS_PID" 2>/dev/null || true
    REDIS_PID=""
  fi
}
