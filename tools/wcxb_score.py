#!/usr/bin/env python3
"""Score main-content extraction on the WCXB development split (word F1, snippets, speed).

WCXB, the Web Content Extraction Benchmark (Murrough Foley, 2026,
github.com/Murrough-Foley/web-content-extraction-benchmark), pairs real pages
(`html/NNNN.html.gz`) with hand-checked ground truth (`ground-truth/NNNN.json`). The data is
not part of this project: pass the folder that holds `html/` and `ground-truth/` as DATA_DIR.

Usage:
    tools/wcxb_score.py DATA_DIR --extractions DIR [--limit N] [--json OUT.json]
        Scores DIR/NNNN.txt (UTF-8 plain text; an absent file counts as an empty
        extraction) against DATA_DIR/ground-truth/NNNN.json.

    tools/wcxb_score.py DATA_DIR --run "COMMAND" [--limit N] [--keep DIR] [--json OUT.json]
        Runs COMMAND once (through /bin/sh) with its placeholders replaced:
          {out}   a fresh temporary directory (removed afterwards), or DIR of --keep, which
                  must be absent or empty;
          {files} the pages' DATA_DIR/html/NNNN.html.gz paths, as separate arguments, in
                  name order (the command decompresses them itself);
        e.g.  --run "target/release/spinneret extract -o {out} {files}"
        Leave the placeholders unquoted: they are replaced by shell-quoted words. The
        command's stdout is sent to our stderr so that stdout holds only the report. It
        measures the command's wall time and CPU time (user + sys of the child and of its
        waited-for descendants, from os.wait4), then scores {out}/NNNN.txt as above.

    --limit N      only the first N pages in name order (quick runs).
    --json FILE    also write everything (summary, per type, reference, per page) as JSON.
    --collapse-ws  match snippets after collapsing runs of whitespace to one space on both
                   sides (NOT what upstream does; off by default).

Prints one summary table (pages, F1, P, R, with found, without leaked; with --run also CPU
seconds, pages per CPU-second and wall seconds), then F1/P/R per page type with page counts,
sorted by type name, beside the reference figures of trafilatura 2.3.1 on this split, with a
"≥ trafilatura" mark per type and the count of types at or above. Exit status 0; 2 with a
one-line message on bad input (missing directory, no ground truth, failed command).

Scoring follows the upstream evaluate.py (commit c039d5e) exactly:
  * words: re.findall(r"\\w+", text.lower()); per page, the bag (multiset) of words of the
    extraction against that of ground_truth.main_content: overlap = size of the multiset
    intersection, P = overlap / |extraction|, R = overlap / |truth|, F1 = 2PR / (P + R)
    (0 when P + R = 0).
  * empty cases (no words): empty truth and empty extraction → P = R = F1 = 1; empty truth
    and a non-empty extraction → 0; a non-empty truth and an empty extraction → 0.
  * P, R and F1 are each averaged over the pages (macro average), overall and per type.
  * snippets: a snippet is found if snippet.lower() is a substring of extraction.lower()
    (no whitespace collapsing unless --collapse-ws). Per page: with_rate = share of `with`
    snippets found, without_rate = share of `without` snippets found (leaked); both are
    averaged over the pages. A page with NO snippets of a kind scores 1.0 for that kind, as
    upstream does: for `without` that counts as a full leak (15 dev pages have no `without`
    snippets, so even a perfect extractor leaks about 0.010). The JSON also carries
    snippet shares pooled over all snippets, which have no such quirk.
  * page type: _internal.page_type.primary ("category" is counted as "collection"; absent
    means "article"); pages whose ground_truth is not an object are skipped.
"""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict

# Measured on the full dev split (1,497 pages) on a 2-core machine, one run; from the data's
# README. The upstream README's own trafilatura figures (an older version) are lower.
REFERENCE = {
    "name": "trafilatura 2.3.1",
    "pages": 1497,
    "f1": 0.823, "precision": 0.859, "recall": 0.843,
    "with_found": 0.737, "without_leaked": 0.070,
    "pages_per_cpu_second": 9.7,
    "per_type_f1": {
        "article": 0.937, "documentation": 0.917, "service": 0.765, "forum": 0.694,
        "product": 0.637, "listing": 0.583, "collection": 0.574,
    },
}

WORD = re.compile(r"\w+")
PAGE_ID = re.compile(r"^(\d+)\.json$")


