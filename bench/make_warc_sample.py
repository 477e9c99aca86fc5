#!/usr/bin/env python3
"""Slices the shipped WARC sample (sample/sqlite-recrawl) out of
../shared/warc/sqlite-recrawl: three crawls of the SQLite documentation (versions
3.34, 3.40, 3.46) written by GNU Wget with --warc-file, one gzip member per record.

From each crawl it keeps the warcinfo record and the request and response records of
a fixed choice of URLs found in all three crawls, in the order of the source file,
byte for byte (whole gzip members: the files stay valid WARCs, their records keep
their offsets' meaning). The choice: every URL whose payload repeats from one crawl
to the next (images, style sheets, unchanged pages) and every tenth of the others
(pages whose footer names the version), all with responses under 3,500 bytes
compressed. So the
sample has the re-crawl case `warc dedup` is for. Python standard library only; run
from the repo root:

    python3 bench/make_warc_sample.py ../shared/warc/sqlite-recrawl sample/sqlite-recrawl
"""
import os
import sys
import zlib

MAX_RESPONSE = 3500
EVERY_NTH_CHANGED = 10


def members(data):
    """(offset, member bytes, decompressed bytes) of every gzip member."""
    pos = 0
    while pos < len(data):
        d = zlib.decompressobj(wbits=31)
        plain = d.decompress(data[pos:])
        end = len(data) - len(d.unused_data)
        yield pos, data[pos:end], plain
        pos = end


def headers(plain):
    head = plain.split(b"\r\n\r\n", 1)[0].decode("utf-8", "replace")
    fields = {}
    for line in head.split("\r\n")[1:]:
        k, _, v = line.partition(":")
        fields[k.strip().lower()] = v.strip()
    return fields


def records(path):
    with open(path, "rb") as f:
        data = f.read()
    for offset, raw, plain in members(data):
        h = headers(plain)
        yield h.get("warc-type"), h.get("warc-target-uri"), h, raw


def main(src, dst):
    crawls = [os.path.join(src, f"sqlite-crawl-{i}.warc.gz") for i in (1, 2, 3)]
    responses = []
    for c in crawls:
        r = {}
        for typ, uri, h, raw in records(c):
            if typ == "response":
                r[uri] = (h.get("warc-payload-digest"), len(raw))
        responses.append(r)
    common = sorted(set(responses[0]) & set(responses[1]) & set(responses[2]))
    small = [u for u in common if max(r[u][1] for r in responses) < MAX_RESPONSE]
    repeats = [u for u in small
               if responses[0][u][0] == responses[1][u][0] or responses[1][u][0] == responses[2][u][0]]
    changed = [u for u in small if u not in set(repeats)]
    chosen = set(repeats) | set(changed[::EVERY_NTH_CHANGED])
    os.makedirs(dst, exist_ok=True)
    for i, c in enumerate(crawls, 1):
        out = os.path.join(dst, f"crawl-{i}.warc.gz")
        n = 0
        with open(out, "wb") as f:
            for typ, uri, h, raw in records(c):
                if typ == "warcinfo" and n == 0 or typ in ("request", "response") and uri in chosen:
                    f.write(raw)
                    n += 1
        print(f"{out}: {n} records, {os.path.getsize(out)} bytes")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
