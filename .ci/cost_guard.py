#!/usr/bin/env python3
"""CPU cost guard: instructions per crawled page, counted by valgrind, against a budget.

Builds `benches/cost.rs` in the bench profile (the release settings: what ships), runs it
under callgrind and divides the instructions of its measured function by the pages it ran.
Instruction counts, not time: the same on every run, so a 3 % rise is a real change of the
code and not noise (this VM has no hardware counters, and CI machines are shared). The same
on another machine too with the same toolchain, as long as valgrind offers its CPU the same
features (AVX2 here: code such as memchr picks its path by them; valgrind hides SHA-NI and
AVX-512, so SHA-1 runs its portable code and weighs more than on a real CPU).

Why callgrind and not two cachegrind runs (0 pages and N, subtracted): the driver's inputs
(generated and gzip-encoded pages) grow with N, so a difference would count them too.
Callgrind collects only inside `spinneret_cost_pages` (`--toggle-collect`), which the driver
calls once with everything built and warmed up: one run, nothing but the per-page work.

glibc's memset and memcpy use `rep stosb` / `rep movsb` past 2 KiB, which valgrind counts as
one instruction per byte (hardware as a handful, for ~32 bytes a cycle): zlib-rs clearing its
hash table for every gzip member then made a fifth of the count. The run sets glibc's
tunables so that they take their vector loops instead, whose count follows their cost.

Fails (exit 1) above budget x 1.03; warns below budget x 0.95 (lower the budget then, with
`--update`). Without valgrind it skips (exit 0), unless CI is set.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUDGET_FILE = os.path.join(ROOT, ".ci", "cost_budget.txt")
# The driver's measured function (a `#[no_mangle]` name, so no demangling is involved).
MEASURED_FN = "spinneret_cost_pages"
# Pages measured: 5 s under callgrind. The count is the same from run to run: the only
# randomness on the path, the template memory's HashMap keys, has moved it by at most a few
# hundred instructions in 441 million.
PAGES = 256
# Allowed rise over the budget before the guard fails.
TOLERANCE = 0.03
# Fall below the budget past which the guard asks for the budget to be lowered.
SLACK = 0.05
TOP_FUNCTIONS = 15
# memset and memcpy without `rep stosb` / `rep movsb` (see the top of this file).
GLIBC_TUNABLES = (
    "glibc.cpu.x86_rep_stosb_threshold=0x7fffffffffffffff:"
    "glibc.cpu.x86_rep_movsb_threshold=0x7fffffffffffffff"
)

BUDGET_HEADER = (
    "# Instructions per page of benches/cost.rs under callgrind; .ci/cost_guard.py fails above\n"
    "# 103 % of it. After a speed-up, lower it with `python3 .ci/cost_guard.py --update`; never\n"
    "# raise it without saying why in the commit message.\n"
)


def fail(msg):
    print(f"cost guard: {msg}", file=sys.stderr)
    sys.exit(1)


def in_ci():
    return os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


def build():
    """Builds the driver in the bench profile; returns its executable's path."""
    cmd = [
        "cargo",
        "bench",
        "--no-run",
        "--bench",
        "cost",
        # The `graph` feature only adds the `spinneret graph` command, none of the per-page
        # work (the count is the same with it), and its ~150 crates take a third of a cold
        # build's time.
        "--no-default-features",
        "--message-format=json-render-diagnostics",
    ]
    proc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        fail(f"`{' '.join(cmd)}` failed")
    exe = None
    for line in proc.stdout.splitlines():
        try:
            msg = json.loads(line)
        except json.JSONDecodeError:
            continue
        if msg.get("reason") == "compiler-artifact" and msg["target"]["name"] == "cost":
            exe = msg.get("executable") or exe
    if not exe:
        fail("cargo built no `cost` executable")
    return exe


