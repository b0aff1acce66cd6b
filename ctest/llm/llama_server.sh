#!/usr/bin/env bash
# CTest fixture for the `llm` tests: starts or stops a local llama-server (llama.cpp) with
# SmolLM2-135M-Instruct, as installed by .ci/setup-llm into $KBRL_LLM_HOME (default
# ~/.cache/kbrl/llm).
#   llama_server.sh start STATE_DIR   picks a free port on 127.0.0.1, starts the server there, waits
#                                     (bounded) for GET /health, writes STATE_DIR/url and
#                                     STATE_DIR/pid; the server logs to STATE_DIR/server.log.
#                                     Without a server binary or model it writes nothing and exits 0:
#                                     the llm tests then report skipped (or fail under
#                                     KBRL_REQUIRE_LLM=1).
#   llama_server.sh start STATE_DIR MODEL [ARGS...]
#                                     the same with another GGUF file and extra server arguments
#                                     (the parity test's float32 copy: -ctk f32 -ctv f32 -fa off).
#   llama_server.sh stop STATE_DIR    stops the server started there (bounded) and removes url/pid.
# Reproducibility: one slot (-np 1), prompt caching off (--no-cache-prompt, --cache-ram 0) so that
# every request evaluates its prompt the same way, whatever ran before it; every request sends its
# own seed. Threads: $KBRL_LLM_THREADS, default 1. On the 2-core build machine, busy with other
# work, two threads spin-wait for each other and generation collapsed to 2-20 tokens/s, against
# 60-75 tokens/s (and 220 prompt tokens/s) with one.
set -uo pipefail
action=${1:-}
state=${2:-}
if [ -z "$action" ] || [ -z "$state" ]; then
  echo "usage: $0 start|stop STATE_DIR" >&2
  exit 2
fi
home=${KBRL_LLM_HOME:-$HOME/.cache/kbrl/llm}
server="$home/bin/llama-server"
model="$home/models/SmolLM2-135M-Instruct.Q4_1.gguf"
extra=()
if [ $# -ge 3 ]; then
  model=$3
  extra=("${@:4}")
fi
say() { echo "llama_server.sh: $*"; }

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

stop_pid() {  # stop_pid PID: TERM, wait up to 10 s, then KILL
  local pid=$1 i
  kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null
  for i in $(seq 1 100); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  say "pid $pid did not stop in 10 s; killing it"
  kill -KILL "$pid" 2>/dev/null
  sleep 0.2
  return 0
}

case "$action" in
  start)
    mkdir -p "$state"
    rm -f "$state/url" "$state/pid"
    if [ ! -x "$server" ] || [ ! -s "$model" ]; then
      say "no llama-server or model under $home (run .ci/setup-llm): the llm tests will report skipped"
      exit 0
    fi
    command -v curl >/dev/null || { say "curl is needed to wait for the server"; exit 1; }
    for attempt in 1 2 3; do
      port=""
      for i in $(seq 1 50); do
        p=$(( 20000 + (RANDOM * 32768 + RANDOM) % 40000 ))
        if ! port_in_use "$p"; then port=$p; break; fi
      done
      [ -n "$port" ] || { say "found no free port"; exit 1; }
      url="http://127.0.0.1:$port"
      "$server" --host 127.0.0.1 --port "$port" -m "$model" -c 4096 -np 1 --threads "${KBRL_LLM_THREADS:-1}" \
        --no-cache-prompt --cache-ram 0 --no-webui --seed 1 "${extra[@]}" \
        >"$state/server.log" 2>&1 </dev/null &
      pid=$!
      for i in $(seq 1 600); do  # 60 s
        if ! kill -0 "$pid" 2>/dev/null; then break; fi
        if [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$url/health")" = 200 ]; then
          echo "$url" >"$state/url"
          echo "$pid" >"$state/pid"
          say "llama-server (pid $pid) ready at $url after $(( i / 10 )) s; log: $state/server.log"
          exit 0
        fi
        sleep 0.1
      done
      if kill -0 "$pid" 2>/dev/null; then
        say "llama-server did not become healthy in 60 s; see $state/server.log"
        stop_pid "$pid"
        tail -20 "$state/server.log"
        exit 1
      fi
      wait "$pid" 2>/dev/null
      say "llama-server exited at start (attempt $attempt, port $port); see $state/server.log"
      tail -5 "$state/server.log"
    done
    exit 1
    ;;
  stop)
    if [ -f "$state/pid" ]; then
      pid=$(cat "$state/pid")
      # only a llama-server of ours: the pid file could be stale
      if [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "llama-server" ]; then
        stop_pid "$pid"
        say "stopped llama-server (pid $pid)"
      fi
    fi
    rm -f "$state/url" "$state/pid"
    exit 0
    ;;
  *)
    echo "usage: $0 start|stop STATE_DIR" >&2
    exit 2
    ;;
esac
