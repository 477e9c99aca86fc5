#!/usr/bin/env python3
"""Synthetic JSON Lines documents for bench/minhash_scale.sh, with a known share of
near-duplicates, deterministic for a seed.

Usage: minhash_synth.py N [DUP_FRACTION] [SEED] > docs.jsonl

Each line is {"id": "dI", "text": ...}. An original is 60-140 words drawn from a
20,000-word vocabulary (so two originals share almost no word 5-gram). A
near-duplicate (probability DUP_FRACTION, default 0.2) copies one of the last
100,000 originals and replaces 1 or 2 of its words, which leaves word 5-gram Jaccard
similarity of about 0.8-0.95 with it: `webdedup minhash` at its defaults (14 x 8
bands, --verify 0.8) drops most of them. The expected numbers are printed to
stderr at the end.
"""

import random
import sys


def main():
    n = int(sys.argv[1])
    frac = float(sys.argv[2]) if len(sys.argv) > 2 else 0.2
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 1)
    # Letters only: the loose normalization turns digits into 0.
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocab = ["".join(letters[(i // 26**k) % 26] for k in range(4)) for i in range(20000)]
    recent, dups = [], 0
    out = sys.stdout
    buf = []
    for i in range(n):
        if recent and rng.random() < frac:
            words = list(rng.choice(recent))
            for _ in range(rng.randint(1, 2)):
                words[rng.randrange(len(words))] = rng.choice(vocab)
            dups += 1
        else:
            words = rng.choices(vocab, k=rng.randint(60, 140))
            if len(recent) < 100_000:
                recent.append(words)
            else:
                recent[rng.randrange(100_000)] = words
        buf.append('{"id":"d%d","text":"%s"}\n' % (i, " ".join(words)))
        if len(buf) >= 10_000:
            out.write("".join(buf))
            buf.clear()
    out.write("".join(buf))
    print(f"minhash_synth: {n} documents, {dups} near-duplicates ({dups / max(n, 1):.3f})", file=sys.stderr)


if __name__ == "__main__":
    main()
