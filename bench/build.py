#!/usr/bin/env python3
"""Install size and cold release build time, before and after, side by side in one run.

Usage: python3 bench/build.py --before REF [--after REF ...] [--nice 19] [--keep]

Each side is a clean `git archive` of its commit built from nothing (its own CARGO_TARGET_DIR,
the crates already downloaded), one after the other, with what `make build` runs at that
commit: `cargo build --locked --release`, or `... --bin agent-meeting` once the Makefile builds
only the multicall executable. Reported per side: wall time, CPU time (user + sys of every
process of the build), the load average at its start, and the size of the programs as
`make install` installs them (the nine executables before; the one executable and nine
symbolic links after). Prints a Markdown section for bench/RESULTS.md on stdout. `--after` may be
given more than once to compare candidates with the baseline in the same run (built in the order
given, after the baseline).

The machine may be shared: compare the ratios (CPU time above all), not absolute times.
"""

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGRAMS = ["agent-builder", "agent-turn", "collect-context", "init-board", "meeting",
            "merge-board", "next-stage", "pm-step", "render-report"]
MIB = 1024 * 1024


def git(*args):
    return subprocess.run(["git", "-C", ROOT, *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def build_command(src):
    """What `make build` runs in the tree `src`: its cargo line (make would also make links)."""
    makefile = open(os.path.join(src, "Makefile")).read()
    m = re.search(r"^build:.*\n\t\$\(CARGO\) (build[^\n]*)", makefile, re.M)
    if not m:
        raise SystemExit(f"bench/build.py: no `build:` rule with a cargo line in {src}/Makefile")
    return ["cargo", *m.group(1).split()]


def installed_size(release):
    """Bytes of what `make install` puts in bin/ (links count as the target, once)."""
    seen, total, files = set(), 0, []
    for name in ["agent-meeting", *PROGRAMS]:
        p = os.path.join(release, name)
        if not os.path.exists(p):
            continue
        real = os.path.realpath(p)
        if real in seen:
            continue
        seen.add(real)
        size = os.path.getsize(real)
        total += size
        files.append((os.path.basename(real), size))
    return total, files


def measure(label, ref, work, nice):
    src = os.path.join(work, f"src-{label}")
    target = os.path.join(work, f"target-{label}")
    os.makedirs(src)
    archive = subprocess.run(["git", "-C", ROOT, "archive", ref], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", src], input=archive, check=True)
    cmd = build_command(src)
    if nice:
        cmd = ["nice", "-n", str(nice), *cmd]
    env = dict(os.environ, CARGO_TARGET_DIR=target)
    for k in list(env):
        if k.startswith("CARGO_PROFILE_") or k in ("RUSTFLAGS", "CARGO_BUILD_RUSTFLAGS"):
            del env[k]
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"bench/build.py: {label} ({ref}): {' '.join(cmd)} (load {load})", file=sys.stderr)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    subprocess.run(cmd, cwd=src, env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    user = after.ru_utime - before.ru_utime
    sys_ = after.ru_stime - before.ru_stime
    size, files = installed_size(os.path.join(target, "release"))
    print(f"bench/build.py: {label}: wall {wall:.0f} s, CPU {user + sys_:.0f} s, "
          f"{size / MIB:.1f} MiB", file=sys.stderr)
    return {"label": label, "ref": ref, "cmd": " ".join(cmd[3:] if nice else cmd),
            "load": load, "wall": wall, "cpu": user + sys_, "size": size, "files": files}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True, help="git ref of the baseline")
    ap.add_argument("--after", action="append",
                    help="git ref measured against it (HEAD); repeat to compare several")
    ap.add_argument("--nice", type=int, default=19, help="nice level of the builds (19; 0: none)")
    ap.add_argument("--keep", action="store_true", help="keep the build folders")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="agent-meeting-build-bench-", dir=os.environ.get("BENCH_DIR"))
    try:
        afters = [git("rev-parse", "--short", r) for r in a.after or ["HEAD"]]
        sides = [measure("before", git("rev-parse", "--short", a.before), work, a.nice)]
        for i, ref in enumerate(afters):
            label = "after" if len(afters) == 1 else f"after-{i + 1}"
            sides.append(measure(label, ref, work, a.nice))
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    b = sides[0]
    rustc = subprocess.run(["rustc", "--version"], capture_output=True, text=True).stdout.strip()
    refs = " ".join(f"--after {s['ref']}" for s in sides[1:])
    out = [f"Measured by `python3 bench/build.py --before {b['ref']} {refs}` "
           f"({rustc}, nproc {os.cpu_count()}, builds under `nice -n {a.nice}`, one after the "
           "other, each cold: its own empty target folder, crates already downloaded).", "",
           "| build | command | load at start | wall | CPU (user+sys) | installed programs |",
           "|---|---|---|---:|---:|---:|"]
    for s in sides:
        out.append(f"| {s['label']} ({s['ref']}) | `{s['cmd']}` | {s['load']} | "
                   f"{s['wall'] / 60:.1f} min | {s['cpu'] / 60:.1f} min | "
                   f"{s['size'] / MIB:.1f} MiB |")
    for n in sides[1:]:
        out.append(f"| {n['label']} / before | | | {n['wall'] / b['wall']:.2f} | "
                   f"{n['cpu'] / b['cpu']:.2f} | {n['size'] / b['size']:.2f} |")
    out.append("")
    for s in sides:
        listed = ", ".join(f"{f} {size / MIB:.1f}" for f, size in s["files"])
        out.append(f"- {s['label']}: {listed} (MiB)")
    print("\n".join(out))


if __name__ == "__main__":
    main()
