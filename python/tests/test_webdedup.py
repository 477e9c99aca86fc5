"""pytest for `import webdedup`, against the real embedded store and the real
`webdedup` binary (WEBDEDUP_BIN, set by scripts/test.sh) for comparisons."""

import gzip
import os
import subprocess
import threading
from pathlib import Path

import pytest

import webdedup

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "sample" / "web3-mini"
BIN = os.environ.get("WEBDEDUP_BIN", str(ROOT / "target" / "debug" / "webdedup"))


def documents(path):
    """The documents of a vertical file, as bytes, in order."""
    data = gzip.decompress(path.read_bytes())
    docs, cur = [], []
    for line in data.splitlines(keepends=True):
        if line.startswith(b"<doc") and cur:
            docs.append(b"".join(cur))
            cur = []
        cur.append(line)
    if cur:
        docs.append(b"".join(cur))
    return docs


def cli_output(tmp_path, src, *extra):
    out = tmp_path / ("cli" + "".join(extra))
    subprocess.run([BIN, "dedup", "-q", "-t", "1", "-i", str(src), "-o", str(out), *extra], check=True)
    return (out / (src.name.removesuffix(".gz") + ".dedup")).read_bytes()


def long_para(word):
    return "<p>\n" + "\n".join([word] * 12) + "\n</p>\n"


def doc(url, *paras):
    return f'<doc url="{url}" title="t">\n' + "".join(paras) + "</doc>\n"


def test_the_seeds_example_flow():
    d = webdedup.dedup()  # the seed's lower-case name
    assert d.start_servers() == 0
    assert d.test_servers() == 0
    w = d.create_worker()
    first = w.process(doc("a", long_para("alpha"), long_para("beta")))
    assert first.status == "K" and first.kept == 2 and first.dropped == 0
    again = w.process(doc("b", long_para("beta"), long_para("gamma")))
    assert again.status == "1/2"
    assert again.text == doc("b", long_para("gamma"))
    assert w.process(doc("a", long_para("alpha"), long_para("beta"))).status == "D"
    assert d.stop_servers() == 0
    assert len(d) > 0


@pytest.mark.parametrize("near", [False, True])
def test_worker_output_equals_the_command_line_document_by_document(tmp_path, near):
    src = SAMPLE / "cc-2023-50" / "part-00000.vert.gz"
    d = webdedup.Dedup(near=near)
    w = d.create_worker()
    got = b"".join(w.process(x).data for x in documents(src))
    want = cli_output(tmp_path, src, *(["-n"] if near else []))
    assert got == want


def test_many_threads_sharing_one_dedup_keep_the_same_key_set():
    docs = [x for p in sorted(SAMPLE.glob("*/*.gz")) for x in documents(p)]
    one = webdedup.Dedup()
    w = one.create_worker()
    kept_one = sum(w.process(x).kept for x in docs)
    shared = webdedup.Dedup()
    errors = []

    def work(part):
        try:
            wk = shared.create_worker()
            for x in part:
                wk.process(x)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(docs[i::8],)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(shared) == len(one)
    assert kept_one > 0
    # One worker used from several threads at once is safe too.
    shared_worker = webdedup.Dedup().create_worker()
    results = []
    ts = [threading.Thread(target=lambda x=x: results.append(shared_worker.process(x))) for x in docs[:40]]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert len(results) == 40


def test_process_document_gives_character_offsets():
    d = webdedup.Dedup(min_para_chars=10)
    w = d.create_worker()
    first = "Ünïcödé paragraph number one, long enough\n\nsecond paragraph, also long enough\n"
    r = w.process_document(first, url="u1", title="t")
    assert r.status == "K" and r.dropped == [] and r.text == first
    text = "brand new opening paragraph with ñ\nÜnïcödé paragraph number one, long enough\nlast\n"
    r = w.process_document(text, url="u2")
    line = "Ünïcödé paragraph number one, long enough\n"
    start = text.index(line)
    assert r.dropped == [(start, start + len(line))]
    assert text[r.dropped[0][0]:r.dropped[0][1]] == line
    assert r.text == text.replace(line, "")


