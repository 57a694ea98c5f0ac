#!/usr/bin/env bash
# Crawls the bench test web (500 hosts x 40 pages, on loopback) with N cluster nodes
# (separate `spinneret crawl --cluster` processes on this machine) through a redis-server
# started here, and prints wall time, pages/s, crawler CPU per page and the exchange cost.
# Usage: tools/bench/cluster.sh NODES [HOSTS] [PAGES]   (needs redis-server and a release build
# of spinneret and spinneret-testserver: cargo build --release --workspace --bins)
set -euo pipefail
nodes=${1:?nodes}; hosts=${2:-500}; pages=${3:-40}
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=$root/target/release/spinneret
testserver=$root/target/release/spinneret-testserver
dir=$(mktemp -d); pids=()
trap 'kill "${pids[@]}" 2>/dev/null; rm -rf "$dir"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
timeout 600 redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --appendonly yes --save "" \
  --protected-mode no >/dev/null 2>&1 &
pids+=($!)
for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.05; done
# The test web serves until its stdin closes: a sleep holds it open (and holds none of ours).
exec 3< <(exec sleep 600 2>/dev/null)
pids+=($!)
timeout 600 "$testserver" web --shape linked --hosts "$hosts" --pages "$pages" --page-kb 15 \
  --lifetime 600 --until-stdin-closes --urls-out "$dir/urls.txt" <&3 >"$dir/web.out" 2>/dev/null &
pids+=($!)
exec 3<&-
for _ in $(seq 600); do grep -q http_port "$dir/web.out" 2>/dev/null && break; sleep 0.1; done
dns=$(sed -n 's/.*dns=\([0-9.:]*\).*/\1/p' "$dir/web.out")
grep -E '^http://[^/]+/$' "$dir/urls.txt" >"$dir/seeds.txt"
common=(--scope any --allow-domain test --allow-net 127.0.0.0/8 --hosts-file none
  --dns-server "$dns" --max-conns 512 --delay-ms 0 --delay-factor 0 -q
  --cluster "redis://127.0.0.1:$port/" --cluster-nodes "$nodes")
start=$(date +%s.%N)
nodes_pids=()
for k in $(seq 0 $((nodes - 1))); do
  seeds=(); [ "$k" = 0 ] && seeds=(-i "$dir/seeds.txt")
  /usr/bin/time -f "%U %S" -o "$dir/time$k" "$bin" crawl "${common[@]}" --cluster-node "$k" \
    -o "$dir/out$k" "${seeds[@]}" &
  nodes_pids+=($!)
done
wait "${nodes_pids[@]}" || true
end=$(date +%s.%N)
python3 - "$dir" "$nodes" "$start" "$end" <<'PY'
import json, sys, glob
d, n, start, end = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
pages = cpu = fwd = batches = nbytes = 0
for k in range(n):
    s = json.load(open(f"{d}/out{k}/stats.json"))
    c = s.get("counters", s)
    pages += c.get("pages_fetched", 0); fwd += c.get("urls_forwarded", 0)
    batches += c.get("exchange_batches", 0); nbytes += c.get("exchange_bytes", 0)
    u, sy = map(float, open(f"{d}/time{k}").read().split()[-2:]); cpu += u + sy
expected = sum(1 for _ in open(f"{d}/urls.txt"))
wall = end - start
print(f"nodes {n}: {pages} pages (expected {expected}) in {wall:.2f} s = {pages/wall:.0f} pages/s, "
      f"CPU/page {cpu/pages*1000:.3f} ms (all nodes, user+sys)")
if fwd:
    print(f"exchange: {fwd} URLs forwarded in {batches} XADDs ({batches/fwd:.4f} messages/URL), "
          f"{nbytes/fwd:.1f} bytes/URL")
PY
