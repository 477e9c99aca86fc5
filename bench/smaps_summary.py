#!/usr/bin/env python3
"""Where a hash server's memory is: Rss of each of its mappings by kind, from the
/proc/PID/smaps files `SMAPS=DIR bench/minhash_scale.sh N` saves, in MB and in B a
key of the server's (from DIR/status.json, `webdedup status --json`).

Usage: bench/smaps_summary.py DIR

Kinds: the binary's pages read from its file (text, rodata, relocations), its
pages written after loading (relocated .data.rel.ro, .data, .bss: dirty anonymous
pages of a file mapping), the C heap (the main arena), other malloc arenas (64 MB
reservations of the connection threads), thread stacks (a mapping after a guard
page), the tables' arena (the 1 TiB reservation), shared libraries, other
anonymous mappings.
"""
import json
import os
import re
import sys

HEADER = re.compile(r"^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \d+\s*(.*)$")


def mappings(path):
    """Yields dicts: start, end, perms, name, and the smaps fields in kB."""
    m = None
    with open(path) as f:
        for line in f:
            h = HEADER.match(line)
            if h:
                if m:
                    yield m
                m = {
                    "start": int(h[1], 16),
                    "end": int(h[2], 16),
                    "perms": h[3],
                    "name": h[4].strip(),
                }
                continue
            k, _, v = line.partition(":")
            v = v.strip()
            if v.endswith(" kB"):
                m[k] = int(v[:-3])
    if m:
        yield m


def classify(maps):
    """Kind of each mapping (same order)."""
    exe = None
    for m in maps:
        if "r-x" in m["perms"] and m["name"].startswith("/") and "webdedup" in m["name"]:
            exe = m["name"]
            break
    kinds = []
    prev = None
    for m in maps:
        name, size = m["name"], m["end"] - m["start"]
        if name == exe:
            if "x" in m["perms"]:
                k = "binary text"
            elif m.get("Anonymous", 0) or "w" in m["perms"]:
                k = "binary written (relro, data)"
            else:
                k = "binary read-only (rodata, relocations)"
        elif name == "[heap]":
            k = "C heap (main arena)"
        elif name.startswith("[stack"):
            k = "thread stacks"
        elif name.startswith("/") or name.startswith("["):
            k = "libraries, vdso"
        elif size == 1 << 40:
            k = "tables' arena"
        elif (prev and prev["perms"] == "---p" and prev["end"] == m["start"]
              and prev["end"] - prev["start"] == 4096 and m["perms"] == "rw-p"):
            k = "thread stacks"
        elif m["start"] % (64 << 20) == 0 or (prev and prev["end"] == m["start"]
                                            and kinds and kinds[-1] == "malloc arenas"):
            k = "malloc arenas"
        else:
            k = "other anonymous"
        kinds.append(k)
        prev = m
    return kinds


def main():
    d = sys.argv[1]
    status = {}
    try:
        with open(os.path.join(d, "status.json")) as f:
            s = json.load(f)
        for srv in s.get("servers", []):
            srv = srv.get("details") or {}
            if srv.get("pid"):
                status[str(srv["pid"])] = srv
    except (OSError, ValueError):
        pass
    for fn in sorted(os.listdir(d)):
        if not fn.endswith(".smaps"):
            continue
        pid = fn[: -len(".smaps")]
        maps = list(mappings(os.path.join(d, fn)))
        kinds = classify(maps)
        by = {}
        for m, k in zip(maps, kinds):
            by[k] = by.get(k, 0) + m.get("Rss", 0)
        total = sum(by.values())
        srv = status.get(pid, {})
        keys = srv.get("keys") or 0
        hwm = 0
        with open(os.path.join(d, pid + ".status")) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    hwm = int(line.split()[1])
        per = (lambda kb: f"{kb * 1024 / keys:5.2f} B/key") if keys else (lambda kb: "")
        print(f"server pid {pid}: keys {keys:,}, Rss {total / 1024:.1f} MB ({per(total)}),"
              f" VmHWM {hwm / 1024:.1f} MB ({per(hwm)})")
        if srv.get("memory_bytes"):
            mb = srv["memory_bytes"]
            print(f"  store's own count (tables): {mb / 2**20:8.1f} MB  {mb / keys:5.2f} B/key")
        for k, kb in sorted(by.items(), key=lambda kv: -kv[1]):
            print(f"  {k:40} {kb / 1024:8.1f} MB  {per(kb)}")


if __name__ == "__main__":
    main()