def test_bad_input_is_reported_not_raised():
    w = webdedup.Dedup().create_worker()
    with pytest.warns(webdedup.WebdedupWarning) as warned:
        v = w.process(b'<doc url="x">\n<p>\nbad \xff\xfe bytes\n</p>\n<p>\nunclosed\n')
    assert v.problems, v
    # One warning per problem, naming its line.
    assert [str(x.message) for x in warned] == [f"line {line}: {why}" for line, why in v.problems]
    assert any("UTF-8" in reason or "utf-8" in reason.lower() for _, reason in v.problems)
    with pytest.warns(webdedup.WebdedupWarning, match=r"^line 1: line outside any <doc>"):
        assert w.process(b"no document here\n").statuses == []
    with pytest.raises(TypeError):
        w.process(123)
    with pytest.raises(ValueError):
        webdedup.Dedup(normalize="bogus")
    with pytest.raises(webdedup.WebdedupError, match="no-such-hashmap.conf"):
        webdedup.Dedup(map="no-such-hashmap.conf")


def test_store_dir_is_shared_with_the_command_line(tmp_path):
    store = tmp_path / "store"
    d = webdedup.Dedup(store_dir=store)
    w = d.create_worker()
    for x in documents(SAMPLE / "cc-2023-14" / "part-00000.vert.gz"):
        w.process(x)
    keys = d.save()
    assert keys == len(d) and (store / "store.snap").exists()
    assert len(webdedup.Dedup(store_dir=store)) == keys
    # The CLI continues from it: the same crawl again keeps nothing.
    out = tmp_path / "out"
    subprocess.run([BIN, "dedup", "-q", "-i", str(SAMPLE / "cc-2023-14"), "-o", str(out), "--store", str(store)], check=True)
    assert (out / "part-00000.vert.dedup").read_bytes() == b""
    with pytest.raises(webdedup.WebdedupError):
        webdedup.Dedup(store_dir=store, normalize="none")


def test_simhash_hamming_similar_and_cdx_dups():
    a = webdedup.simhash("the quick brown fox jumps over the lazy dog " * 5)
    b = webdedup.simhash("the quick brown fox jumps over the lazy cat " * 5)
    assert isinstance(a, int) and webdedup.simhash("") is None
    assert webdedup.hamming(a, a) == 0 and webdedup.hamming(0, 0b1011) == 3
    pairs = webdedup.similar([a, b, a ^ (1 << 63), 0], 3)
    assert (0, 2, 1) in pairs and all(i < j for i, j, _ in pairs)
    assert webdedup.similar([5, 5], 0) == [(0, 1, 0)]
    line = "org,example)/ {} http://example.org/ text/html 200 {} - - 100 0 a.warc.gz"
    lines = [line.format("20070101", "AAA"), line.format("20070102", "AAA"), line.format("20070103", "BBB")]
    assert webdedup.cdx_dups(lines) == ["org,example)/ sha1:AAA 20070102"]
    assert webdedup.cdx_dups(lines, whole_lines=True) == [lines[1]]


def test_cdx_dups_says_what_the_command_line_prints(tmp_path):
    """Issue 19: Python and `webdedup cdx dups` agree, with and without --lines."""
    line = "org,example)/{} {} http://example.org/ text/html 200 sha1:{} - - 100 0 a.warc.gz"
    lines = [line.format(i % 3, 20070101 + i, "AAA" if i % 2 else "bbb") for i in range(12)]
    cdx = tmp_path / "in.cdx"
    cdx.write_text("\n".join(lines) + "\n")
    for flags, kwargs in (([], {}), (["--lines"], {"whole_lines": True})):
        cli = subprocess.run([BIN, "cdx", "dups", *flags, str(cdx)], capture_output=True, text=True, check=True)
        assert webdedup.cdx_dups(lines, **kwargs) == cli.stdout.splitlines()


