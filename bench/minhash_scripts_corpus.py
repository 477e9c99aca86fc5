#!/usr/bin/env python3
"""A mixed-script corpus with exact and near duplicates, for the MinHash script study
(crates/minhash/examples/minhash_script_study.rs) and the test slice
(sample/scripts-mini/scripts.jsonl.gz).

    bench/minhash_scripts_corpus.py WEB3_JSONL THAI_MO_DIR OUT.jsonl [--slice]

Documents, all from Debian packages:
* zh, ja (Debian Handbook, written without spaces) and en, de, cs, ru (LibreOffice
  help, Debian Handbook, Python/PostgreSQL/SQLite/git docs) from the shared corpus's
  web3-jsonl (dolma layout; its `metadata.lang`);
* th: the Thai messages of LibreOffice (`libreoffice-l10n-th`, MPL-2.0: its `.mo`
  catalogues, `apt-get download libreoffice-l10n-th` then `dpkg-deb -x`), 30
  messages a document, one a line, in catalogue order.

Then, for a share of the documents, a later copy: exact, or edited at a rate drawn
from RATES (each unit, a character in zh/ja/th and a word elsewhere, replaced,
deleted or doubled with that probability), so that Jaccard similarities spread on
both sides of 0.8. The order is shuffled (seeded: SEED in the environment, default
20261127): the same file on every run.
Ids are `LANG-NNNNN` for originals and `LANG-NNNNN-cK-RATE` for copies: the study
takes a document's language from its id.
"""
import gettext
import glob
import gzip
import json
import os
import random
import subprocess
import sys

UNSPACED = {"zh", "ja", "th"}
LANGS = ["en", "de", "cs", "ru", "zh", "ja", "th"]
RATES = [0.0, 0.003, 0.01, 0.02, 0.03, 0.05, 0.08]


def web3_docs(web3_jsonl):
    by_lang = {l: [] for l in LANGS}
    seen = set()
    for f in sorted(glob.glob(f"{web3_jsonl}/*/*.jsonl.zst")):
        data = subprocess.run(["zstd", "-dc", f], check=True, capture_output=True).stdout
        for line in data.decode("utf-8").splitlines():
            d = json.loads(line)
            lang, text = d["metadata"]["lang"], d["text"]
            if lang in by_lang and text not in seen and len(text) >= 300:
                seen.add(text)
                by_lang[lang].append(text)
    return by_lang


def thai_docs(mo_dir, per_doc=30):
    docs = []
    for f in sorted(glob.glob(f"{mo_dir}/*.mo")):
        with open(f, "rb") as fh:
            catalog = gettext.GNUTranslations(fh)._catalog
        msgs = [
            s.strip()
            for _, s in sorted(catalog.items(), key=lambda kv: str(kv[0]))
            if isinstance(s, str) and any("\u0e00" <= c <= "\u0e7f" for c in s)
        ]
        for i in range(0, len(msgs) - per_doc + 1, per_doc):
            text = "\n".join(m.replace("\n", " ") for m in msgs[i : i + per_doc])
            if len(text) >= 300:
                docs.append(text)
    return docs


def edit(text, lang, rate, rng):
    """The text with each unit (character or word) replaced, deleted or doubled with
    probability `rate`; lines kept."""
    out_lines = []
    for line in text.split("\n"):
        units = list(line) if lang in UNSPACED else line.split(" ")
        out = []
        for u in units:
            if rng.random() >= rate:
                out.append(u)
                continue
            op = rng.randrange(3)
            if op == 0:
                out.append(rng.choice(units))
            elif op == 2:
                out += [u, u]
        out_lines.append(("" if lang in UNSPACED else " ").join(out))
    return "\n".join(out_lines)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    small = "--slice" in sys.argv
    web3_jsonl, mo_dir, out = args
    rng = random.Random(int(os.environ.get("SEED", "20261127")))
    sources = web3_docs(web3_jsonl)
    sources["th"] = thai_docs(mo_dir)
    per_lang = 6 if small else 200
    docs = []
    for lang in LANGS:
        pool = sources[lang]
        rng.shuffle(pool)
        for n, text in enumerate(pool[:per_lang]):
            if small:
                # A few KB a document: cut at a line end.
                cut = text.rfind("\n", 0, 1500)
                text = text[: cut if cut > 0 else 1500]
            docs.append((f"{lang}-{n:05}", lang, text))
    copies = []
    for id_, lang, text in docs:
        if small:
            # Light edits only: every copy is a near duplicate (Jaccard about 0.9).
            rate = 0.004
        elif rng.random() < 0.4:
            rate = rng.choice(RATES)
        else:
            continue
        copies.append((f"{id_}-c1-{rate}", lang, edit(text, lang, rate, rng)))
    if small:
        # Originals first, then their copies: each copy has its original before it.
        everything = docs + copies
    else:
        everything = docs + copies
        rng.shuffle(everything)
    lines = "".join(
        json.dumps({"id": i, "text": t, "metadata": {"lang": l}}, ensure_ascii=False) + "\n"
        for i, l, t in everything
    ).encode("utf-8")
    with open(out, "wb") as fh:
        # mtime 0: the same bytes on every run.
        fh.write(gzip.compress(lines, mtime=0) if out.endswith(".gz") else lines)
    print(f"{out}: {len(docs)} documents, {len(copies)} copies", file=sys.stderr)


if __name__ == "__main__":
    main()
