"""The batch driver deploy/ray and deploy/spark share (deploy/batch_driver.py), run
with the phases' calls one after another as a stand-in for an engine: its order of
phases gives the bytes of `webdedup dedup --store` (two runs, as crawls come) and of
`webdedup minhash`. And the keyword arguments every batch function shares: one
definition, refusing what a Python signature would refuse."""

import shutil
import sys
from pathlib import Path

import pytest

import webdedup as module

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "sample" / "web3-mini"
sys.path.insert(0, str(REPO / "deploy"))
import batch_driver  # noqa: E402


def one_by_one(calls):
    """run_phase as an engine does it, without the engine: every call in turn."""
    return [getattr(module, name)(*args, **kwargs) for name, args, kwargs in calls]


def files(root):
    return {f.relative_to(root): f.read_bytes() for f in sorted(root.rglob("*")) if f.is_file()}


def crawls(tmp_path):
    """The sample's crawls as two runs (in1/, in2/) and as one (all/)."""
    for run, names in ((1, ["cc-2023-14", "cc-2023-50"]), (2, ["cc-2024-33"])):
        for name in names:
            shutil.copytree(SAMPLE / name, tmp_path / f"in{run}" / name)
            shutil.copytree(SAMPLE / name, tmp_path / "all" / name)


def test_the_shared_driver_equals_dedup_with_a_store(webdedup, tmp_path):
    crawls(tmp_path)
    for run in (1, 2):
        inp = str(tmp_path / f"in{run}")
        webdedup("dedup", "-q", "-i", inp, "-o", tmp_path / f"cli{run}", "--dd", "--store", tmp_path / "cli-store")
        keys = batch_driver.run(
            one_by_one, inp, str(tmp_path / f"work{run}"), str(tmp_path / f"py{run}"), 3,
            store=str(tmp_path / "py-store"), dd=True, partitions=8,
        )
        assert keys > 0
        assert files(tmp_path / f"py{run}") == files(tmp_path / f"cli{run}")


def test_the_shared_driver_equals_minhash(webdedup, tmp_path):
    crawls(tmp_path)
    inp = str(tmp_path / "all")
    webdedup("minhash", "-q", "-i", inp, "-o", tmp_path / "cli", "--dd", "--bands", "8", "--rows", "14", "--verify", "0.85")
    assert any(f.name.endswith(".pairs") and f.stat().st_size for f in (tmp_path / "cli").rglob("*"))
    got = batch_driver.run(
        one_by_one, inp, str(tmp_path / "work"), str(tmp_path / "py"), 3,
        dd=True, partitions=8, minhash=dict(bands=8, rows=14, verify=0.85),
    )
    assert got is None
    assert files(tmp_path / "py") == files(tmp_path / "cli")
    with pytest.raises(ValueError, match="--minhash takes no --store"):
        batch_driver.run(one_by_one, inp, str(tmp_path / "w2"), str(tmp_path / "o2"), 1, store="s", minhash={})


def test_the_shared_keyword_arguments_refuse_as_a_signature_would(tmp_path):
    work = str(tmp_path / "work")
    with pytest.raises(TypeError, match=r"^batch_hash\(\) got an unexpected keyword argument 'partition'$"):
        module.batch_hash(str(SAMPLE), work, 0, 1, partition=4)
    with pytest.raises(TypeError, match=r"^batch_hash\(\) got an unexpected keyword argument 'store'$"):
        module.batch_hash(str(SAMPLE), work, 0, 1, store="s")
    # MinHash settings are the task phases' only: publish is exact mode's.
    with pytest.raises(TypeError, match=r"^batch_publish\(\) got an unexpected keyword argument 'minhash'$"):
        module.batch_publish(str(SAMPLE), work, 1, str(tmp_path / "store"), minhash=True)
    with pytest.raises(TypeError, match=r"^argument 'partitions': "):
        module.batch_hash(str(SAMPLE), work, 0, 1, partitions="8")
    with pytest.raises(TypeError, match=r"^argument 'drop_bad_records': "):
        module.batch_filter(str(SAMPLE), work, str(tmp_path / "out"), 0, 1, drop_bad_records=None)
    assert not (tmp_path / "work").exists(), "a refused call must not start a task"
    # Given as None, an option takes its default, as a parameter's None did.
    assert module.batch_hash(str(SAMPLE), work, 0, 1, partitions=None, text_field=None)
