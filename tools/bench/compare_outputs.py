#!/usr/bin/env python3
"""Whether two `spinneret bench --out DIR` runs wrote the same crawl: the same crawl.log lines,
the same CDXJ records, the same stats.json counts — modulo what differs between any two runs
of one binary: times, fetch durations, the test web's port (which also changes page bytes'
digests, as pages link absolutely), referrers (which page linked a URL first depends on
timing), which of two identical payloads is stored in full and which as a revisit, and DNS
cache counts.

Usage: tools/bench/compare_outputs.py BEFORE/out AFTER/out   (exit 1 if they differ)
"""

import collections
import glob
import json
import re
import sys

PORT = re.compile(r"(\.test:|,h\d{4}:)\d+")
# stats.json figures that differ between two runs of one binary.
TIMING = ("ms", "us", "secs", "cpu", "rss", "per_", "elapsed", "calls", "socket", "buffers",
          "wait", "peak", "dns_", "rate", "stage", "tls_", "batches", "bytes_out")


def norm(text):
    return PORT.sub(lambda m: m.group(1) + "P", text)


def log_lines(d):
    out = collections.Counter()
    with open(d + "/crawl.log") as fh:
        for line in fh:
            if line.startswith("#"):
                continue
            f = line.rstrip("\n").split("\t")
            # outcome, status, bytes, URL, hop
            out[norm("\t".join([f[1], f[2], f[3], f[5], f[7]]))] += 1
    return out


def cdxj_records(d):
    records, revisits = collections.Counter(), 0
    for name in glob.glob(d + "/*.cdxj"):
        with open(name) as fh:
            for line in fh:
                key, _, js = line.split(" ", 2)
                j = json.loads(js)
                if j.get("url", "").startswith("metadata:"):
                    continue
                revisits += j.get("mime") == "warc/revisit"
                records[norm(key + " " + j.get("status", "-"))] += 1
    return records, revisits


def counts(d):
    def flat(j, prefix=""):
        r = {}
        for k, v in j.items():
            if isinstance(v, dict):
                r.update(flat(v, prefix + k + "."))
            elif isinstance(v, int) and not any(t in prefix + k for t in TIMING):
                r[prefix + k] = v
        return r

    with open(d + "/stats.json") as fh:
        return flat(json.load(fh))


def main():
    a, b = sys.argv[1], sys.argv[2]
    same = True
    la, lb = log_lines(a), log_lines(b)
    print(f"crawl.log: {sum(la.values())} and {sum(lb.values())} lines:",
          "same" if la == lb else f"{len(la - lb)} only before, {len(lb - la)} only after")
    same &= la == lb
    (ca, ra), (cb, rb) = cdxj_records(a), cdxj_records(b)
    print(f"CDXJ: {sum(ca.values())} and {sum(cb.values())} records, {ra} and {rb} revisits:",
          "same" if ca == cb and ra == rb else "differ")
    same &= ca == cb and ra == rb
    sa, sb = counts(a), counts(b)
    diff = sorted(k for k in sa.keys() | sb.keys() if sa.get(k) != sb.get(k))
    print("stats.json counts:", "same" if not diff else
          ", ".join(f"{k} {sa.get(k)} → {sb.get(k)}" for k in diff))
    same &= not diff
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
