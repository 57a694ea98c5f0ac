#!/usr/bin/env bash
# The live freshness check of issue 44, too long for CI: a continuous crawl of the changing
# loopback web (`spinneret-testserver fresh`) for 300 s under a binding politeness delay, then
# the server log's figures (`fresh-report`): time-averaged freshness of the changing pages
# against a uniform round robin of the same fetches, how often the unchanging pages were
# revisited (and answered 304), and how soon new articles were fetched.
# The web: 100 pages changing as Poisson processes (5 every ~10 s, 5 every ~60 s, 10 every
# ~300 s, 20 every ~3,000 s, 60 never) and a news site with a new article every 6 s.
# Usage: tools/bench/fresh.sh [SECONDS]   (needs a release build of spinneret and
# spinneret-testserver: cargo build --release --workspace --bins)
set -euo pipefail
secs=${1:-300}
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${CARGO_TARGET_DIR:-$root/target}/release/spinneret
testserver=${CARGO_TARGET_DIR:-$root/target}/release/spinneret-testserver
dir=$(mktemp -d); pids=()
trap 'kill "${pids[@]}" 2>/dev/null; rm -rf "$dir"' EXIT
# Page i changes every means[i % 20] seconds on average (0: never).
means=10,60,300,300,3000,3000,3000,3000,0,0,0,0,0,0,0,0,0,0,0,0
content=(--pages 100 --mean-change-secs "$means" --article-secs 6 --lifetime $((secs + 30)))
timeout $((secs + 60)) "$testserver" fresh "${content[@]}" --log "$dir/server.log" \
  >"$dir/web.out" 2>/dev/null &
pids+=($!)
for _ in $(seq 600); do grep -q http_port "$dir/web.out" 2>/dev/null && break; sleep 0.1; done
seed=$(sed -n 's/.*seed=\(http[^ ]*\).*/\1/p' "$dir/web.out")
status=0
"$bin" crawl --continuous --revisit-min 2 --revisit-max 120 --delay-ms 250 --delay-factor 0 \
  --allow-net 127.0.0.0/8 -q --max-time "$secs" -o "$dir/crawl" "$seed" || status=$?
[ "$status" = 9 ] || { echo "crawl exited $status (expected 9: --max-time)" >&2; exit 1; }
sleep 1
"$testserver" fresh-report --log "$dir/server.log" "${content[@]}"
grep -oE '"(revisits[a-z_]*|first_fetches|estimated_freshness|planned_freshness|discovery_share)": [0-9.]+' \
  "$dir/crawl/stats.json" | tr -d '"' | sed 's/^/crawl_/; s/: /=/'
