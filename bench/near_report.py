#!/usr/bin/env python3
"""Quality report for near mode (used by bench/near.sh).

Usage: near_report.py INPUT_DIR EXACT_OUT NEAR_OUT NEAR_SMOOTH_OUT NEAR_FEEDBACK_OUT

1. Share of paragraphs kept per crawl and language, by mode, from the `.dd` lists
   (K: all of the document's paragraphs, N/M: N, D/E/U: none) and the inputs'
   `<doc lang=.. crawl=..>` attributes and paragraph counts.
2. Twenty near-duplicate drops (text not identical to the original) from the
   feedback run, beside their originals, for a human to judge.
"""
import os
import re
import sys
from collections import defaultdict

inp, exact, near, smooth, fb = sys.argv[1:6]
ATTR = re.compile(r'(\w+)="([^"]*)"')


def files(root):
    out = []
    for d, _, names in os.walk(root):
        for n in names:
            if n.endswith(".vert"):
                out.append(os.path.relpath(os.path.join(d, n), root))
    return sorted(out)


def docs(path):
    """(lang, crawl, paragraphs) per document, and the paragraph texts in order."""
    result, paras, cur, words = [], [], None, None
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("<doc"):
                a = dict(ATTR.findall(line))
                cur = [a.get("lang", "?"), a.get("crawl", "?"), 0]
                result.append(cur)
            elif line.startswith("<p"):
                words = []
            elif line == "</p>":
                cur[2] += 1
                paras.append(" ".join(words or []))
                words = None
            elif words is not None and not line.startswith("<"):
                words.append(line.split("\t")[0])
    return result, paras


def kept(status, n):
    if status == "K":
        return n
    m = re.match(r"(\d+)/(\d+)", status)
    return int(m.group(1)) if m else 0


rels = files(inp)
inputs = {r: docs(os.path.join(inp, r)) for r in rels}
modes = [("exact", exact), ("near", near), ("near --smooth", smooth)]
total = defaultdict(int)
kept_by = defaultdict(lambda: defaultdict(int))
for rel in rels:
    ds, _ = inputs[rel]
    for _, lang, crawl, n in [(None, *d) for d in ds]:
        total[(crawl, lang)] += n
    for name, out in modes:
        with open(os.path.join(out, rel + ".dedup.dd"), encoding="utf-8") as f:
            statuses = [re.search(r'status="([^"]*)"', l).group(1) for l in f]
        assert len(statuses) == len(ds), f"{rel}: {len(statuses)} .dd lines, {len(ds)} documents"
        for (lang, crawl, n), st in zip(ds, statuses):
            kept_by[name][(crawl, lang)] += kept(st, n)

print("\n#### Paragraphs kept, per crawl and language\n")
print("| crawl | language | paragraphs | " + " | ".join(m for m, _ in modes) + " |")
print("|---|---|---:|" + "---:|" * len(modes))
for key in sorted(total):
    row = [f"{100 * kept_by[m][key] / total[key]:.1f}%" for m, _ in modes]
    print(f"| {key[0]} | {key[1]} | {total[key]:,} | " + " | ".join(row) + " |")
all_t = sum(total.values())
row = [f"{100 * sum(kept_by[m].values()) / all_t:.1f}%" for m, _ in modes]
print(f"| **all** | | {all_t:,} | " + " | ".join(row) + " |")

# Twenty near duplicates beside their originals.
ids = {}
with open(os.path.join(fb, "files.idx"), encoding="utf-8") as f:
    for line in f:
        i, rel = line.rstrip("\n").split("\t")
        ids[i] = rel
pairs = []
for rel in rels:
    path = os.path.join(fb, rel + ".dedup.dropped")
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    for m in re.finditer(r"<t>(\w+):(\d+)\t(\w+):(\d+)</f>", text):
        (_, _, of, orec) = m.groups()
        if of not in ids or orec == "0":
            continue
        drec = int(m.group(2))
        dropped = inputs[ids[m.group(1)]][1][drec - 1]
        original = inputs[ids[of]][1][int(orec) - 1]
        if dropped.lower() != original.lower() and len(dropped) > 60:
            pairs.append((ids[m.group(1)], drec, dropped, ids[of], int(orec), original))
print(f"\n#### Twenty near-duplicate drops beside their originals ({len(pairs):,} non-identical drops; every {max(1, len(pairs) // 20)}th shown)\n")
step = max(1, len(pairs) // 20)
for k, (dr, dn, dt, orl, on, ot) in enumerate(pairs[::step][:20], 1):
    cut = lambda s: (s[:220] + " …") if len(s) > 220 else s
    print(f"{k}. dropped `{dr}:{dn}`: {cut(dt)}\n   original `{orl}:{on}`: {cut(ot)}\n")