def test_batch_phases_from_python_equal_the_command_line(tmp_path):
    work, out = tmp_path / "work", tmp_path / "out"
    n = 3
    for t in range(n):
        assert webdedup.batch_hash(SAMPLE, work, t, n)
    for stage in ("url-title", "docs", "paras"):
        for t in reversed(range(n)):
            assert webdedup.batch_resolve(SAMPLE, work, t, n, stage)
    for t in range(n):
        assert webdedup.batch_filter(SAMPLE, work, out, t, n, dd=True)
    assert not webdedup.batch_filter(SAMPLE, work, out, 0, n, dd=True)  # finished: skipped
    want = tmp_path / "cli"
    subprocess.run([BIN, "dedup", "-q", "-i", str(SAMPLE), "-o", str(want), "--dd"], check=True)
    for f in want.rglob("*"):
        if f.is_file():
            assert (out / f.relative_to(want)).read_bytes() == f.read_bytes(), f
    with pytest.raises(ValueError):
        webdedup.batch_hash(SAMPLE, work, 5, n)
    with pytest.raises(webdedup.WebdedupError):
        webdedup.batch_hash(SAMPLE, work, 0, n, min_para_chars=80)


def test_a_redis_store_gives_the_embedded_stores_output(tmp_path):
    import shutil
    import socket
    import time

    if shutil.which("redis-server") is None:
        pytest.fail("redis-server is missing (scripts/deps.sh installs it)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", str(tmp_path)],
        stdout=subprocess.DEVNULL,
    )
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                break
            except OSError:
                time.sleep(0.02)
        docs = documents(SAMPLE / "cc-2024-33" / "part-00000.vert.gz")
        red = webdedup.Dedup(store=f"redis://127.0.0.1:{port}", capacity=100000).create_worker()
        emb = webdedup.Dedup().create_worker()
        assert [red.process(x).data for x in docs] == [emb.process(x).data for x in docs]
        with pytest.raises(webdedup.WebdedupError):
            webdedup.Dedup(store=f"redis://127.0.0.1:{port}", normalize="none")
        # Issue 19: the layout made with capacity=... is adopted when none is named,
        # another one is refused naming the option; the command line opens the same
        # key set the same way.
        again = webdedup.Dedup(store=f"redis://127.0.0.1:{port}").create_worker()
        assert again.process(docs[0]).data == b"", "the key set of the first Dedup"
        with pytest.raises(webdedup.WebdedupError, match="capacity"):
            webdedup.Dedup(store=f"redis://127.0.0.1:{port}", capacity=500_000_000)
        cli = subprocess.run(
            [BIN, "dedup", "-q", "-i", str(SAMPLE), "-o", str(tmp_path / "out"), "--store", f"redis://127.0.0.1:{port}"],
            capture_output=True, text=True,
        )
        assert cli.returncode == 0, cli.stderr
    finally:
        server.kill()
        server.wait()
    with pytest.raises(webdedup.WebdedupError):
        webdedup.Dedup(store=f"redis://127.0.0.1:{port}")


def block_map(tmp_path, ports):
    """A block map (`webdedup distribute`) over servers on these loopback ports."""
    servers = tmp_path / "servers"
    servers.write_text("".join(f"127.0.0.1:{p}\n" for p in ports))
    hashmap = tmp_path / "hashmap.conf"
    subprocess.run([BIN, "distribute", "-s", str(servers), "-o", str(hashmap)], check=True, capture_output=True)
    return hashmap


