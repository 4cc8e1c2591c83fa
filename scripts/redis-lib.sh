# Sourced by scripts/demo and scripts/bench: a throwaway redis-server on a
# free loopback port, stopped by pid.
#   start_redis DIR    sets REDIS_PORT and REDIS_PID
#   stop_redis

port_is_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

start_redis() {
  local dir=$1 port
  for _ in $(seq 50); do
    port=$((20000 + RANDOM % 40000))
    port_is_free "$port" && break
  done
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" \
    --logfile "$dir/redis-$port.log" --daemonize no &
  REDIS_PID=$!
  REDIS_PORT=$port
  for _ in $(seq 200); do
    redis-cli -p "$port" ping >/dev/null 2>&1 && return 0
    sleep 0.05
  done
  echo "redis-server did not start (see $dir/redis-$port.log)" >&2
  return 1
}

stop_redis() {
  if [ -n "${REDIS_PID:-}" ]; then
    kill "$REDIS_PID" 2>/dev/null || true
    wait "$REDIS_PID" 2>/dev/null || true
    REDIS_PID=""
  fi
}
