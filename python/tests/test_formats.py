"""pytest for the document formats of `import webdedup`: JSON Lines as bytes
(`Worker.process`), records as dicts (`Worker.process_records`), the field options,
bad records and batch mode, each against the real `webdedup` binary
(WEBDEDUP_BIN, set by scripts/test.sh) on the same JSON Lines."""

import copy
import gzip
import json
import os
import subprocess
from pathlib import Path

import pytest

import webdedup

ROOT = Path(__file__).resolve().parents[2]
JSONL = ROOT / "sample" / "web3-mini-jsonl"
BIN = os.environ.get("WEBDEDUP_BIN", str(ROOT / "target" / "debug" / "webdedup"))
SRC = JSONL / "cc-2023-50" / "part-00000.jsonl.gz"


def cli(tmp_path, src, *extra, status=0):
    """`webdedup dedup -t 1 --dd` on one file: (output bytes, decompressed, and the
    .dd statuses in order). `status`: the exit status expected (1: input rejected)."""
    out = tmp_path / ("cli" + "".join(extra).replace("/", "_"))
    run = subprocess.run([BIN, "dedup", "-q", "-t", "1", "--dd", "-i", str(src), "-o", str(out), *extra])
    assert run.returncode == status
    (data,) = [p for p in out.iterdir() if ".dedup" in p.name and not p.name.endswith(".dd")]
    raw = data.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    (dd,) = out.glob("*.dd")
    statuses = [line.split(' status="')[1].split('"')[0] for line in dd.read_text().splitlines()]
    return raw, statuses


def long_text(*words):
    return "\n".join(" ".join([w] * 12) for w in words)


@pytest.mark.parametrize("near", [False, True])
def test_jsonl_bytes_give_the_command_lines_bytes(tmp_path, near):
    data = gzip.decompress(SRC.read_bytes())
    want, statuses = cli(tmp_path, SRC, *(["-n"] if near else []))
    # The whole file in one call, sniffed as JSON Lines.
    v = webdedup.Dedup(near=near).create_worker().process(data)
    assert v.format == "jsonl"
    assert v.data == want and v.statuses == statuses
    assert v.dropped > 0 and not v.problems
    # Record by record, named as JSON Lines: the same bytes.
    w = webdedup.Dedup(near=near, input_format="jsonl").create_worker()
    got = [w.process(line) for line in data.splitlines(keepends=True)]
    assert b"".join(g.data for g in got) == want
    assert [g.status for g in got] == statuses


@pytest.mark.parametrize("doc_check", ["all", "url-title", "none"])
def test_records_as_dicts_decide_as_the_command_line(tmp_path, doc_check):
    # Two crawls in one file: pages repeated whole across crawls give D.
    src = tmp_path / "two-crawls.jsonl"
    src.write_bytes(b"".join(gzip.decompress(f.read_bytes()) for f in sorted(JSONL.rglob("*.jsonl.gz"))[:2]))
    lines = src.read_text().splitlines()
    records = [json.loads(line) for line in lines]
    before = copy.deepcopy(records)
    want, statuses = cli(tmp_path, src, "--doc-check", doc_check)
    r = webdedup.Dedup(doc_check=doc_check).create_worker().process_records(records)
    assert r.statuses == statuses
    if doc_check == "none":
        assert "D" not in statuses and "E" in statuses
    if doc_check == "all":
        assert "D" in statuses
    written = [json.loads(line) for line in want.decode().splitlines()]
    assert [x["text"] for x in r.records] == [x["text"] for x in written]
    assert [x["id"] for x in r.records] == [x["id"] for x in written]
    assert records == before, "the input records were modified"
    by_id = {x["id"]: x for x in records}
    for got, status in zip(r.records, [s for s in statuses if s == "K" or "/" in s]):
        if status == "K":
            assert got is by_id[got["id"]], "a record kept whole is the object given"
        else:
            assert got is not by_id[got["id"]] and got["metadata"] == by_id[got["id"]]["metadata"]
    assert r.kept + r.dropped == sum(len([p for p in x["text"].split("\n") if p.strip()]) for x in records)
    assert not r.problems


