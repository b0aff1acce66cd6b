#!/usr/bin/env bash
# Runs a command against a fresh `kbrl serve` on a free loopback port, with a fake GPU worker, and
# checks afterwards that the server is still alive (a crash fails the test). The command sees
# KBRL_SERVE_URL. Exit: the command's (77 for a skip passes through), 1 when the server failed.
#   with_server.sh KBRL FAKE_GPU_WORKER COMMAND [ARGS...]
set -uo pipefail
kbrl=$1 worker=$2
shift 2
dir=$(mktemp -d "${TMPDIR:-/tmp}/kbrl-serve.XXXXXX")
pid=""
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
KBRL_WORKER="$worker" KBRL_CACHE_DIR="$dir/cache" "$kbrl" serve --gpus 0 --port 0 --log "$dir/log" \
  > "$dir/out" 2> "$dir/err" &
pid=$!
for _ in $(seq 200); do
  [ -s "$dir/out" ] && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.05
done
url=$(sed -n 's/.*"listening": "\([^"]*\)".*/\1/p' "$dir/out")
if [ -z "$url" ]; then
  echo "with_server: kbrl serve did not start:" >&2
  cat "$dir/err" >&2
  exit 1
fi
rss() { awk '/VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null; }
before=$(rss)
KBRL_SERVE_URL="$url" "$@"
status=$?
if ! kill -0 "$pid" 2>/dev/null; then
  echo "with_server: kbrl serve died during the run:" >&2
  tail -n 20 "$dir/err" >&2
  exit 1
fi
echo "with_server: the server is alive; resident memory ${before:-?} kB before, $(rss) kB after"
exit $status