class Fail(Exception):
    """Bad input: reported as one line, exit status 2."""


class Parser(argparse.ArgumentParser):
    def error(self, message):
        raise Fail(message)


def words(text):
    return WORD.findall(text.lower()) if text else []


def word_prf(extracted, truth):
    """Upstream word_f1: (precision, recall, f1) of the extraction's word bag."""
    ext, ref = words(extracted), words(truth)
    if not ref:
        return (1.0, 1.0, 1.0) if not ext else (0.0, 0.0, 0.0)
    if not ext:
        return (0.0, 0.0, 0.0)
    overlap = sum((Counter(ext) & Counter(ref)).values())
    p, r = overlap / len(ext), overlap / len(ref)
    return p, r, (2 * p * r / (p + r) if p + r > 0 else 0.0)


def collapse(text):
    return " ".join(text.split())


def snippets_found(text, snippets, collapse_ws):
    """Number of snippets found in text (case-insensitive substring)."""
    hay = text.lower()
    if collapse_ws:
        hay = collapse(hay)
    n = 0
    for s in snippets:
        s = s.lower()
        if collapse_ws:
            s = collapse(s)
        n += s in hay
    return n


def page_type(doc):
    internal = doc.get("_internal") or {}
    pt = internal.get("page_type", {}) if isinstance(internal, dict) else {}
    if isinstance(pt, dict):
        pt = pt.get("primary", "article")
    elif not isinstance(pt, str):
        pt = "article"
    pt = pt or "article"
    return "collection" if pt == "category" else pt


def load_truth(data_dir, limit):
    gt_dir = os.path.join(data_dir, "ground-truth")
    if not os.path.isdir(data_dir):
        raise Fail(f"data directory not found: {data_dir}")
    if not os.path.isdir(gt_dir):
        raise Fail(f"no ground-truth directory in {data_dir}")
    names = sorted(n for n in os.listdir(gt_dir) if PAGE_ID.match(n))
    pages = []
    for name in names:
        if limit is not None and len(pages) >= limit:
            break
        path = os.path.join(gt_dir, name)
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            raise Fail(f"cannot read ground truth {path}: {e}")
        gt = doc.get("ground_truth") if isinstance(doc, dict) else None
        if not isinstance(gt, dict):
            continue  # as upstream: skipped
        pages.append({
            "id": name[:-len(".json")],
            "url": doc.get("url"),
            "type": page_type(doc),
            "main_content": gt.get("main_content") or "",
            "with": gt.get("with") or [],
            "without": gt.get("without") or [],
        })
    if not pages:
        raise Fail(f"no ground truth files (NNNN.json) in {gt_dir}")
    return pages


def read_extraction(out_dir, page_id):
    path = os.path.join(out_dir, page_id + ".txt")
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", errors="replace"), True
    except FileNotFoundError:
        return "", False


def mean(xs):
    return sum(xs) / len(xs) if xs else 0.0


def score(pages, out_dir, collapse_ws):
    per_page = []
    pool = Counter()
    for pg in pages:
        text, present = read_extraction(out_dir, pg["id"])
        p, r, f1 = word_prf(text, pg["main_content"])
        nw = snippets_found(text, pg["with"], collapse_ws) if pg["with"] else 0
        nwo = snippets_found(text, pg["without"], collapse_ws) if pg["without"] else 0
        pool.update(with_total=len(pg["with"]), with_found=nw,
                    without_total=len(pg["without"]), without_leaked=nwo)
        per_page.append({
            "id": pg["id"], "type": pg["type"], "url": pg["url"], "present": present,
            "words": len(words(text)), "truth_words": len(words(pg["main_content"])),
            "precision": p, "recall": r, "f1": f1,
            # upstream: no snippets of a kind scores 1.0
            "with_rate": nw / len(pg["with"]) if pg["with"] else 1.0,
            "without_rate": nwo / len(pg["without"]) if pg["without"] else 1.0,
        })
    summary = {
        "pages": len(per_page),
        "extractions_present": sum(x["present"] for x in per_page),
        "f1": mean([x["f1"] for x in per_page]),
        "precision": mean([x["precision"] for x in per_page]),
        "recall": mean([x["recall"] for x in per_page]),
        "with_found": mean([x["with_rate"] for x in per_page]),
        "without_leaked": mean([x["without_rate"] for x in per_page]),
        "pooled_snippets": {
            "with_found": pool["with_found"], "with_total": pool["with_total"],
            "with_share": pool["with_found"] / pool["with_total"] if pool["with_total"] else None,
            "without_leaked": pool["without_leaked"], "without_total": pool["without_total"],
            "without_share": (pool["without_leaked"] / pool["without_total"]
                              if pool["without_total"] else None),
        },
    }
    by_type = defaultdict(list)
    for x in per_page:
        by_type[x["type"]].append(x)
    per_type = {}
    for t in sorted(by_type):
        xs = by_type[t]
        ref = REFERENCE["per_type_f1"].get(t)
        f1 = mean([x["f1"] for x in xs])
        per_type[t] = {
            "pages": len(xs), "f1": f1,
            "precision": mean([x["precision"] for x in xs]),
            "recall": mean([x["recall"] for x in xs]),
            "reference_f1": ref,
            "at_or_above_reference": None if ref is None else round(f1, 3) >= ref,
        }
    return summary, per_type, per_page