def test_field_options_reach_nested_fields_as_on_the_command_line(tmp_path):
    records = [
        {"body": {"content": long_text("alpha", "beta")}, "meta": {"key": 7, "link": "u1", "name": "t"}},
        {"body": {"content": long_text("beta", "gamma")}, "meta": {"key": "b", "link": "u2", "name": "t"}},
        {"body": {"content": long_text("alpha", "beta")}, "meta": {"key": "c", "link": "u3", "name": "t"}},
        {"body": {"content": "short"}, "meta": {"key": 1.5, "link": "u1", "name": "t"}},
    ]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(x) + "\n" for x in records))
    fields = ["--text-field", "body.content", "--id-field", "meta.key", "--url-field", "meta.link",
              "--title-field", "meta.name", "--doc-check", "url-title"]
    want, statuses = cli(tmp_path, src, *fields)
    opts = dict(text_field="body.content", id_field="meta.key", url_field="meta.link", title_field="meta.name",
                doc_check="url-title")
    r = webdedup.Dedup(**opts).create_worker().process_records(records)
    assert r.statuses == statuses == ["K", "1/2", "E", "K"]
    assert [x["body"]["content"] for x in r.records] == [
        json.loads(line)["body"]["content"] for line in want.decode().splitlines()
    ]
    assert r.records[1]["body"] is not records[1]["body"], "the path to the text is copied"
    assert r.records[1]["meta"] is records[1]["meta"], "the rest is shared"
    # The same records as JSON Lines bytes: the command line's bytes.
    v = webdedup.Dedup(**opts).create_worker().process(src.read_bytes())
    assert v.data == want
    with pytest.raises(ValueError):
        webdedup.Dedup(text_field="body..content")
    with pytest.raises(ValueError):
        webdedup.Dedup(input_format="parquet-ish")


def test_bad_records_are_reported_and_kept_unless_dropped(tmp_path):
    good = {"id": "a", "text": long_text("alpha")}
    records = [good, "not a dict", {"id": "b", "text": 5}, {"id": "c"}, {"id": "d", "text": long_text("alpha")}]
    # One warning per bad record, naming it; the rest is still decided.
    with pytest.warns(webdedup.WebdedupWarning) as warned:
        r = webdedup.Dedup().create_worker().process_records(records)
    assert [str(w.message) for w in warned] == [
        "records[1]: not a JSON object: record passed through unchanged",
        "records[2]: field 'text' is not a string: record passed through unchanged",
        "records[3]: no field 'text': record passed through unchanged",
    ]
    assert r.statuses == ["K", "B", "B", "B", "D"]  # d repeats a whole
    assert [i for i, _ in r.problems] == [1, 2, 3]
    assert "not a JSON object" in r.problems[0][1]
    assert "field 'text' is not a string" in r.problems[1][1]
    assert "no field 'text'" in r.problems[2][1]
    assert r.records == records[:4]
    with pytest.warns(webdedup.WebdedupWarning) as warned:
        d = webdedup.Dedup(drop_bad_records=True).create_worker().process_records(records)
    assert [str(w.message).split(":")[0] for w in warned] == ["records[1]", "records[2]", "records[3]"]
    assert all(str(w.message).endswith("record dropped (--drop-bad-records)") for w in warned)
    assert d.records == [good] and "dropped" in d.problems[0][1]
    # As bytes: the command line's rules and bytes, problems by line.
    src = tmp_path / "bad.jsonl"
    src.write_bytes(b'{"id": "a", "text": "x"}\nnot json\n{"id": "b", "text": 5}\n')
    want, statuses = cli(tmp_path, src, status=1)
    with pytest.warns(webdedup.WebdedupWarning) as warned:
        v = webdedup.Dedup().create_worker().process(src.read_bytes())
    assert v.data == want and v.statuses == statuses == ["K", "B", "B"]
    assert [line for line, _ in v.problems] == [2, 3]
    assert [str(w.message).split(":")[0] for w in warned] == ["line 2", "line 3"]
    # Named as verticals, JSON is lines outside any document: reported, never raised.
    with pytest.warns(webdedup.WebdedupWarning):
        v = webdedup.Dedup(input_format="vertical").create_worker().process(src.read_bytes())
    assert v.format == "vertical" and v.statuses == [] and v.problems


