#!/usr/bin/env python3
"""cpu-by-process.py COMMAND...: runs COMMAND and prints where the machine's CPU went meanwhile.

`time` counts only the processes a command waits for, and make test's PostgreSQL servers,
HAProxy, Redis and contactd processes are daemons it does not wait for. This samples every
process of the machine twice a second (/proc/PID/stat: user + system time) and adds them up
by kind: PostgreSQL by its data directory's role (the tests' own, the cluster's, the bench's),
test binaries by package, the Go toolchain's steps (compile, link, vet) and the rest by
program name. A process that lives under half a second between samples can be missed.

    scripts/cpu-by-process.py make test
"""
import collections
import os
import re
import subprocess
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")


def kind(pid):
    try:
        args = [a.decode(errors="replace") for a in open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0") if a]
    except OSError:
        return None
    if not args:
        return None
    exe = os.path.basename(args[0].split(" ")[0])
    if args[0].startswith("postgres") or "/postgresql/" in args[0]:
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            cwd = "?"
        cwd = re.sub(r"-?[0-9]{3,}", "", cwd)  # one row per role, not per run
        return "postgres " + cwd
    if exe.endswith(".test"):
        return "go test binary " + exe
    if exe in ("compile", "link", "vet", "asm", "cgo"):
        return "go toolchain: " + exe
    if "chromium" in exe or exe.startswith("contactd-chromium") or re.match(r"^\d+$", exe):
        return "chromium"
    return exe


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    base = {}  # (pid, start time) -> ticks already spent when first seen, for processes older than the command
    seen = {}  # (pid, start time) -> [kind, ticks spent since]
    first = True
    child = subprocess.Popen(sys.argv[1:])
    t0 = time.monotonic()
    while True:
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                stat = open(f"/proc/{pid}/stat").read()
            except OSError:
                continue
            fields = stat[stat.rfind(")") + 2:].split()
            ticks, started = int(fields[11]) + int(fields[12]), fields[19]
            key = (pid, started)
            if key not in seen:
                base[key] = ticks if first else 0
                seen[key] = [kind(pid) or stat[stat.find("(") + 1:stat.rfind(")")], 0]
            seen[key][1] = ticks - base[key]
        first = False
        if child.poll() is not None:
            break
        time.sleep(0.5)
    wall = time.monotonic() - t0
    total = collections.Counter()
    for name, ticks in seen.values():
        total[name] += ticks / TICK
    cpu = sum(total.values())
    print(f"\n{sys.argv[1:]}: exit {child.returncode}, {wall:.0f} s wall, {cpu:.0f} CPU-s "
          f"({cpu / wall / os.cpu_count():.0%} of {os.cpu_count()} cores)", file=sys.stderr)
    for name, secs in total.most_common(30):
        if secs >= 1:
            print(f"{secs:8.1f} s  {name}", file=sys.stderr)
    sys.exit(child.returncode)


if __name__ == "__main__":
    main()
