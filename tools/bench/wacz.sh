#!/usr/bin/env bash
# Issue 45's big figure, too long for CI: a crawl of >= 2 GB of WARC packed into one WACZ with
# `spinneret wacz`, its peak RSS (must stay <= 64 MB) and its speed against the disk's
# sequential write speed (must be >= half of it). The crawl: the bench test web (loopback),
# 300 hosts x 40 pages of 15 KB (TEXT=1: with --text, so the page list carries every page's
# text, read from the WET files: on this all-prose web that makes the package about 2.8x the
# WARC files, and the figure then measures the page list's making more than the copy); its WARC files
# are then copied (each with its CDXJ, the file name inside rewritten) until they reach
# GIGABYTES. The disk's speed: `dd` of a file as large as the WARC files, fdatasync'd, into
# the same directory. Everything is made under DIR (default: a temporary directory in
# $TMPDIR) and removed at the end; it needs about 2.2 x GIGABYTES free.
# Usage: tools/bench/wacz.sh [GIGABYTES] [DIR]   (needs a release build of spinneret and
# spinneret-testserver: cargo build --release --workspace --bins; BIN_DIR=DIR takes the two
# binaries from DIR instead, e.g. target/debug: the test profile optimizes the dependencies,
# so the hashing, CRC and copying run at full speed there too)
set -euo pipefail
gb=${1:-2}
root=$(cd "$(dirname "$0")/../.." && pwd)
bin_dir=${BIN_DIR:-${CARGO_TARGET_DIR:-$root/target}/release}
bin=$bin_dir/spinneret
testserver=$bin_dir/spinneret-testserver
dir=$(mktemp -d "${2:-${TMPDIR:-/tmp}}/wacz-bench.XXXXXX"); pids=()
trap 'kill "${pids[@]}" 2>/dev/null; rm -rf "$dir"' EXIT
need=$((gb * 1024 * 1024 * 22 / 10))
avail=$(df -Pk "$dir" | awk 'NR == 2 { print $4 }')
if [ "$avail" -lt "$need" ]; then
  echo "not enough room in $dir: ${avail} KB free, ${need} KB needed" >&2
  exit 1
fi

# The test web serves until its stdin closes: a sleep holds it open (and holds none of ours).
exec 3< <(exec sleep 900 2>/dev/null)
pids+=($!)
timeout 900 "$testserver" web --shape linked --hosts 300 --pages 40 --page-kb 15 \
  --lifetime 900 --until-stdin-closes --urls-out "$dir/urls.txt" <&3 >"$dir/web.out" 2>/dev/null &
pids+=($!)
exec 3<&-
for _ in $(seq 600); do grep -q http_port "$dir/web.out" 2>/dev/null && break; sleep 0.1; done
dns=$(sed -n 's/.*dns=\([0-9.:]*\).*/\1/p' "$dir/web.out")
grep -E '^http://[^/]+/$' "$dir/urls.txt" >"$dir/seeds.txt"
"$bin" crawl --scope any --allow-domain test --allow-net 127.0.0.0/8 --hosts-file none \
  --dns-server "$dns" --max-conns 256 --delay-ms 0 --delay-factor 0 -q ${TEXT:+--text} \
  --warc-max-size 256M -o "$dir/crawl" -i "$dir/seeds.txt"

# Copies of the crawl's files until the WARC files reach the size asked for: each copy's
# index names its own file (the sort order is unchanged: the name is after the key).
target=$((gb * 1000 * 1000 * 1000))
originals=("$dir"/crawl/*.warc.gz)
size() { du -cb "$dir"/crawl/*.warc.gz | tail -1 | cut -f1; }
copy=0
while [ "$(size)" -lt "$target" ]; do
  copy=$((copy + 1))
  for w in "${originals[@]}"; do
    stem=$(basename "$w" .warc.gz)
    new="$stem-copy$copy"
    cp "$w" "$dir/crawl/$new.warc.gz"
    sed "s/\"filename\": \"$stem.warc.gz\"/\"filename\": \"$new.warc.gz\"/" \
      "$dir/crawl/$stem.cdxj" >"$dir/crawl/$new.cdxj"
    [ -f "$dir/crawl/$stem.warc.wet.gz" ] && cp "$dir/crawl/$stem.warc.wet.gz" "$dir/crawl/$new.warc.wet.gz"
    [ "$(size)" -ge "$target" ] && break
  done
done
warc_bytes=$(size)
echo "WARC: $(ls "$dir"/crawl/*.warc.gz | wc -l) files, $warc_bytes bytes"

# The disk's sequential write speed: as many bytes as the WARC files, flushed, same directory.
sync
dd_out=$(dd if=/dev/zero of="$dir/dd.bin" bs=1M count=$((warc_bytes / 1048576)) conv=fdatasync 2>&1 | tail -1)
rm -f "$dir/dd.bin"
echo "dd: $dd_out"
dd_mbs=$(echo "$dd_out" | python3 -c 'import re,sys; t=sys.stdin.read(); m=re.search(r"([0-9.]+) (k|M|G)B/s", t); print(float(m.group(1)) * {"k": 1e-3, "M": 1, "G": 1e3}[m.group(2)])')

# The package: timed, peak RSS; the page cache is not dropped (that needs root), so the WARC
# files may be read from memory, as right after a crawl.
sync
/usr/bin/time -v -o "$dir/time.txt" "$bin" wacz "$dir/crawl" -o "$dir/crawl.wacz"
wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$dir/time.txt")
rss_kb=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$dir/time.txt")
python3 - "$warc_bytes" "$wall" "$rss_kb" "$dd_mbs" "$(stat -c %s "$dir/crawl.wacz")" <<'PY'
import sys
warc, wall, rss_kb, dd, wacz = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
parts = [float(p) for p in wall.split(":")]
secs = parts[-1] + 60 * parts[-2] + (3600 * parts[-3] if len(parts) > 2 else 0)
speed = wacz / 1e6 / secs
print(f"wacz: {wacz} bytes in {secs:.1f} s = {speed:.0f} MB/s written; peak RSS {rss_kb / 1024:.1f} MB")
print(f"disk sequential write (dd): {dd:.0f} MB/s; ratio {speed / dd:.2f} (needs >= 0.5)")
print(f"RSS {'PASS' if rss_kb <= 64 * 1024 else 'FAIL'} (<= 64 MB), speed {'PASS' if speed >= dd / 2 else 'FAIL'}")
PY