def test_bad_records_as_errors_raise_before_anything_is_decided():
    import warnings

    records = [{"id": "a", "text": long_text("alpha")}, {"id": "b"}]
    w = webdedup.Dedup().create_worker()
    with warnings.catch_warnings():
        warnings.simplefilter("error", webdedup.WebdedupWarning)
        with pytest.raises(webdedup.WebdedupWarning, match=r"records\[1\]: no field 'text'"):
            w.process_records(records)
    # Nothing of the failed call reached the store: "a" is new on the second call.
    with pytest.warns(webdedup.WebdedupWarning):
        assert w.process_records(records).statuses == ["K", "B"]


def test_process_takes_a_dict_or_a_list_of_dicts_as_records():
    records = [{"id": "a", "text": long_text("alpha", "beta")}, {"id": "b", "text": long_text("beta", "gamma")}]
    want = webdedup.Dedup().create_worker().process_records(records)
    w = webdedup.Dedup().create_worker()
    got = w.process(records)
    assert isinstance(got, webdedup.Records)
    assert got.statuses == want.statuses == ["K", "1/2"]
    assert got.records == want.records and got.records[0] is records[0]
    assert w.process(tuple(records[:1])).statuses == ["D"]
    one = w.process({"id": "c", "text": long_text("gamma", "delta")})
    assert one.statuses == ["1/2"] and one.records == [{"id": "c", "text": long_text("delta")}]
    with pytest.raises(TypeError):
        w.process(5)


def test_records_and_bytes_share_one_store():
    d = webdedup.Dedup()
    w = d.create_worker()
    assert w.process_records([{"text": long_text("alpha", "beta")}]).statuses == ["K"]
    line = json.dumps({"text": long_text("beta", "gamma")}) + "\n"
    v = w.process(line)
    assert v.status == "1/2" and json.loads(v.data)["text"] == long_text("gamma")
    vert = '<doc url="u" title="t">\n<p>\n' + "\n".join(["alpha"] * 12) + "\n</p>\n</doc>\n"
    assert w.process(vert).format == "vertical"
    assert w.process(vert).status == "D"


def test_batch_phases_on_jsonl_equal_the_command_line(tmp_path):
    work, out = tmp_path / "work", tmp_path / "out"
    n = 2
    opts = dict(doc_check="none", text_field="text")
    for t in range(n):
        assert webdedup.batch_hash(JSONL, work, t, n, **opts)
    for stage in ("url-title", "docs", "paras"):
        for t in range(n):
            assert webdedup.batch_resolve(JSONL, work, t, n, stage, **opts)
    for t in range(n):
        assert webdedup.batch_filter(JSONL, work, out, t, n, dd=True, **opts)
    want = tmp_path / "cli"
    subprocess.run([BIN, "dedup", "-q", "-i", str(JSONL), "-o", str(want), "--dd", "--doc-check", "none"], check=True)
    files = [f for f in want.rglob("*") if f.is_file() and not f.name.endswith(".run-id")]
    assert any(f.name.endswith(".dedup.jsonl.gz") for f in files)
    for f in files:
        assert (out / f.relative_to(want)).read_bytes() == f.read_bytes(), f
    # Other field settings are refused by the work directory.
    with pytest.raises(webdedup.WebdedupError):
        webdedup.batch_hash(JSONL, work, 0, n, doc_check="none", text_field="body")


PARQUET = Path(__file__).resolve().parent / "data" / "web3-mini-parquet"