def measure(exe, out_file):
    """Runs the driver under callgrind; returns the instructions it collected."""
    cmd = [
        "valgrind",
        "--tool=callgrind",
        "--collect-atstart=no",
        f"--toggle-collect={MEASURED_FN}",
        f"--callgrind-out-file={out_file}",
        exe,
        str(PAGES),
    ]
    env = dict(os.environ, GLIBC_TUNABLES=GLIBC_TUNABLES)
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    # The driver's own summary line (the workload), whatever happened.
    for line in proc.stderr.splitlines():
        if line.startswith("cost: "):
            print(line)
    if proc.returncode != 0:
        print(proc.stderr, file=sys.stderr)
        fail(f"the driver failed under valgrind (exit {proc.returncode})")
    with open(out_file, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = re.match(r"(?:totals|summary):\s+(\d+)", line)
            if m:
                total = int(m.group(1))
                break
        else:
            fail(f"no totals in {out_file}")
    if total == 0:
        fail(f"callgrind collected nothing: is `{MEASURED_FN}` still in benches/cost.rs?")
    return total


def short_path(path):
    """A source path without the machine's prefixes: the repo's, cargo's registry, rustc's."""
    if path.startswith(ROOT + "/"):
        return path[len(ROOT) + 1 :]
    path = re.sub(r"^.*/registry/src/[^/]+/", "", path)
    path = re.sub(r"^/rustc/[0-9a-f]+/library/", "", path)
    # glibc's sources (`./string/../sysdeps/...`): the file name says enough.
    return os.path.basename(path) if path.startswith("./") else path


def top_functions(out_file, total, pages):
    """The functions with the most instructions of their own, per page, each with the source
    files of most of them: with inlining, a function's rows are split by the file its code
    came from (simhash.rs inside the driver's `Pipeline::page`, say), which tells where."""
    cmd = ["callgrind_annotate", "--auto=no", "--inclusive=no", "--threshold=100", out_file]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        return [f"(callgrind_annotate failed: {proc.stderr.strip()})"]
    functions = {}
    for line in proc.stdout.splitlines():
        # "1,234,567 (12.34%)  file:function [binary]"; `???` for a file without debug info.
        m = re.match(r"\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.*)$", line)
        if not m or m.group(2).strip() == "PROGRAM TOTALS":
            continue
        where = re.sub(r"\s+\[[^\]]*\]$", "", m.group(2)).strip()
        path, _, function = where.partition(":") if ":" in where else ("???", "", where)
        files = functions.setdefault(function, {})
        files[path] = files.get(path, 0) + int(m.group(1).replace(",", ""))
    ranked = sorted(functions.items(), key=lambda f: -sum(f[1].values()))
    rows = []
    for function, files in ranked[:TOP_FUNCTIONS]:
        count = sum(files.values())
        paths = [short_path(p) for p, _ in sorted(files.items(), key=lambda f: -f[1])]
        paths = [p for p in paths if p != "???"]
        where = ", ".join(paths[:2]) + (", ..." if len(paths) > 2 else "")
        rows.append(
            f"{count / pages:>10,.0f} {100 * count / total:6.2f}%  {function}"
            + (f"  ({where})" if where else "")
        )
    return rows


def read_budget():
    try:
        with open(BUDGET_FILE, encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if line and not line.startswith("#"):
                    return int(line)
    except FileNotFoundError:
        return None
    except ValueError:
        fail(f"{BUDGET_FILE}: not a number of instructions")
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--update",
        action="store_true",
        help="write the measured instructions per page to .ci/cost_budget.txt",
    )
    args = parser.parse_args()
    # In order with cargo's and valgrind's output when CI captures both.
    sys.stdout.reconfigure(line_buffering=True)

    if shutil.which("valgrind") is None or shutil.which("callgrind_annotate") is None:
        if in_ci():
            fail("valgrind is not installed (apt-get install valgrind), and CI is set")
        print("SKIPPED cost guard: valgrind is not installed (apt-get install valgrind)")
        return 0

    started = time.monotonic()
    exe = build()
    built = time.monotonic()
    # The budget is for the build CI makes: with the system's ISA-L (libisal-dev), whose
    # deflate is ~12 % of the count below zlib-rs's. Without it the count says nothing.
    linked = subprocess.run(["ldd", exe], capture_output=True, text=True).stdout
    if "libisal" not in linked and not args.update:
        if in_ci():
            fail("the driver was built without the system's ISA-L (apt-get install libisal-dev)")
        print("SKIPPED cost guard: built without the system's ISA-L, for which the budget is "
              "(apt-get install libisal-dev, and no SPINNERET_NO_SYSTEM_ISAL)")
        return 0
    with tempfile.TemporaryDirectory(prefix="cost-guard-") as tmp:
        out_file = os.path.join(tmp, "callgrind.out")
        total = measure(exe, out_file)
        top = top_functions(out_file, total, PAGES)
    measured = time.monotonic()
    per_page = round(total / PAGES)

    print(
        f"cost guard: {per_page:,} instructions per page "
        f"({total:,} over {PAGES} pages; build {built - started:.0f} s, "
        f"callgrind {measured - built:.0f} s)"
    )
    print(f"top {len(top)} functions by their own instructions, per page:")
    for row in top:
        print(f"  {row}")

    if args.update:
        with open(BUDGET_FILE, "w", encoding="utf-8") as f:
            f.write(BUDGET_HEADER)
            f.write(f"{per_page}\n")
        print(f"cost guard: budget set to {per_page:,} in {os.path.relpath(BUDGET_FILE, ROOT)}")
        return 0

    budget = read_budget()
    if budget is None:
        fail(f"no budget in {BUDGET_FILE}: write one with --update")
    ratio = per_page / budget
    print(
        f"cost guard: budget {budget:,} per page, measured/budget = {ratio:.4f} "
        f"(fails above {1 + TOLERANCE:.2f})"
    )
    if ratio > 1 + TOLERANCE:
        fail(
            f"FAILED: {per_page:,} instructions per page is {100 * (ratio - 1):.1f} % over "
            f"the budget of {budget:,} (allowed: {100 * TOLERANCE:.0f} %). The functions "
            "above show where the cost went; if the rise is wanted, raise the budget with "
            "--update and say why in the commit message."
        )
    if ratio < 1 - SLACK:
        print(
            f"cost guard: WARNING: {100 * (1 - ratio):.1f} % below the budget: lower it with "
            "`python3 .ci/cost_guard.py --update` and commit .ci/cost_budget.txt, so the "
            "guard holds the gain."
        )
    print("cost guard: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
