"""`webdedup.MinHashDedup` against `webdedup minhash` (the real binary) on the
shipped sample: the same kept bytes, `.pairs` lines, `.clusters` lines and
statuses, on the embedded store, a store directory shared with the command line,
and a hash server on loopback."""

import gzip
import re
import socket
import subprocess
import time
from pathlib import Path

import pytest

import webdedup as wd

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "sample" / "web3-mini"
SAMPLE_JSONL = REPO / "sample" / "web3-mini-jsonl"


def inputs(root, crawls=None):
    """(relative path, decompressed bytes) of the sample's files, in the command
    line's order (sorted relative paths)."""
    files = sorted(p for p in root.rglob("*.gz") if crawls is None or p.parent.name in crawls)
    return [(str(p.relative_to(root)), gzip.decompress(p.read_bytes())) for p in files]


def cli_minhash(webdedup, src, out, *extra):
    webdedup("minhash", "-q", "-t", "2", "-i", src, "-o", out, "--dd", "--clusters", "--compress", "none", *extra)
    return out


# The extensions an output keeps after `.dedup` (verticals keep KNOT's `REL.dedup`).
DOCUMENT_EXTENSIONS = (".warc.wet", ".wet", ".jsonl", ".ndjson", ".json", ".parquet")


def split_name(rel):
    """REL without its compression suffix, as (STEM, EXTENSION)."""
    rel = rel.removesuffix(".gz").removesuffix(".zst")
    for ext in DOCUMENT_EXTENSIONS:
        if rel.endswith(ext):
            return rel[: -len(ext)], ext
    return rel, ""


def output(rel):
    """The command line's output for input REL (uncompressed): STEM.dedup.EXT."""
    stem, ext = split_name(rel)
    return stem + ".dedup" + ext


def side(rel):
    """What the side files of input REL are named after: STEM.dedup."""
    return split_name(rel)[0] + ".dedup"


def statuses(dd_path):
    return re.findall(r'status="([^"]*)"', dd_path.read_text())


def check_equal(results, out):
    """Each file's result equals the command line's outputs for it."""
    assert results, "no input"
    dropped = 0
    for rel, r in results:
        assert r.data == (out / output(rel)).read_bytes(), f"{rel}: kept bytes differ"
        assert r.pairs_text == (out / (side(rel) + ".pairs")).read_bytes(), f"{rel}: pairs differ"
        assert r.statuses == statuses(out / (side(rel) + ".dd")), f"{rel}: statuses differ"
        assert len(r.pairs) == r.dropped == r.statuses.count("D")
        assert r.clusters_text == (out / (side(rel) + ".clusters")).read_bytes(), f"{rel}: clusters differ"
        # One cluster per document: a dropped one's is its original, a kept one's itself.
        judged = [s for s in r.statuses if s in ("K", "D")]
        assert len(r.clusters) == len(judged)
        originals = iter(p[1] for p in r.pairs)
        for status, cluster in zip(judged, r.clusters):
            if status == "D":
                assert cluster == next(originals)
        dropped += r.dropped
    assert dropped > 50, "the sample has near-duplicates"


@pytest.mark.parametrize("root,extra", [(SAMPLE, []), (SAMPLE, ["--verify", "0"]), (SAMPLE_JSONL, [])])
def test_embedded_store_equals_the_command_line(webdedup, tmp_path, root, extra):
    out = cli_minhash(webdedup, root, tmp_path / "cli", *extra)
    verify = 0.0 if extra else 0.8
    d = wd.MinHashDedup(verify=verify)
    w = d.create_worker()
    results = [(rel, w.process(data, source=rel)) for rel, data in inputs(root)]
    check_equal(results, out)
    # Pairs name documents by id (JSON Lines) or SOURCE:LINE, with the estimate.
    doc, original, jaccard = results[-1][1].pairs[0]
    assert original and doc != original
    assert (jaccard is None) == (verify == 0.0)
    assert len(d) > 1000


def test_store_dir_is_shared_with_the_command_line(webdedup, tmp_path):
    """Crawl by crawl: Python keeps the first crawl in a store directory, the command
    line runs the later crawls on it (and Python again on a copy); both equal one
    command-line run over all crawls."""
    whole = cli_minhash(webdedup, SAMPLE, tmp_path / "whole")
    store = tmp_path / "store"
    d = wd.MinHashDedup(store_dir=store)
    w = d.create_worker()
    first = [(rel, w.process(data, source=rel)) for rel, data in inputs(SAMPLE, {"cc-2023-14"})]
    assert d.save() == len(d) > 0
    assert (store / "minhash.kept").exists() and (store / "store.snap").exists()
    later = tmp_path / "later"
    later.mkdir()
    for c in ("cc-2023-50", "cc-2024-33"):
        (later / c).symlink_to(SAMPLE / c)
    subprocess.run(["cp", "-r", str(store), str(tmp_path / "store2")], check=True)
    out = cli_minhash(webdedup, later, tmp_path / "out", "--store", store)
    for c in ("cc-2023-50", "cc-2024-33"):
        rel = f"{c}/part-00000.vert"
        for suffix in (".dedup", ".dedup.pairs", ".dedup.dd", ".dedup.clusters"):
            assert (out / (rel + suffix)).read_bytes() == (whole / (rel + suffix)).read_bytes(), rel + suffix
    d2 = wd.MinHashDedup(store_dir=tmp_path / "store2")
    w2 = d2.create_worker()
    rest = [(rel, w2.process(data, source=rel)) for rel, data in inputs(SAMPLE, {"cc-2023-50", "cc-2024-33"})]
    check_equal(first + rest, whole)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_hash_server_equals_the_embedded_store(webdedup, tmp_path):
    """A real `webdedup server` on loopback holds the band keys."""
    out = cli_minhash(webdedup, SAMPLE, tmp_path / "cli")
    port = free_port()
    (tmp_path / "servers").write_text(f"127.0.0.1:{port}\n")
    hashmap = tmp_path / "hashmap.conf"
    webdedup("distribute", "-s", tmp_path / "servers", "-o", hashmap)
    binary = webdedup("--version").args[0]
    ready = tmp_path / "ready"
    server = subprocess.Popen(
        [binary, "server", "-m", str(hashmap), "--listen", f"127.0.0.1:{port}", "--ready-file", str(ready)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        for _ in range(600):
            if ready.exists() or server.poll() is not None:
                break
            time.sleep(0.05)
        assert ready.exists(), server.stderr.read().decode()
        d = wd.MinHashDedup(map=hashmap, server_timeout=10)
        w = d.create_worker()
        results = [(rel, w.process(data, source=rel)) for rel, data in inputs(SAMPLE)]
        check_equal(results, out)
        assert len(d) > 1000
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_refusals_and_bad_input(tmp_path):
    with pytest.raises(ValueError, match="Redis"):
        wd.MinHashDedup(store="redis://127.0.0.1:1")
    with pytest.raises(ValueError):
        wd.MinHashDedup(bands=100, rows=8)
    with pytest.raises(ValueError, match="verify"):
        wd.MinHashDedup(verify=1.5)
    w = wd.MinHashDedup().create_worker()
    text = "one two three four five six seven eight nine ten"
    with pytest.warns(wd.WebdedupWarning):
        r = w.process(b'{"text": "%s"}\nnot json\n{"text": "%s"}\n' % (text.encode(), text.encode()), source="x.jsonl")
    assert r.statuses == ["K", "B", "D"]
    assert r.pairs == [("x.jsonl:3", "x.jsonl:1", pytest.approx(1.0))]