def wet_sample(dest):
    """The first 20 documents of each crawl of the JSON Lines sample as WET files
    (warcio: a warcinfo record, then a conversion record a document, gzip per record)."""
    import io

    from warcio.warcwriter import WARCWriter

    for src in sorted(JSONL.rglob("*.jsonl.gz")):
        docs = [json.loads(line) for line in gzip.decompress(src.read_bytes()).splitlines()][:20]
        out = dest / src.relative_to(JSONL).parent / "part-00000.warc.wet.gz"
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(out, "wb") as f:
            w = WARCWriter(f, gzip=True)
            w.write_record(w.create_warcinfo_record(out.name, {"software": "webdedup test"}))
            for d in docs:
                rec = w.create_warc_record(
                    d["metadata"]["url"],
                    "conversion",
                    payload=io.BytesIO(d["text"].encode()),
                    warc_content_type="text/plain",
                )
                w.write_record(rec)
    return dest


@pytest.mark.parametrize("fmt", ["parquet", "wet"])
def test_batch_phases_on_parquet_and_wet_equal_the_command_line(tmp_path, fmt):
    src = PARQUET if fmt == "parquet" else wet_sample(tmp_path / "wet")
    want = tmp_path / "cli"
    subprocess.run([BIN, "dedup", "-q", "-i", str(src), "-o", str(want), "--dd"], check=True)
    files = sorted(f for f in want.rglob("*") if f.is_file() and not f.name.endswith(".run-id"))
    assert len(files) == 6
    statuses = [line.split(' status="')[1].split('"')[0] for f in files if f.suffix == ".dd" for line in f.read_text().splitlines()]
    assert len(statuses) == 60 and any(s != "K" for s in statuses)
    work, out, store = tmp_path / "work", tmp_path / "out", tmp_path / "store"
    n = 2
    for t in range(n):
        assert webdedup.batch_hash(src, work, t, n, input_format=fmt)
    for stage in ("url-title", "docs", "paras"):
        for t in range(n):
            assert webdedup.batch_resolve(src, work, t, n, stage, input_format=fmt)
    for t in range(n):
        assert webdedup.batch_filter(src, work, out, t, n, dd=True, input_format=fmt)
    for f in files:
        assert (out / f.relative_to(want)).read_bytes() == f.read_bytes(), f
    # publish: the store the command line's --store leaves.
    assert webdedup.batch_publish(src, work, n, store, input_format=fmt) > 0
    cli_store = tmp_path / "cli-store"
    subprocess.run([BIN, "dedup", "-q", "-i", str(src), "-o", str(tmp_path / "o2"), "--store", str(cli_store)], check=True)
    assert (store / "store.snap").read_bytes() == (cli_store / "store.snap").read_bytes()


def test_process_refuses_parquet_and_wet_bytes_and_says_what_takes_them(tmp_path):
    w = webdedup.Dedup().create_worker()
    data = next(PARQUET.rglob("*.parquet")).read_bytes()
    for d in (webdedup.Dedup(), webdedup.Dedup(input_format="parquet")):
        with pytest.raises(ValueError, match="process_records"):
            d.create_worker().process(data)
    wet = next(wet_sample(tmp_path / "wet").rglob("*.gz")).read_bytes()
    with pytest.raises(ValueError, match="batch functions"):
        webdedup.Dedup(input_format="wet").create_worker().process(gzip.decompress(wet))
    assert len(w.process(b"").statuses) == 0


def test_constructors_read_the_format_keywords_as_declared_arguments():
    # Dedup and MinHashDedup take the six format keywords through one parser
    # (shared with the batch functions): a keyword they do not take, or a value
    # of the wrong type, is refused as Python refuses a declared argument.
    for cls in (webdedup.Dedup, webdedup.MinHashDedup):
        name = cls.__name__
        with pytest.raises(TypeError, match=rf"^{name}\(\) got an unexpected keyword argument 'text_feld'$"):
            cls(text_feld="body")
        with pytest.raises(TypeError, match=r"^argument 'drop_bad_records': "):
            cls(drop_bad_records="yes")
        with pytest.raises(ValueError):
            cls(input_format="csv")
        cls(input_format="jsonl", text_field="body", drop_bad_records=True)
