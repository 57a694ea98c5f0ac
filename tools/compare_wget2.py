#!/usr/bin/env python3
"""Crawl one loopback web with spinneret and with wget2, in alternating rounds, and compare.

Usage: tools/compare_wget2.py [--hosts 500] [--pages 40] [--page-kb 15] [--shape linked]
                              [--rounds 3] [--https] [--gzip] [--fetch-list] [--no-build] [--keep]

The web is the bench's test web (`spinneret-testserver files`: pages linking mostly to
random pages of other hosts), written to disk and served by nginx, every host on its own
loopback address (127.1.x.y) and all on one port; with --https nginx speaks TLS and HTTP/2
with certificates from a private CA this script makes with openssl (spinneret is given
--ca-file, wget2 --ca-certificate); with --gzip every file is also stored gzip-compressed and
nginx sends that copy to a client that accepts gzip (both crawlers ask for it). Both crawlers
resolve the hosts through a generated /etc/hosts bind-mounted in a private mount namespace
(`unshare -m`; `unshare -rm` when not root): the system's file is never touched.

Each round runs `spinneret crawl -i SEEDS --delay-ms 0 --allow-private` (its defaults
otherwise; WARC written) and `wget2 -r -l inf --max-threads=5 -i SEEDS` (files written;
-l inf because wget2's default depth of 5 misses pages spinneret fetches), in alternating
order. With --fetch-list they are `spinneret fetch -i LIST --delay-ms 0 --allow-private` and
`wget2 -x -i LIST --max-threads=16` over every expected URL, shuffled. Both obey robots.txt
(fetch mode fetches none). nginx's access log, with each request's connection number, gives
pages, connections per host and TLS handshakes (full or resumed) for both alike; CPU per
page is each crawler's user + sys time (getrusage of children). Prints every round, the
medians and the ratios. Skips, saying why, where wget2, nginx, openssl or a private mount
namespace is missing. Every child has a timeout; nginx is stopped in any case.
"""
import argparse
import gzip
import json
import os
import random
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Hosts per certificate (--https): certificates naming several hosts are common, and it
# keeps the CA's work to a signature per group. (GnuTLS, wget2's TLS, refuses `*.test`.)
CERT_GROUP = 32
# Requests logged with: host, connection number, session reused ("r" or "."), protocol,
# status, request target.
LOG_FORMAT = "$host $connection $ssl_session_reused $server_protocol $status $request_uri"
# Seconds to wait for nginx to accept connections.
START_TIMEOUT = 30
# The targets: spinneret's pages/s over wget2's, and its CPU per page over wget2's at most.
TARGETS = {"http": 1.2, "https": 2.0, "fetch-list": 1.0}
CPU_TARGET = 1.0


def skip(reason):
    print(f"compare_wget2: skipped: {reason}")
    sys.exit(0)


def host_name(i):
    return f"h{i:04d}.test"


def host_ip(i):
    """As testweb::host_ip: 127.1.(i/254).(i%254+1)."""
    return f"127.1.{i // 254}.{i % 254 + 1}"


def run_bounded(cmd, timeout, **kw):
    """Runs cmd in its own process group; kills the group after `timeout` s. Returns the
    exit code (None on timeout)."""
    proc = subprocess.Popen(cmd, start_new_session=True, **kw)
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return None


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def namespace_prefix(hosts_file):
    """The command prefix that runs a command with `hosts_file` as /etc/hosts, or None."""
    mount = ["sh", "-c", 'mount --bind "$0" /etc/hosts && exec "$@"', hosts_file]
    for unshare in (["unshare", "-m"], ["unshare", "-rm"]):
        if unshare == ["unshare", "-m"] and os.geteuid() != 0:
            continue
        probe = unshare + mount + ["getent", "hosts", host_name(0)]
        try:
            out = subprocess.run(probe, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if out.returncode == 0 and host_ip(0) in out.stdout:
            return unshare + mount
    return None


def make_certs(work, hosts, timeout):
    """A private CA and one certificate per CERT_GROUP hosts; returns (ca.pem, key, [certs])."""
    ca_key, ca_pem = os.path.join(work, "ca.key"), os.path.join(work, "ca.pem")
    key = os.path.join(work, "server.key")
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}

    def openssl(*args):
        if run_bounded(["openssl", *args], timeout, **quiet) != 0:
            sys.exit(f"openssl {args[0]} failed")

    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", ca_key, "-out", ca_pem, "-days", "2", "-subj", "/CN=spinneret test CA",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", key)
    csr = os.path.join(work, "server.csr")
    openssl("req", "-new", "-key", key, "-subj", "/CN=spinneret test web", "-out", csr)
    certs = []
    for g, first in enumerate(range(0, hosts, CERT_GROUP)):
        names = ",".join(f"DNS:{host_name(i)}" for i in range(first, min(hosts, first + CERT_GROUP)))
        ext = os.path.join(work, f"ext{g}.cnf")
        with open(ext, "w") as f:
            f.write(f"subjectAltName={names}\nbasicConstraints=critical,CA:FALSE\n"
                    "keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n")
        cert = os.path.join(work, f"group{g}.pem")
        openssl("x509", "-req", "-in", csr, "-CA", ca_pem, "-CAkey", ca_key,
                "-set_serial", str(g + 2), "-days", "2", "-extfile", ext, "-out", cert)
        certs.append(cert)
    return ca_pem, key, certs