def expand_command(command, out_dir, files):
    if "{files}" not in command:
        raise Fail("--run COMMAND has no {files} placeholder")
    if "{out}" not in command:
        raise Fail("--run COMMAND has no {out} placeholder")
    return (command.replace("{out}", shlex.quote(out_dir))
                   .replace("{files}", " ".join(shlex.quote(f) for f in files)))


def run_command(command, out_dir, pages, data_dir):
    files = []
    for pg in pages:
        path = os.path.join(data_dir, "html", pg["id"] + ".html.gz")
        if not os.path.isfile(path):
            raise Fail(f"missing page file {path}")
        files.append(path)
    shell_cmd = expand_command(command, out_dir, files)
    start = time.monotonic()
    try:
        proc = subprocess.Popen(["/bin/sh", "-c", shell_cmd], stdout=sys.stderr.fileno())
    except OSError as e:
        raise Fail(f"cannot start the command: {e}")
    try:
        _, status, usage = os.wait4(proc.pid, 0)
    except KeyboardInterrupt:
        proc.kill()
        proc.wait()
        raise
    wall = time.monotonic() - start
    proc.returncode = code = os.waitstatus_to_exitcode(status)
    if code != 0:
        how = f"signal {-code}" if code < 0 else f"exit status {code}"
        raise Fail(f"the command failed ({how}): {command}")
    cpu = usage.ru_utime + usage.ru_stime
    return {
        "command": command,
        "cpu_seconds": cpu,
        "user_seconds": usage.ru_utime,
        "sys_seconds": usage.ru_stime,
        "wall_seconds": wall,
        "pages_per_cpu_second": len(pages) / cpu if cpu > 0 else None,
        "max_rss_kib": usage.ru_maxrss,
    }


def fmt(x, digits=3):
    return "-" if x is None else f"{x:.{digits}f}"


def report(summary, per_type, timing, limited):
    ref = REFERENCE
    lines = []
    note = (f"  (reference: all {ref['pages']} pages)" if limited else "")
    lines.append(f"{'':<26}{'ours':>10}  {ref['name']}{note}")
    rows = [
        ("pages", str(summary["pages"]), str(ref["pages"])),
        ("extractions present", str(summary["extractions_present"]), ""),
        ("F1", fmt(summary["f1"]), fmt(ref["f1"])),
        ("P", fmt(summary["precision"]), fmt(ref["precision"])),
        ("R", fmt(summary["recall"]), fmt(ref["recall"])),
        ("with found", fmt(summary["with_found"]), fmt(ref["with_found"])),
        ("without leaked (lower ok)", fmt(summary["without_leaked"]), fmt(ref["without_leaked"])),
    ]
    if timing is not None:
        rows += [
            ("CPU seconds", fmt(timing["cpu_seconds"], 2), ""),
            ("pages per CPU-second", fmt(timing["pages_per_cpu_second"], 1),
             fmt(ref["pages_per_cpu_second"], 1)),
            ("wall seconds", fmt(timing["wall_seconds"], 2), ""),
        ]
    for name, ours, theirs in rows:
        lines.append(f"{name:<26}{ours:>10}  {theirs}")
    ps = summary["pooled_snippets"]
    lines.append(f"(pooled over all snippets: with {ps['with_found']}/{ps['with_total']} found, "
                 f"without {ps['without_leaked']}/{ps['without_total']} leaked)")
    lines.append("")
    lines.append(f"{'page type':<16}{'pages':>6}{'F1':>8}{'P':>8}{'R':>8}"
                 f"{'traf F1':>10}  ≥ trafilatura")
    at_or_above = 0
    compared = 0
    for t, x in per_type.items():
        mark = ""
        if x["at_or_above_reference"] is not None:
            compared += 1
            if x["at_or_above_reference"]:
                at_or_above += 1
                mark = "≥"
        lines.append(f"{t:<16}{x['pages']:>6}{fmt(x['f1']):>8}{fmt(x['precision']):>8}"
                     f"{fmt(x['recall']):>8}{fmt(x['reference_f1']):>10}  {mark}")
    lines.append(f"types at or above trafilatura: {at_or_above} of {compared}")
    return "\n".join(lines), at_or_above, compared


