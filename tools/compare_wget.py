#!/usr/bin/env python3
"""Crawl the same local test web with spinneret and with `wget -r`, and compare.

Usage: tools/compare_wget.py [--hosts 500] [--pages 40] [--page-kb 15] [--latency-ms 0]
                             [--max-conns 512]

With --latency-ms N the test web answers each connection N ms late (connect and every
response), as a web far away would.

Starts the test web once (`spinneret-testserver web`, loopback only), crawls it with spinneret
(WARC output, robots obeyed, one connection per server, no delay), then with Debian's wget
(`-r -H --domains=test`, robots obeyed, files saved). wget resolves names with the system
resolver, not our DNS server: as root it runs in a private mount namespace (`unshare -m`)
where a generated hosts file is bind-mounted over /etc/hosts (the system's file is never
touched); otherwise it reaches the virtual hosts through the test web acting as an HTTP
proxy, which makes wget slower (it says which). Prints pages/s and CPU ms per page (user +
sys of each crawler's process tree, from wait4) side by side, with the ratio.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_measured(cmd, **kw):
    """Runs cmd; returns (wall seconds, cpu seconds, exit code)."""
    start = time.monotonic()
    proc = subprocess.Popen(cmd, **kw)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - start
    cpu = usage.ru_utime + usage.ru_stime
    return wall, cpu, os.waitstatus_to_exitcode(status)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, default=500)
    ap.add_argument("--pages", type=int, default=40)
    ap.add_argument("--page-kb", type=int, default=15)
    ap.add_argument("--latency-ms", type=int, default=0)
    ap.add_argument("--max-conns", type=int, default=512)
    args = ap.parse_args()
    if shutil.which("wget") is None:
        sys.exit("wget not found: apt-get install wget")
    for build in (["--bin", "spinneret"], ["-p", "spinneret-tools", "--bin", "spinneret-testserver"]):
        subprocess.run(["cargo", "build", "--release", "--quiet", *build], cwd=ROOT, check=True)
    exe = os.path.join(ROOT, "target", "release", "spinneret")
    testserver = os.path.join(ROOT, "target", "release", "spinneret-testserver")
    work = tempfile.mkdtemp(prefix="spinneret-vs-wget-")
    try:
        urls_file = os.path.join(work, "expected.txt")
        web = subprocess.Popen(
            [testserver, "web", "--shape", "linked", "--hosts", str(args.hosts),
             "--pages", str(args.pages), "--page-kb", str(args.page_kb),
             "--latency-ms", str(args.latency_ms), "--lifetime", "3600", "--until-stdin-closes",
             "--urls-out", urls_file],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = web.stdout.readline()
        fields = dict(kv.split("=", 1) for kv in line.split())
        port, dns = fields["http_port"], fields["dns"]
        expected = [u for u in open(urls_file).read().split() if u]
        seeds = [u for u in expected if u.endswith(f":{port}/")]
        seeds_file = os.path.join(work, "seeds.txt")
        with open(seeds_file, "w") as f:
            f.write("\n".join(seeds) + "\n")
        print(f"test web: {args.hosts} hosts x {args.pages} pages x ~{args.page_kb} KB, "
              f"{len(expected)} pages, port {port}, {args.latency_ms} ms latency")

        out = os.path.join(work, "spinneret")
        s_wall, s_cpu, rc = run_measured(
            [exe, "crawl", "--seeds", seeds_file, "--out", out, "--dns-server", dns,
             "--hosts-file", "none", "--allow-net", "127.0.0.0/8", "--scope", "any",
             "--allow-domain", "test", "--delay-ms", "0", "--delay-factor", "0",
             "--max-conns", str(args.max_conns)],
            stderr=subprocess.DEVNULL)
        if rc != 0:
            sys.exit(f"spinneret crawl failed with exit code {rc}")
        s_pages = sum(1 for l in open(os.path.join(out, "crawl.log"))
                      if "\tSuccess\t200\t" in l and "/robots.txt" not in l)

        wout = os.path.join(work, "wget")
        wget = ["wget", "-r", "-l", "inf", "-H", "--domains=test", "-e", "robots=on",
                "--no-verbose", "-o", os.path.join(work, "wget.log"), "-P", wout,
                "-i", seeds_file]
        if os.geteuid() == 0 and shutil.which("unshare"):
            hosts = os.path.join(work, "hosts")
            with open(hosts, "w") as f:
                f.write("127.0.0.1 localhost\n")
                for i in range(args.hosts):
                    f.write(f"127.1.{i // 254}.{i % 254 + 1} h{i:04d}.test\n")
            how = "names from a private /etc/hosts (unshare -m)"
            cmd = ["unshare", "-m", "sh", "-c",
                   'mount --bind "$0" /etc/hosts && exec "$@"', hosts] + wget
        else:
            how = "through the test web as an HTTP proxy"
            cmd = wget + ["-e", "use_proxy=on", "-e", f"http_proxy=http://127.1.0.1:{port}/"]
        print(f"wget reaches the hosts {how}")
        w_wall, w_cpu, rc = run_measured(cmd)
        w_pages = 0
        for dirpath, _, files in os.walk(wout):
            w_pages += sum(1 for f in files if f != "robots.txt")

        web.stdin.close()
        web.wait(timeout=10)

        print(f"{'':10} {'pages':>7} {'seconds':>8} {'pages/s':>9} {'CPU ms/page':>12}")
        for name, pages, wall, cpu in (("spinneret", s_pages, s_wall, s_cpu),
                                       ("wget", w_pages, w_wall, w_cpu)):
            print(f"{name:10} {pages:>7} {wall:>8.2f} {pages / wall:>9.0f} "
                  f"{cpu * 1e3 / max(pages, 1):>12.3f}")
        if w_pages and s_pages:
            print(f"ratio: spinneret is {(s_pages / s_wall) / (w_pages / w_wall):.1f}x wget's "
                  f"pages/s at {(s_cpu / s_pages) / (w_cpu / w_pages):.2f}x its CPU per page")
        if s_pages != len(expected):
            print(f"WARNING: spinneret fetched {s_pages} of {len(expected)} expected pages")
        if w_pages != len(expected):
            print(f"note: wget saved {w_pages} of {len(expected)} expected pages")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