def precompress(site):
    """Writes NAME.gz beside every file of `site` (gzip level 6, a common server setting), for
    nginx's gzip_static."""
    for root, _, files in os.walk(site):
        for name in files:
            path = os.path.join(root, name)
            with open(path, "rb") as f:
                data = f.read()
            with open(path + ".gz", "wb") as f:
                f.write(gzip.compress(data, compresslevel=6, mtime=0))


class Nginx:
    """nginx serving `site` on every host's address, with a stub_status on 127.0.0.1."""

    def __init__(self, work, site, hosts, port, workers, tls, gzip_static=False):
        self.dir = os.path.join(work, "nginx")
        os.makedirs(self.dir)
        self.log = os.path.join(self.dir, "access.log")
        self.status_port = free_port("127.0.0.1")
        self.status_reads = 0
        location = ('root %s/$host; index index.html;\n'
                    '    location / { try_files "$uri?$args" $uri $uri/ =404; }\n' % site)
        servers = []
        if tls is None:
            listens = "".join(f"    listen {host_ip(i)}:{port};\n" for i in range(hosts))
            servers.append(f"  server {{\n{listens}    {location}  }}\n")
        else:
            _, key, certs = tls
            for g, cert in enumerate(certs):
                group = range(g * CERT_GROUP, min(hosts, (g + 1) * CERT_GROUP))
                listens = "".join(f"    listen {host_ip(i)}:{port} ssl http2;\n" for i in group)
                servers.append(f"  server {{\n{listens}    ssl_certificate {cert};\n"
                               f"    ssl_certificate_key {key};\n    {location}  }}\n")
        conf = os.path.join(self.dir, "nginx.conf")
        with open(conf, "w") as f:
            f.write(f"""worker_processes {workers};
worker_rlimit_nofile 16384;
pid {self.dir}/nginx.pid;
events {{ worker_connections 8192; }}
http {{
  types {{ text/html html; text/css css; text/plain txt; }}
  default_type text/html;
  server_tokens off;
  sendfile on;
  gzip_static {"on" if gzip_static else "off"};
  ssl_session_cache shared:SSL:10m;
  log_format conns '{LOG_FORMAT}';
  access_log {self.log} conns;
  server {{
    listen 127.0.0.1:{self.status_port};
    access_log off;
    location = /status {{ stub_status; }}
  }}
{"".join(servers)}}}
""")
        open(self.log, "w").close()
        self.proc = subprocess.Popen(
            ["nginx", "-p", self.dir, "-c", conf, "-e", os.path.join(self.dir, "error.log"),
             "-g", "daemon off;"], start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                socket.create_connection((host_ip(hosts - 1), port), timeout=1).close()
                self.accepted()
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    with open(os.path.join(self.dir, "error.log")) as f:
                        sys.exit("nginx did not start:\n" + f.read()[-2000:])
                time.sleep(0.1)

    def accepted(self):
        """Connections nginx has accepted (those of our status requests excluded)."""
        url = f"http://127.0.0.1:{self.status_port}/status"
        self.status_reads += 1
        with urllib.request.urlopen(url, timeout=5) as r:
            text = r.read().decode()
        return int(text.split("\n")[2].split()[0]) - self.status_reads

    def cpu(self):
        """User + sys seconds of nginx's workers so far (Linux /proc)."""
        total = 0
        hz = os.sysconf("SC_CLK_TCK")
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open(f"/proc/{pid}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            fields = stat[stat.rfind(")") + 2:].split()
            if int(fields[1]) == self.proc.pid:  # ppid
                total += (int(fields[11]) + int(fields[12])) / hz
        return total

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def free_port(addr):
    with socket.socket() as s:
        s.bind((addr, 0))
        return s.getsockname()[1]


def served(log, offset, scheme, port):
    """What nginx logged from `offset`: (page URLs served with 200, requests, connection
    numbers per host, connections whose TLS session was resumed, connections in all)."""
    pages, requests = set(), 0
    conns, resumed, first = {}, set(), {}
    with open(log) as f:
        f.seek(offset)
        for line in f:
            parts = line.split(" ", 5)
            if len(parts) < 6:
                continue
            host, conn, reused, _proto, status, target = parts
            requests += 1
            conns.setdefault(host, set()).add(conn)
            if conn not in first:
                first[conn] = reused
                if reused == "r":
                    resumed.add(conn)
            target = target.rstrip("\n")
            if status == "200" and target != "/robots.txt":
                pages.add(f"{scheme}://{host}:{port}{target}")
    return pages, requests, conns, len(resumed), len(first)


def peak_rss(name, out):
    """A spinneret run's peak RSS as its stats.json says (MB), or "-" (wget2 writes none)."""
    if name == "wget2":
        return "-"
    try:
        with open(os.path.join(out, "stats.json")) as f:
            return f"{json.load(f)['peak_rss_bytes'] / 1e6:.1f} MB"
    except (OSError, ValueError, KeyError):
        return "?"


def measure(name, cmd, nginx, work, env, timeout, scheme, port):
    """Runs one crawler to its end (or timeout); what it cost and what nginx served it."""
    offset = os.path.getsize(nginx.log)
    accepted, server_cpu, cpu = nginx.accepted(), nginx.cpu(), children_cpu()
    start = time.monotonic()
    with open(os.path.join(work, f"{name}.stderr"), "w") as err:
        rc = run_bounded(cmd, timeout, stdout=err, stderr=err, env=env)
    wall = time.monotonic() - start
    pages, requests, conns, resumed, tls_conns = served(nginx.log, offset, scheme, port)
    total_conns = sum(map(len, conns.values()))
    return {
        "rc": rc,
        "wall": wall,
        "cpu": children_cpu() - cpu,
        "server_cpu": nginx.cpu() - server_cpu,
        "accepted": nginx.accepted() - accepted,
        "pages": pages,
        "requests": requests,
        "conns": total_conns,
        "per_host": total_conns / max(len(conns), 1),
        "tls_full": tls_conns - resumed,
        "tls_resumed": resumed,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, default=500)
    ap.add_argument("--pages", type=int, default=40)
    ap.add_argument("--page-kb", type=int, default=15)
    ap.add_argument("--shape", default="linked", choices=["linked", "clustered"])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--https", action="store_true", help="nginx with TLS and HTTP/2")
    ap.add_argument("--gzip", action="store_true",
                    help="every file also pre-compressed (gzip -6), which nginx sends to a client "
                         "that accepts gzip (gzip_static), as most real servers send HTML")
    ap.add_argument("--fetch-list", action="store_true",
                    help="spinneret fetch -i vs wget2 -i --max-threads=16 over the URLs shuffled")
    ap.add_argument("--nginx-workers", type=int, default=1,
                    help="nginx worker processes (default 1: a core for the crawler)")
    ap.add_argument("--timeout", type=int, default=900, help="seconds per crawl")
    ap.add_argument("--seed", type=int, default=1, help="of the --fetch-list shuffle")
    ap.add_argument("--no-build", action="store_true", help="use target/release as it is")
    ap.add_argument("--baseline", metavar="EXE",
                    help="another spinneret binary (say, the build before a change) crawled in "
                         "the same rounds with the same flags, for before/after figures from "
                         "one run")
    ap.add_argument("--spinneret-args", default="", metavar="ARGS",
                    help="extra flags for spinneret (this binary only, not --baseline), to "
                         "measure a flag against the defaults, e.g. \"--text --markdown\"")
    ap.add_argument("--keep", action="store_true",
                    help="keep the work directory (site, nginx log, last outputs)")
    ap.add_argument("--work-parent", default="/dev/shm" if os.path.isdir("/dev/shm") else None,
                    help="where the work directory (site and both crawlers' outputs) is made: "
                         "tmpfs by default, since many small files on disk slow wget2 a little "
                         "more each round")
    args = ap.parse_args()
    if not 1 <= args.hosts <= 254 * 256:
        sys.exit("--hosts must be 1 to 65024")
    for tool, why in (("wget2", "apt-get install wget2"), ("nginx", "apt-get install nginx-light"),
                      ("unshare", "util-linux")):
        if shutil.which(tool) is None:
            skip(f"{tool} not found ({why})")
    if args.https and shutil.which("openssl") is None:
        skip("openssl not found (--https makes its CA with it)")
    if not args.no_build:
        for build in (["--bin", "spinneret"], ["-p", "spinneret-tools", "--bin", "spinneret-testserver"]):
            subprocess.run(["cargo", "build", "--release", "--quiet", *build], cwd=ROOT, check=True,
                           timeout=3600)
    exe = os.path.join(ROOT, "target", "release", "spinneret")
    testserver = os.path.join(ROOT, "target", "release", "spinneret-testserver")

    work = tempfile.mkdtemp(prefix="spinneret-vs-wget2-", dir=args.work_parent)
    # nginx's workers run as nobody when we are root: the site must be readable.
    os.chmod(work, 0o755)
    nginx = None
    try:
        hosts_file = os.path.join(work, "hosts")
        with open(hosts_file, "w") as f:
            f.write("127.0.0.1 localhost\n")
            f.writelines(f"{host_ip(i)} {host_name(i)}\n" for i in range(args.hosts))
        prefix = namespace_prefix(hosts_file)
        if prefix is None:
            skip("no private mount namespace for /etc/hosts (unshare -m needs root, "
                 "unshare -rm unprivileged user namespaces)")

        scheme = "https" if args.https else "http"
        port = free_port(host_ip(0))
        site, urls_file = os.path.join(work, "site"), os.path.join(work, "expected.txt")
        cmd = [testserver, "files", "--dir", site, "--port", str(port), "--shape", args.shape,
               "--hosts", str(args.hosts), "--pages", str(args.pages),
               "--page-kb", str(args.page_kb), "--urls-out", urls_file]
        if args.https:
            cmd.append("--https")
        if run_bounded(cmd, args.timeout, stdout=subprocess.DEVNULL) != 0:
            sys.exit("spinneret-testserver files failed")
        expected = [u for u in open(urls_file).read().split("\n") if u]
        tls = make_certs(work, args.hosts, args.timeout) if args.https else None
        if args.gzip:
            precompress(site)
        nginx = Nginx(work, site, args.hosts, port, args.nginx_workers, tls, args.gzip)

        if args.fetch_list:
            mode = "fetch-list"
            listing = os.path.join(work, "list.txt")
            shuffled = list(expected)
            random.Random(args.seed).shuffle(shuffled)
            with open(listing, "w") as f:
                f.write("\n".join(shuffled) + "\n")
            spin = [exe, "fetch", "-i", listing, "--delay-ms", "0", "--allow-private"]
            # -x: a directory per host, as -r makes; without it 500 hosts' p1.html would be
            # saved as p1.html.1 … p1.html.499, a search wget2 is not measured for.
            wget = ["wget2", "-x", "-i", listing, "--max-threads=16"]
        else:
            mode = scheme
            listing = os.path.join(work, "seeds.txt")
            with open(listing, "w") as f:
                f.writelines(u + "\n" for u in expected if u.endswith(f":{port}/"))
            spin = [exe, "crawl", "-i", listing, "--delay-ms", "0", "--allow-private"]
            wget = ["wget2", "-r", "-l", "inf", "-i", listing, "--max-threads=5"]
        if args.https:
            spin += ["--ca-file", tls[0]]
            wget += [f"--ca-certificate={tls[0]}"]
        home = os.path.join(work, "home")  # wget2's HSTS/OCSP files, not the user's
        os.makedirs(home)
        env = dict(os.environ, HOME=home)

        print(f"compare_wget2: {args.shape} web of {args.hosts} hosts x {args.pages} pages "
              f"x ~{args.page_kb} KB ({len(expected)} URLs), {mode} on nginx "
              f"({args.nginx_workers} worker{'s' if args.nginx_workers > 1 else ''}"
              f"{', TLS + HTTP/2' if args.https else ''}"
              f"{', gzip-coded when asked' if args.gzip else ''}), {args.rounds} round(s)")
        print(f"  spinneret: {' '.join(os.path.basename(a) if a == exe else a for a in spin[:2])} "
              f"{' '.join(spin[2:] + args.spinneret_args.split()).replace(work, 'WORK')} -o WORK/out")
        print(f"  wget2:     {' '.join(wget).replace(work, 'WORK')} -P WORK/out")
        header = (f"{'round':>5} {'crawler':<10} {'pages':>6} {'requests':>8} {'seconds':>8} "
                  f"{'pages/s':>8} {'CPU ms/page':>11} {'conns/host':>10} {'TLS full/resumed':>16} "
                  f"{'server CPU':>10} {'peak RSS':>8}")
        print(header)
        results = {"spinneret": [], "wget2": []}
        if args.baseline:
            results["baseline"] = []
        for r in range(args.rounds):
            # Alternating who goes first evens out a machine that drifts (caches, clocks).
            names = list(results)
            # Each round starts with the next crawler: every one goes first once in 3 rounds.
            for name in names[r % len(names):] + names[:r % len(names)]:
                out = os.path.join(work, "out")
                shutil.rmtree(out, ignore_errors=True)
                if name == "wget2":
                    cmd = wget + ["-P", out, "--no-verbose"]
                elif name == "baseline":
                    cmd = [os.path.abspath(args.baseline)] + spin[1:] + ["-o", out]
                else:
                    cmd = spin + args.spinneret_args.split() + ["-o", out]
                row = measure(name, prefix + cmd, nginx, work, env, args.timeout, scheme, port)
                pages, wall, cpu, per_host = row["pages"], row["wall"], row["cpu"], row["per_host"]
                n = max(len(pages), 1)
                tls_col = f"{row['tls_full']}/{row['tls_resumed']}" if args.https else "-"
                print(f"{r + 1:>5} {name:<10} {len(pages):>6} {row['requests']:>8} {wall:>8.2f} "
                      f"{len(pages) / wall:>8.0f} {cpu * 1e3 / n:>11.3f} {per_host:>10.2f} "
                      f"{tls_col:>16} {row['server_cpu'] / wall * 100:>9.0f}% "
                      f"{peak_rss(name, out):>8}", flush=True)
                if row["rc"] != 0:
                    # wget2's 8 is "a server answered with an error": the 404s of the links
                    # it misreads (unquoted values ending at `>`, `&amp;` left undecoded).
                    rc = row["rc"]
                    print(f"      {name} exited with {'a timeout' if rc is None else rc}")
                missing = len(set(expected) - pages)
                if missing:
                    print(f"      {name} did not fetch {missing} of the {len(expected)} URLs")
                if row["accepted"] != row["conns"]:
                    print(f"      nginx accepted {row['accepted']} connections, "
                          f"{row['conns']} with a request")
                results[name].append((len(pages) / wall, cpu / n, per_host))

        med = {k: [statistics.median(x[i] for x in v) for i in range(3)] for k, v in results.items()}
        if "baseline" in med:
            b = med["baseline"]
            print(f"median  baseline {b[0]:.0f} pages/s, {b[1] * 1e3:.3f} ms CPU/page; spinneret "
                  f"{med['spinneret'][0] / b[0]:.2f}x its pages/s, "
                  f"{med['spinneret'][1] / b[1]:.2f}x its CPU per page")
        s, w = med["spinneret"], med["wget2"]
        print(f"median  spinneret {s[0]:.0f} pages/s, {s[1] * 1e3:.3f} ms CPU/page, "
              f"{s[2]:.2f} conns/host; wget2 {w[0]:.0f} pages/s, {w[1] * 1e3:.3f} ms CPU/page, "
              f"{w[2]:.2f} conns/host")
        if w[0] > 0 and w[1] > 0:
            ratio, target = s[0] / w[0], TARGETS[mode]
            cpu = s[1] / w[1]
            print(f"ratio   spinneret {ratio:.2f}x wget2's pages/s (target >= {target}: "
                  f"{'met' if ratio >= target else 'not met'}), {cpu:.2f}x its CPU per page "
                  f"(target <= {CPU_TARGET}: {'met' if cpu <= CPU_TARGET else 'not met'})")
    finally:
        if nginx is not None:
            nginx.stop()
        if args.keep:
            print(f"work directory kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
