#!/usr/bin/env bash
# Crawls the local test web (loopback only, no internet) and reports pages per second.
# Usage: tools/demo.sh [HOSTS] [PAGES]
set -euo pipefail
cd "$(dirname "$0")/.."
hosts=${1:-50}
pages=${2:-40}
cargo build --release --quiet --bin spinneret -p spinneret
cargo build --release --quiet --bin spinneret-testserver -p spinneret-tools
out=$(mktemp -d)
trap 'kill $server 2>/dev/null || true; rm -rf "$out"' EXIT
target/release/spinneret-testserver --hosts "$hosts" --pages "$pages" --lifetime 300 >"$out/server.txt" &
server=$!
for _ in $(seq 100); do [ -s "$out/server.txt" ] && break; sleep 0.1; done
read -r line <"$out/server.txt"
port=$(sed -n 's/.*http_port=\([0-9]*\).*/\1/p' <<<"$line")
dns=$(sed -n 's/.*dns=\([^ ]*\).*/\1/p' <<<"$line")
echo "test web: $hosts hosts x $pages pages on 127.0.0.1:$port, DNS at $dns"
target/release/spinneret crawl "http://h0.test:$port/p0.html" \
  --out "$out/crawl" --dns-server "$dns" --hosts-file none --allow-private \
  --scope any --allow-domain test --delay-ms 0 --delay-factor 0 --max-conns 64
python3 - "$out/crawl/stats.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
print(f"pages: {s['pages_fetched']}  ok: {s['ok']}  pages/s: {s['pages_per_sec']:.0f}  "
      f"MB received: {s['bytes']/1e6:.1f}  CPU s: {s['cpu_seconds']:.2f}")
PY
