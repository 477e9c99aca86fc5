"""pytest for `Dedup(substr=...)`: repeated spans removed inside documents, the
first copy kept, as `webdedup dedup --substr` does (docs/substr.md)."""

import json

import pytest

import webdedup

NOTICE = ("We use cookies to improve your experience on our site. By continuing to "
          "browse you agree to our use of cookies and our privacy policy.")


def jsonl(*texts):
    return "".join(json.dumps({"id": str(i), "text": t}) + "\n" for i, t in enumerate(texts)).encode()


@pytest.mark.parametrize("substr", [(6, 1), True])
def test_a_repeated_span_is_removed_and_its_first_copy_kept(substr):
    w = webdedup.Dedup(substr=substr, input_format="jsonl").create_worker()
    first = f"Rain is expected in the north tomorrow. {NOTICE}"
    first_out = w.process(jsonl(first))
    assert [json.loads(l)["text"] for l in first_out.data.decode().splitlines()] == [first]
    second = f"The council met on Tuesday to vote. {NOTICE} Results follow next week."
    got = [json.loads(l)["text"] for l in w.process(jsonl(second)).data.decode().splitlines()]
    assert len(got) == 1
    assert got[0].startswith("The council met on Tuesday to vote.")
    assert got[0].endswith("Results follow next week.")
    # (6, 1) removes the whole notice; the default (10, 4) all but at most 3 words
    # at each end.
    assert len(got[0].split()) < len(second.split()) - (NOTICE.count(" ") + 1) + 2 * 7 + 1
    if substr == (6, 1):
        assert got[0] == "The council met on Tuesday to vote.  Results follow next week."


def test_a_stretch_under_b_bytes_is_kept():
    """(K, W, B): a repeat whose words hold fewer than B bytes stays, as
    `--substr=K,W,B` keeps it."""
    second = f"The council met on Tuesday to vote. {NOTICE} Results follow next week."
    words = len(NOTICE.replace(" ", ""))  # B counts the words' bytes, not spaces
    for b, removed in [(words, True), (2 * words, False)]:
        w = webdedup.Dedup(substr=(6, 1, b), input_format="jsonl").create_worker()
        w.process(jsonl(f"Rain is expected in the north tomorrow. {NOTICE}"))
        got = json.loads(w.process(jsonl(second)).data.decode())["text"]
        assert (got != second) == removed, (b, got)


def test_bad_window_sizes_and_mode_mixes_are_refused():
    with pytest.raises(ValueError, match="W must be 1 to K"):
        webdedup.Dedup(substr=(4, 8))
    with pytest.raises(ValueError, match=r"substr takes True, \(K, W\) or \(K, W, B\)"):
        webdedup.Dedup(substr="12,8")
    with pytest.raises(ValueError, match="normalize does not apply"):
        webdedup.Dedup(substr=True, normalize="none")
    with pytest.raises(ValueError, match="substr and near"):
        webdedup.Dedup(substr=True, near=True)
    with pytest.raises(ValueError, match="webdedup dedup --substr -f"):
        webdedup.Dedup(substr=True, feedback=True)


def test_batch_substr_writes_what_the_command_line_writes(tmp_path):
    """`webdedup.batch_substr` is `webdedup batch substr` (the real binary,
    WEBDEDUP_BIN): the same outputs, report and figures, one input per format."""
    import os
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    binary = os.environ.get("WEBDEDUP_BIN", str(root / "target" / "debug" / "webdedup"))
    src = root / "sample" / "web3-mini-parquet" / "cc-2023-50"
    cli, py = tmp_path / "cli", tmp_path / "py"
    got = subprocess.run(
        [binary, "batch", "substr", "-q", str(src), "-o", str(cli), "-f", "--keep-first",
         "--length", "200", "--json", "-"], check=True, capture_output=True)
    want = json.loads(got.stdout)
    figures = webdedup.batch_substr(src, py, length=200, keep_first=True, feedback=True,
                                    threads=2, input_format="parquet")
    for key in ["files", "documents", "documents_changed", "spans", "bytes_struck", "text_bytes"]:
        assert figures[key] == want[key], key
    assert figures["spans"] > 10 and figures["problems"] == 0
    files = sorted(p.relative_to(cli) for p in cli.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(py) for p in py.rglob("*") if p.is_file())
    for f in files:
        assert (cli / f).read_bytes() == (py / f).read_bytes(), f
    with pytest.raises(TypeError, match="unexpected keyword argument 'near'"):
        webdedup.batch_substr(src, py, near=True)
    with pytest.raises(ValueError, match="--length 0"):
        webdedup.batch_substr(src, py, length=0)