def main(argv):
    ap = Parser(prog="wcxb_score.py",
                description=__doc__.splitlines()[0],
                epilog="See the module docstring for the scoring rules.")
    ap.add_argument("data_dir", metavar="DATA_DIR",
                    help="WCXB split folder holding html/ and ground-truth/")
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--extractions", metavar="DIR", help="folder of NNNN.txt extractions")
    mode.add_argument("--run", metavar="COMMAND",
                      help='extractor command with {out} and {files} placeholders')
    ap.add_argument("--limit", type=int, metavar="N", help="only the first N pages")
    ap.add_argument("--keep", metavar="DIR", help="with --run: write {out} here and keep it")
    ap.add_argument("--json", metavar="OUT.json", help="also write the results as JSON")
    ap.add_argument("--collapse-ws", action="store_true",
                    help="collapse whitespace before snippet matching (not upstream)")
    args = ap.parse_args(argv)
    if args.limit is not None and args.limit < 1:
        raise Fail("--limit must be at least 1")
    if args.keep and not args.run:
        raise Fail("--keep needs --run")

    pages = load_truth(args.data_dir, args.limit)
    timing = None
    tmp = None
    try:
        if args.run:
            if args.keep:
                out_dir = args.keep
                if os.path.exists(out_dir):
                    if not os.path.isdir(out_dir):
                        raise Fail(f"--keep {out_dir} is not a directory")
                    if os.listdir(out_dir):
                        raise Fail(f"--keep {out_dir} is not empty (stale extractions would "
                                   "be scored)")
                else:
                    os.makedirs(out_dir)
            else:
                # tmpfs when there is one: 1,497 small files written, then deleted, into a
                # directory on ext4 make the kernel's inode allocation most of the command's
                # CPU, more in every later run (what the timing is not about).
                shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
                tmp = tempfile.TemporaryDirectory(prefix="wcxb-out-", dir=shm)
                out_dir = tmp.name
            timing = run_command(args.run, out_dir, pages, args.data_dir)
        else:
            out_dir = args.extractions
            if not os.path.isdir(out_dir):
                raise Fail(f"extractions directory not found: {out_dir}")
        summary, per_type, per_page = score(pages, out_dir, args.collapse_ws)
    finally:
        if tmp is not None:
            tmp.cleanup()

    if args.run and summary["extractions_present"] == 0:
        print(f"warning: the command wrote no NNNN.txt files into {{out}}", file=sys.stderr)
    text, at_or_above, compared = report(summary, per_type, timing, args.limit is not None)
    print(text)

    if args.json:
        result = {
            "data_dir": os.path.abspath(args.data_dir),
            "mode": "run" if args.run else "extractions",
            "extractions": None if args.run else os.path.abspath(args.extractions),
            "kept_output": os.path.abspath(args.keep) if args.keep else None,
            "limit": args.limit,
            "snippet_matching": "collapsed whitespace" if args.collapse_ws else "upstream",
            "summary": summary,
            "timing": timing,
            "per_type": per_type,
            "types_at_or_above_reference": at_or_above,
            "types_compared": compared,
            "reference": REFERENCE,
            "per_page": per_page,
        }
        try:
            with open(args.json, "w", encoding="utf-8") as f:
                json.dump(result, f, indent=1, ensure_ascii=False)
                f.write("\n")
        except OSError as e:
            raise Fail(f"cannot write {args.json}: {e}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except BrokenPipeError:  # e.g. piped into head
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)
    except Fail as e:
        print(f"wcxb_score.py: error: {e}", file=sys.stderr)
        sys.exit(2)
