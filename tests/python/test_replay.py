"""Replay of `warc dedup` outputs with pywb: the inputs and the outputs are made into
two pywb collections (what `wb-manager init` and `add` do: pywb's own indexer) and served in process by
pywb's `FrontEndApp` through webtest; every capture that replays from the inputs must
replay the same from the outputs (same Memento-Datetime, same status, same bytes)."""

import contextlib
import os

import webtest
from pywb.apps.frontendapp import FrontEndApp
from pywb.manager.manager import CollectionsManager
from warcio.archiveiterator import ArchiveIterator

# The order of issue 16 (W1): the response of url-agnostic-orig is a duplicate of an
# earlier capture, and the input's own revisit (http://test@example.com/, 2013-07-29)
# that comes after it refers to it.
W1_ORDER = [
    "iana.warc.gz",
    "dupes.warc.gz",
    "example.warc.gz",
    "example2.warc.gz",
    "example-extra.warc",
    "post-test.warc.gz",
    "example-url-agnostic-orig.warc.gz",
    "example-url-agnostic-revisit.warc.gz",
]


def captures(files):
    """(type, url, 14-digit timestamp, payload digest) of the response and revisit
    records of `files`, in order."""
    out = []
    for f in files:
        with open(f, "rb") as fh:
            for r in ArchiveIterator(fh):
                if r.rec_type in ("response", "revisit"):
                    h = r.rec_headers
                    ts = "".join(c for c in h.get_header("WARC-Date") if c.isdigit())[:14]
                    digest = (h.get_header("WARC-Payload-Digest") or "").upper().removeprefix("SHA1:")
                    out.append((r.rec_type, h.get_header("WARC-Target-URI"), ts, digest))
    return out


@contextlib.contextmanager
def cwd(path):
    """pywb's manager and app find their collections (and config) in the cwd."""
    before = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


class Replay:
    """pywb collections under one root, served by FrontEndApp in this process."""

    def __init__(self, root, collections):
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        with cwd(root):
            for name, files in collections.items():
                # What `wb-manager init NAME` and `wb-manager add NAME FILES` do.
                m = CollectionsManager(name, must_exist=False)
                m.add_collection()
                m.add_archives([str(f) for f in files])
            self.app = webtest.TestApp(FrontEndApp())

    def get(self, coll, ts, url):
        """Status, Memento-Datetime and bytes of the capture of `url` closest to
        `ts`, as recorded (`id_`)."""
        with cwd(self.root):
            r = self.app.get(f"/{coll}/{ts}id_/{url}", expect_errors=True)
        return r.status_int, r.headers.get("Memento-Datetime"), r.body


def test_dedup_output_replays_like_its_input_in_pywb(webdedup, pywb_sample, tmp_path):
    warcs = pywb_sample / "warcs"
    inputs = [warcs / n for n in W1_ORDER]
    out = tmp_path / "out"
    p = webdedup("warc", "dedup", *inputs, "-o", out, check=False)
    assert p.returncode in (0, 1), p.stderr
    outputs = [out / i.name for i in inputs]
    replay = Replay(tmp_path / "pywb", {"orig": inputs, "dedup": outputs})

    # Issue 16's case: the input's revisit of http://test@example.com/ (2013-07-29)
    # must still resolve to the payload of its original, at its own date.
    status, memento, body = replay.get("dedup", "20130729195151", "http://test@example.com/")
    assert (status, memento) == (200, "Mon, 29 Jul 2013 19:51:51 GMT")
    assert body == replay.get("orig", "20130729195151", "http://test@example.com/")[2]

    # Every revisit that could be affected (the revisits written, and the input's
    # revisits of a payload that some replaced record had) replays as the same
    # capture did from the inputs: same Memento-Datetime, same bytes.
    before, after = captures(inputs), captures(outputs)
    assert len(before) == len(after)
    replaced = {a for a, b in zip(before, after) if a[0] == "response" and b[0] == "revisit"}
    assert len(replaced) >= 3, "the sample has repeated payloads"
    digests = {r[3] for r in replaced}
    check = [b for b in after if b[0] == "revisit" and b[3] in digests]
    failures = []
    for _, url, ts, _ in check:
        want = replay.get("orig", ts, url)
        if want[0] != 200:
            continue  # does not replay from the input either
        got = replay.get("dedup", ts, url)
        if got != want:
            failures.append(f"{ts} {url}: got {got[:2]}, input replays {want[:2]}")
    assert not failures, "\n".join(failures)
