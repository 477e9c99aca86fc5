#!/usr/bin/env python3
"""Slices the shipped sample (sample/web3-mini) out of ../shared/corpus/web3.

From each of the three crawls it keeps the documents of a fixed choice of pages that
recur across crawls (SQLite and git pages keep their URL from crawl to crawl, Python
and PostgreSQL pages put the version in the URL (matched here by the rest of the
path), plus the first few documents of every language other than English. Documents keep
their order of the source file. Needs the `zstd` command. Run from the repo root:

    python3 bench/make_sample.py ../shared/corpus/web3 sample/web3-mini
"""
import gzip
import os
import re
import subprocess
import sys

PER_SITE = {"sqlite.org": 50, "git-scm.com": 40, "docs.python.org": 40, "www.postgresql.org": 30,
            "help.libreoffice.org": 10, "debian-handbook.info": 10}
# Besides, the first documents of every other language in every crawl.
PER_LANGUAGE = 8


def docs(path):
    data = subprocess.run(["zstd", "-dc", path], check=True, capture_output=True).stdout
    for m in re.finditer(rb"<doc [^\n]*>\n.*?\n</doc>\n", data, re.S):
        yield m.group(0)


def page_of(doc):
    url = re.search(rb'url="([^"]*)"', doc).group(1).decode()
    host = url.split("/")[2]
    path = re.sub(r"/(\d+(\.\d+)*|current)/", "/V/", url.split(host, 1)[1])
    return host, path


def main(src, dst):
    crawls = sorted(d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d)))
    by_crawl = {c: [] for c in crawls}
    pages_in = {}
    for c in crawls:
        for f in sorted(os.listdir(os.path.join(src, c))):
            for d in docs(os.path.join(src, c, f)):
                host, path = page_of(d)
                by_crawl[c].append((host, path, d))
                pages_in.setdefault((host, path), set()).add(c)
    # Pages present in at least two crawls, a fixed number per site, chosen by name.
    chosen = set()
    for host, n in PER_SITE.items():
        recurring = sorted(p for p, cs in pages_in.items() if p[0] == host and len(cs) >= 2)
        chosen.update(recurring[:n])
    for c in crawls:
        out = os.path.join(dst, c)
        os.makedirs(out, exist_ok=True)
        per_lang = {}
        kept = []
        for host, path, d in by_crawl[c]:
            lang = re.search(rb'lang="([^"]*)"', d).group(1)
            extra = lang != b"en" and per_lang.get(lang, 0) < PER_LANGUAGE
            if (host, path) in chosen or extra:
                kept.append(d)
                if lang != b"en":
                    per_lang[lang] = per_lang.get(lang, 0) + 1
        with gzip.GzipFile(os.path.join(out, "part-00000.vert.gz"), "wb", mtime=0) as g:
            g.write(b"".join(kept))
        print(c, len(kept), "documents", sum(map(len, kept)), "bytes")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
