"""pytest for batch mode's MinHash stages from Python (`webdedup.batch_*` with
`minhash=True`, what deploy/spark and deploy/ray call): the bytes of `webdedup
minhash` (the real binary, WEBDEDUP_BIN) on the shipped samples, and the
arguments refused."""

import gzip
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

import webdedup

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "sample" / "web3-mini"
JSONL = ROOT / "sample" / "web3-mini-jsonl"
BIN = os.environ.get("WEBDEDUP_BIN", str(ROOT / "target" / "debug" / "webdedup"))


def batch_minhash(src, work, out, n, **opts):
    """Every phase in the order of deploy/slurm/batch.sbatch with MINHASH=1."""
    for t in range(n):
        assert webdedup.batch_hash(src, work, t, n, minhash=True, **opts)
    for t in reversed(range(n)):
        assert webdedup.batch_resolve(src, work, t, n, "bands", minhash=True, **opts)
    assert webdedup.batch_resolve(src, work, 0, n, "pick", minhash=True, **opts)
    for t in range(n):
        assert webdedup.batch_filter(src, work, out, t, n, dd=True, minhash=True, **opts)


def cli_minhash(src, out, *extra):
    subprocess.run([BIN, "minhash", "-q", "-i", str(src), "-o", str(out), "--dd", *extra], check=True)
    files = sorted(f for f in out.rglob("*") if f.is_file())
    pairs = sum(f.read_text().count("\n") for f in files if f.name.endswith(".pairs"))
    assert pairs > 20, "the sample has near-duplicates"
    return files


@pytest.mark.parametrize(
    "src,n,opts,flags",
    [
        (SAMPLE, 3, {}, []),
        (SAMPLE, 2, dict(verify=0.9, bands=8, rows=14, partitions=5), ["--verify", "0.9", "--bands", "8", "--rows", "14"]),
        (JSONL, 3, dict(shingles="words:4", verify=0), ["--shingles", "words:4", "--verify", "0"]),
    ],
    ids=["vertical-defaults", "vertical-settings", "jsonl"],
)
def test_batch_minhash_equals_webdedup_minhash(tmp_path, src, n, opts, flags):
    want = tmp_path / "cli"
    files = cli_minhash(src, want, *flags)
    work, out = tmp_path / "work", tmp_path / "out"
    batch_minhash(src, work, out, n, **opts)
    assert sorted(f.relative_to(out) for f in out.rglob("*") if f.is_file()) == [f.relative_to(want) for f in files]
    for f in files:
        assert (out / f.relative_to(want)).read_bytes() == f.read_bytes(), f
    # Finished tasks are skipped; other settings are refused by the work directory.
    assert not webdedup.batch_filter(src, work, out, 0, n, dd=True, minhash=True, **opts)
    with pytest.raises(webdedup.WebdedupError):
        webdedup.batch_hash(src, work, 0, n, minhash=True, hashes=64, bands=8, rows=8)
    with pytest.raises(webdedup.WebdedupError):
        webdedup.batch_hash(src, work, 0, n)  # exact mode on a MinHash work directory


@pytest.mark.parametrize("minhash", [True, False], ids=["minhash", "exact"])
def test_batch_filter_reads_with_the_field_options(tmp_path, minhash):
    """The filter phase reads with the work directory's field options (here the
    text under another name), as `webdedup minhash/dedup --text-field` do (it read
    with the default fields, passing every record through, before)."""
    src = tmp_path / "in"
    for f in sorted(JSONL.rglob("*.jsonl.gz")):
        rows = [json.loads(line) for line in gzip.decompress(f.read_bytes()).splitlines()]
        for r in rows:
            r["body"] = r.pop("text")
        dest = src / f.relative_to(JSONL)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in rows).encode()))
    want, work, out, n = tmp_path / "cli", tmp_path / "work", tmp_path / "out", 2
    if minhash:
        files = cli_minhash(src, want, "--text-field", "body")
        batch_minhash(src, work, out, n, text_field="body")
    else:
        cmd = [BIN, "dedup", "-q", "-i", str(src), "-o", str(want), "--dd", "--text-field", "body"]
        subprocess.run(cmd, check=True)
        files = sorted(f for f in want.rglob("*") if f.is_file() and not f.name.endswith(".run-id"))
        for t in range(n):
            assert webdedup.batch_hash(src, work, t, n, text_field="body")
        for stage in ("url-title", "docs", "paras"):
            for t in range(n):
                assert webdedup.batch_resolve(src, work, t, n, stage, text_field="body")
        for t in range(n):
            assert webdedup.batch_filter(src, work, out, t, n, dd=True, text_field="body")
    dd = "".join(f.read_text() for f in files if f.name.endswith(".dd"))
    assert set(re.findall(r'status="([^"]*)"', dd)) - {"K"}, "some documents are dropped"
    for f in files:
        assert (out / f.relative_to(want)).read_bytes() == f.read_bytes(), f


def test_batch_minhash_arguments_refused(tmp_path):
    work = tmp_path / "work"
    with pytest.raises(ValueError, match="apply with minhash=True"):
        webdedup.batch_hash(SAMPLE, work, 0, 2, verify=0.9)
    with pytest.raises(ValueError, match="--verify must be between 0 and 1"):
        webdedup.batch_hash(SAMPLE, work, 0, 2, minhash=True, verify=2)
    with pytest.raises(ValueError, match="bands x rows"):
        webdedup.batch_hash(SAMPLE, work, 0, 2, minhash=True, hashes=16, bands=4, rows=8)
    with pytest.raises(ValueError, match="shingl"):
        webdedup.batch_hash(SAMPLE, work, 0, 2, minhash=True, shingles="lines:3")
    with pytest.raises(ValueError, match="loose normalization"):
        webdedup.batch_hash(SAMPLE, work, 0, 2, minhash=True, normalize="none")
    assert webdedup.batch_hash(SAMPLE, work, 0, 2, minhash=True)
    with pytest.raises(ValueError, match="bands, then pick"):
        webdedup.batch_resolve(SAMPLE, work, 0, 2, "docs", minhash=True)
    with pytest.raises(ValueError, match="with minhash=True: bands or pick"):
        webdedup.batch_resolve(SAMPLE, work, 0, 2, "bands")
    with pytest.raises(ValueError, match="task_index 0"):
        webdedup.batch_resolve(SAMPLE, work, 1, 2, "pick", minhash=True)