def free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_hash_servers_from_python_answer_as_the_embedded_store(tmp_path):
    """The seed's libdedup flow: Dedup(map), start_servers, workers, stop_servers;
    real `webdedup server` processes on loopback."""
    ports = [free_port(), free_port()]
    hashmap = block_map(tmp_path, ports)
    d = webdedup.Dedup(map=str(hashmap), store_dir=str(tmp_path / "state"), server_timeout=1)
    assert d.test_servers() == 1, "nothing runs yet"
    with pytest.raises(webdedup.WebdedupError, match="stopped"):
        d.test_servers(check=True)
    assert d.start_servers() == 0
    assert d.test_servers() == 0
    src = SAMPLE / "cc-2023-14" / "part-00000.vert.gz"
    w = d.create_worker()
    got = b"".join(w.process(x).data for x in documents(src))
    embedded = webdedup.Dedup().create_worker()
    want = b"".join(embedded.process(x).data for x in documents(src))
    assert got == want
    assert len(d) > 1000
    # The servers outlive this Dedup: another one (as in a new interpreter) stops them.
    del d
    other = webdedup.Dedup(map=str(hashmap), server_timeout=1)
    assert other.test_servers() == 0
    assert other.stop_servers() == 0
    assert other.test_servers() == 1
    # A worker used after its servers stopped raises a clear error.
    with pytest.raises(webdedup.WebdedupError, match="127.0.0.1"):
        w.process(documents(src)[0])
    # The servers saved their keys where store_dir said.
    assert sorted(p.name for p in (tmp_path / "state").glob("*.snap")) == [f"server-{p}.snap" for p in sorted(ports)]


