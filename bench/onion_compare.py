#!/usr/bin/env python3
"""Paragraph by paragraph, do webdedup and onion make the same decisions?

  onion_compare.py number IN_DIR NUM_DIR
      Copies the verticals of IN_DIR to NUM_DIR, numbering every paragraph: a `<p>`
      line (onion's rule: a line starting with `<p>` or `<p `) gets an attribute
      `n="K"` (K counts from 0 over the files in sorted relative-path order, the
      order webdedup reads a directory). Attributes change no token and no
      paragraph boundary, for onion or webdedup; they make each kept paragraph
      recognisable in the output, even among identical neighbours.
  onion_compare.py compare NUM_DIR OUT_DIR ONION_MARKED
      OUT_DIR holds webdedup's outputs of NUM_DIR (`REL.dedup`), ONION_MARKED
      (`-`: standard input) onion's marked output (no -s: `0<TAB>line` kept, `1<TAB>line` dropped) of
      NUM_DIR's files concatenated in sorted order. A paragraph is kept by
      webdedup when its `<p n="K"` line is in the output, by onion when its `<p`
      line is marked 0. Prints how many decisions are identical.
"""
import os
import re
import sys

NUMBER = re.compile(rb'^<p n="(\d+)"')


def files(root):
    return sorted(
        os.path.relpath(os.path.join(d, f), root)
        for d, _, fs in os.walk(root)
        for f in fs
    )


def number(in_dir, num_dir):
    k = 0
    for rel in files(in_dir):
        os.makedirs(os.path.dirname(os.path.join(num_dir, rel)), exist_ok=True)
        with open(os.path.join(in_dir, rel), "rb") as f, open(
            os.path.join(num_dir, rel), "wb"
        ) as out:
            for line in f:
                if line.startswith(b"<p>") or line.startswith(b"<p "):
                    line = b'<p n="%d"' % k + (b" " if line[2:3] == b" " else b"") + line[2:].lstrip(b" ")
                    k += 1
                out.write(line)
    print(f"numbered {k:,} paragraphs")


def compare(num_dir, out_dir, marked):
    theirs = []
    with (sys.stdin.buffer if marked == "-" else open(marked, "rb")) as f:
        for line in f:
            m = NUMBER.match(line[2:])
            if m:
                if int(m.group(1)) != len(theirs):
                    sys.exit(f"onion's output lost paragraph {len(theirs)}")
                theirs.append(line[:1] == b"1")
    n = len(theirs)
    ours = [True] * n
    for d, _, fs in os.walk(out_dir):
        for name in fs:
            if not name.endswith(".dedup"):
                continue
            with open(os.path.join(d, name), "rb") as f:
                for line in f:
                    m = NUMBER.match(line)
                    if m:
                        ours[int(m.group(1))] = False
    same = sum(a == b for a, b in zip(ours, theirs))
    only_ours = sum(a and not b for a, b in zip(ours, theirs))
    only_theirs = sum(b and not a for a, b in zip(ours, theirs))
    kept_ours, kept_theirs = ours.count(False), theirs.count(False)
    print(
        f"paragraphs {n:,}: identical decisions {same:,} ({same / n * 100:.3f}%); "
        f"dropped only by webdedup {only_ours:,}, only by onion {only_theirs:,}; "
        f"kept: webdedup {kept_ours / n * 100:.2f}%, onion {kept_theirs / n * 100:.2f}%"
    )
    differing = [i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b]
    if differing:
        print("first differing paragraphs (n):", differing[:20])


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "number":
        number(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 5 and sys.argv[1] == "compare":
        compare(*sys.argv[2:5])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
