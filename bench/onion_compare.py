#!/usr/bin/env python3
"""Paragraph by paragraph, do webdedup and onion make the same decisions?

Usage: onion_compare.py IN_DIR OUT_DIR ONION_MARKED [--show N]

IN_DIR holds the input verticals (decompressed), OUT_DIR webdedup's outputs of them
(`REL.dedup`, `REL.dedup.dd`, written with --dd), ONION_MARKED onion's marked output
(`onion` without -s: `0<TAB>line` kept, `1<TAB>line` dropped) of the same files
concatenated in sorted relative-path order (the order webdedup reads a directory).

A paragraph is a `<p>` line (onion's rule: a line starting with `<p>` or `<p `) and
the lines up to its `</p>`. onion's decision is the mark of its `<p>` line.
webdedup's: the `.dd` status of its document (K: all kept; D, E, U: none), and for a
partly kept document (N/M), whether the paragraph is the next one of the written
document (the output is a subsequence of the input, byte for byte).
"""
import os
import re
import sys

STATUS = re.compile(rb'status="([^"]*)"')


def is_par_open(line):
    return line.startswith(b"<p>") or line.startswith(b"<p ")


def docs_of(lines):
    """The documents of a vertical: lists of paragraphs (tuples of lines)."""
    docs = []
    paras = None
    cur = None
    for line in lines:
        if line.startswith(b"<doc ") or line.startswith(b"<doc>"):
            paras = []
            docs.append(paras)
            cur = None
        elif paras is None:
            continue
        elif is_par_open(line):
            cur = [line]
            paras.append(cur)
        elif cur is not None:
            cur.append(line)
            if line.startswith(b"</p>"):
                cur = None
    return [[tuple(p) for p in d] for d in docs]


def webdedup_decisions(in_dir, out_dir):
    """1 (dropped) or 0 (kept) for every paragraph, files in sorted order."""
    rels = sorted(
        os.path.relpath(os.path.join(d, f), in_dir)
        for d, _, fs in os.walk(in_dir)
        for f in fs
    )
    marks = []
    for rel in rels:
        with open(os.path.join(in_dir, rel), "rb") as f:
            in_docs = docs_of(f.read().split(b"\n"))
        with open(os.path.join(out_dir, rel + ".dedup"), "rb") as f:
            out_docs = iter(docs_of(f.read().split(b"\n")))
        with open(os.path.join(out_dir, rel + ".dedup.dd"), "rb") as f:
            statuses = [STATUS.search(l).group(1) for l in f if l.startswith(b"<dd")]
        if len(statuses) != len(in_docs):
            sys.exit(f"{rel}: {len(statuses)} .dd lines for {len(in_docs)} documents")
        for paras, status in zip(in_docs, statuses):
            if status == b"K":
                out = next(out_docs)
                marks.extend(0 for _ in paras)
            elif b"/" in status:
                out = next(out_docs)
                k = 0
                for p in paras:
                    if k < len(out) and out[k] == p:
                        marks.append(0)
                        k += 1
                    else:
                        marks.append(1)
            else:
                marks.extend(1 for _ in paras)
    return marks


def onion_decisions(path):
    marks = []
    with open(path, "rb") as f:
        for line in f:
            if line[2:4] == b"<p" and (line[4:5] in (b">", b" ")):
                marks.append(1 if line[:1] == b"1" else 0)
    return marks


def main():
    in_dir, out_dir, marked = sys.argv[1:4]
    ours = webdedup_decisions(in_dir, out_dir)
    theirs = onion_decisions(marked)
    if len(ours) != len(theirs):
        sys.exit(f"paragraph counts differ: webdedup {len(ours)}, onion {len(theirs)}")
    same = sum(a == b for a, b in zip(ours, theirs))
    only_ours = sum(a == 1 and b == 0 for a, b in zip(ours, theirs))
    only_theirs = sum(a == 0 and b == 1 for a, b in zip(ours, theirs))
    n = len(ours)
    print(
        f"paragraphs {n:,}: identical decisions {same:,} ({same / n * 100:.3f}%); "
        f"dropped only by webdedup {only_ours:,}, only by onion {only_theirs:,}; "
        f"kept: webdedup {ours.count(0) / n * 100:.2f}%, onion {theirs.count(0) / n * 100:.2f}%"
    )
    if "--show" in sys.argv:
        show = int(sys.argv[sys.argv.index("--show") + 1])
        print("first differing paragraph indexes:",
              [i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b][:show])


if __name__ == "__main__":
    main()