def test_feedback_references_equal_the_command_lines_and_check_confirms_them(tmp_path):
    """Feedback mode: sources named by the input's relative path, fed in file order,
    give the `.dropped` files and files.idx of `webdedup dedup -f`, and `webdedup
    check` confirms every reference."""
    d = webdedup.Dedup(feedback=True)
    w = d.create_worker()
    out = tmp_path / "py"
    refs = 0
    for path in sorted(SAMPLE.glob("*/*.gz")):
        rel = str(path.relative_to(SAMPLE))
        dropped = b""
        for x in documents(path):
            v = w.process(x, source=rel)
            assert v.source == rel
            dropped += v.feedback
            for record, source, original in v.references:
                assert record >= v.first_record
                # Originals come earlier: in an earlier source, or earlier in this one.
                assert source is not None and original >= 1
                assert source < rel or (source == rel and original < record)
            refs += len(v.references)
        target = out / rel.removesuffix(".gz")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.with_name(target.name + ".dedup.dropped").write_bytes(dropped)
    assert refs > 1000
    assert d.write_files_index(out) == out / "files.idx"
    cli = tmp_path / "cli"
    subprocess.run([BIN, "dedup", "-q", "-t", "1", "-f", "-i", str(SAMPLE), "-o", str(cli)], check=True)
    for f in sorted(cli.rglob("*.dropped")) + [cli / "files.idx"]:
        assert (out / f.relative_to(cli)).read_bytes() == f.read_bytes(), f
    check = subprocess.run([BIN, "check", "--json", "-", "-i", str(SAMPLE), "-o", str(out)], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    import json

    report = json.loads(check.stdout)
    assert report["confirmed"] == report["references"] == refs and report["mismatches"] == []


def test_feedback_from_process_document_names_the_original_line():
    d = webdedup.Dedup(feedback=True, min_para_chars=10)
    w = d.create_worker()
    first = "a paragraph that will come back later\nan opening line of the first document\n"
    assert w.process_document(first, url="u1", source="a").references == []
    text = "brand new opening paragraph here\n\nan opening line of the first document\n"
    r = w.process_document(text, url="u2", source="b")
    line = "an opening line of the first document\n"
    start = text.index(line)
    assert r.references == [(start, start + len(line), "a", 2)]
    assert r.dropped == [(start, start + len(line))]
    # Without feedback there are no references, and no feedback text.
    plain = webdedup.Dedup(min_para_chars=10).create_worker()
    plain.process_document(first)
    assert plain.process_document(first).references == []
    assert plain.process(doc("x", long_para("alpha"))).feedback == b""
    # Feedback needs the embedded store (only it keeps locations).
    with pytest.raises(ValueError, match="Redis does not keep"):
        webdedup.Dedup(feedback=True, store="redis://127.0.0.1:1")
    with pytest.raises(ValueError, match="feedback"):
        webdedup.Dedup().write_files_index("somewhere")
    with pytest.raises(webdedup.WebdedupError, match="tabs"):
        w.process_document("some text here", source="a\tb")


def test_url_filter_from_rules_or_a_file(tmp_path):
    rules = tmp_path / "filter.txt"
    rules.write_text("# spam\nhost:spam.example\n")
    for url_filter in (["host:spam.example"], rules, str(rules)):
        w = webdedup.Dedup(url_filter=url_filter).create_worker()
        v = w.process(doc("https://spam.example/x", long_para("alpha")) + doc("https://ok.example/", long_para("alpha")))
        assert v.statuses == ["U", "K"], url_filter
        assert v.text == doc("https://ok.example/", long_para("alpha"))
    with pytest.raises(ValueError, match="url_filter rule:2"):
        webdedup.Dedup(url_filter=["host:ok.example", "re:("])
    bad = tmp_path / "bad-filter.txt"
    bad.write_text("host:ok.example\nre:(\n")
    with pytest.raises(ValueError, match="bad-filter.txt:2: "):
        webdedup.Dedup(url_filter=bad)
    with pytest.raises(webdedup.WebdedupError, match="no-such-filter"):
        webdedup.Dedup(url_filter=tmp_path / "no-such-filter")


def test_words_that_look_like_structure_stay_text():
    w = webdedup.Dedup(min_para_chars=5).create_worker()
    text = "closing </doc> and <p> inside a line\nanother line with \x00 a NUL\n"
    r = w.process_document(text, url="u")
    assert r.status == "K" and r.text == text
    again = w.process_document(text, url="u2")
    assert again.status == "D" and again.text == ""


def test_port_is_checked_against_the_map(tmp_path):
    port = free_port()
    hashmap = block_map(tmp_path, [port])
    assert webdedup.Dedup(map=str(hashmap), port=port).test_servers() == 1
    with pytest.raises(webdedup.WebdedupError, match=f"127.0.0.1:{port}"):
        webdedup.Dedup(map=str(hashmap), port=port + 1 if port < 65535 else port - 1)
    with pytest.raises(ValueError, match="map"):
        webdedup.Dedup(port=1234)


def test_started_servers_outlive_the_interpreter_that_started_them(tmp_path):
    import sys

    port = free_port()
    hashmap = block_map(tmp_path, [port])
    script = (
        "import sys, webdedup\n"
        "d = webdedup.Dedup(map=sys.argv[1])\n"
        "assert d.start_servers() == 0\n"
        "w = d.create_worker()\n"
        "assert w.process(sys.argv[2]).status == 'K'\n"
    )
    first = doc("a", long_para("alpha"))
    subprocess.run([sys.executable, "-c", script, str(hashmap), first], check=True, env=os.environ, timeout=120)
    d = webdedup.Dedup(map=str(hashmap), server_timeout=1)
    try:
        assert d.test_servers() == 0
        # The key the other interpreter sent is still there.
        assert d.create_worker().process(first).status == "D"
    finally:
        assert d.stop_servers() == 0
    assert d.test_servers() == 1


def test_cdx_dups_skips_bad_lines_with_a_warning_naming_them():
    line = "org,example)/ {} http://example.org/ text/html 200 {} - - 100 0 a.warc.gz"
    lines = [line.format("20070101", "AAA"), "not a cdx line", line.format("20070102", "AAA")]
    with pytest.warns(webdedup.WebdedupWarning, match=r"lines\[1\]: .*not a known CDX layout"):
        assert webdedup.cdx_dups(lines, whole_lines=True) == [lines[2]]


# Every problem is also a warning (tested in test_bad_input_is_reported_not_raised).
@pytest.mark.filterwarnings("ignore::webdedup.WebdedupWarning")
def test_random_bytes_never_raise_and_keep_every_good_document():
    """Garbage mixed into verticals: never an exception (a Rust panic would surface
    as one), problems reported, and the good documents around it still decided."""
    import random

    rng = random.Random(8)
    pieces = [b"<doc url=\"u\">\n", b"</doc>\n", b"<p>\n", b"</p>\n", b"word\n", b"\xff\xfe\n", b"\x00\n",
              b"<doc", b"<g/>\n", b"<doc url=\"\xc3\x28\">\n", b"\n", b"\t\t\n", b"<p>" * 3]
    d = webdedup.Dedup(near=True, feedback=True, min_para_chars=3)
    w = d.create_worker()

    def fresh(i):
        # Letters only: loose normalization folds digits, and near mode counts a
        # repeated n-gram within a document as seen.
        words = "".join("".join(chr(97 + rng.randrange(26)) for _ in range(8)) + "\n" for k in range(12))
        return doc(f"https://good{i}.example/", f"<p>\n{words}</p>\n")

    for i in range(300):
        junk = b"".join(rng.choice(pieces) for _ in range(rng.randrange(1, 30)))
        junk += bytes(rng.randrange(256) for _ in range(rng.randrange(0, 40)))
        good = fresh(i).encode()
        v = w.process(junk + b"\n" + good)
        # The good document after the junk is kept whole.
        assert v.statuses[-1] == "K" and v.data.endswith(good), (junk, v)
        text = junk.decode("utf-8", "replace") + "\n" + "".join(chr(rng.randrange(1, 0x2FFF)) for _ in range(50))
        r = w.process_document(text, url=f"https://junk{i}.example/")
        assert all(0 <= a < b <= len(text) for a, b in r.dropped)
    assert w.process(b"<doc url=\"x\">\n\xff\n").problems


def test_feedback_on_hash_servers_gives_the_embedded_stores_references(tmp_path):
    ports = [free_port(), free_port()]
    hashmap = block_map(tmp_path, ports)
    d = webdedup.Dedup(map=str(hashmap), feedback=True, server_timeout=1)
    assert d.start_servers() == 0
    try:
        remote, local = d.create_worker(), webdedup.Dedup(feedback=True).create_worker()
        refs = 0
        for path in sorted(SAMPLE.glob("*/*.gz"))[:2]:
            for x in documents(path):
                r, l = remote.process(x, source=path.parent.name), local.process(x, source=path.parent.name)
                assert (r.data, r.feedback, r.references) == (l.data, l.feedback, l.references)
                refs += len(r.references)
        assert refs > 100
    finally:
        assert d.stop_servers() == 0


@pytest.mark.parametrize("bin_env", ["missing", "unset"])
def test_start_servers_without_the_binary_says_why(tmp_path, monkeypatch, bin_env):
    """Issue 19: no binary is not a silent 1 with an empty log; the warning and the
    server's log name WEBDEDUP_BIN."""
    port = free_port()
    hashmap = block_map(tmp_path, [port])
    if bin_env == "missing":
        monkeypatch.setenv("WEBDEDUP_BIN", str(tmp_path / "no-such-webdedup"))
    else:
        monkeypatch.delenv("WEBDEDUP_BIN", raising=False)
        monkeypatch.setenv("PATH", str(tmp_path / "empty-path"))
    d = webdedup.Dedup(map=str(hashmap), server_timeout=1)
    with pytest.warns(webdedup.WebdedupWarning, match="WEBDEDUP_BIN"):
        assert d.start_servers() == 1
    log = Path(str(hashmap) + ".servers") / f"{port}.log"
    assert "WEBDEDUP_BIN" in log.read_text()
    with pytest.raises(webdedup.WebdedupError, match="WEBDEDUP_BIN"):
        d.start_servers(check=True)


def test_near_limits_are_the_command_lines():
    """Issue 19: the same check, and message, as `webdedup dedup --ngram 0`."""
    with pytest.raises(ValueError, match="--ngram must be between 1 and 64"):
        webdedup.Dedup(near=True, ngram=0)
    with pytest.raises(ValueError, match="--threshold must be at least 0 and below 1"):
        webdedup.Dedup(near=True, threshold=1.0)
