"""Checks of `webdedup warc index|dedup` and `webdedup cdx` against warcio and
cdxj-indexer (pip install -r requirements.txt; WEBDEDUP_BIN names the binary)."""

import hashlib
import base64
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

# Sample files cdxj-indexer itself cannot index (whole-file gzip) or that are not
# archives; the others must give identical index lines.
NOT_COMPARABLE = {"example-bad.warc.gz.bad"}


def cdxj_indexer(*args):
    code = "import sys; from cdxj_indexer.main import main; sys.exit(main())"
    p = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return p.stdout


def parse_cdxj(text):
    out = []
    for line in text.splitlines():
        key, ts, js = line.split(" ", 2)
        out.append((key, ts, json.loads(js)))
    return out


def sample_archives(sample):
    files = sorted(p for p in (sample / "warcs").iterdir() if p.is_file() and p.name not in NOT_COMPARABLE)
    assert len(files) >= 10
    return files


def test_index_cdxj_equals_cdxj_indexer(webdedup, pywb_sample):
    for f in sample_archives(pywb_sample):
        want = parse_cdxj(cdxj_indexer(f))
        got = parse_cdxj(webdedup("warc", "index", f, check=False).stdout)
        assert got == want, f.name


def test_index_cdx11_equals_cdxj_indexer(webdedup, pywb_sample):
    for f in sample_archives(pywb_sample):
        want = cdxj_indexer("-11", f).splitlines()
        got = webdedup("warc", "index", "--format", "cdx11", f, check=False).stdout.splitlines()
        assert got == want, f.name


def test_index_of_whole_file_gzip_is_refused_as_cdxj_indexer_does(webdedup, pywb_sample):
    """Issue 16 W5: records sharing one gzip member have no usable offset/length:
    no index line (cdxj-indexer writes nothing and exits 1), exit 1, a message."""
    f = pywb_sample / "warcs" / "example-bad.warc.gz.bad"
    code = "import sys; from cdxj_indexer.main import main; sys.exit(main())"
    ref = subprocess.run([sys.executable, "-c", code, str(f)], capture_output=True, text=True)
    assert (ref.returncode, ref.stdout) == (1, "")
    p = webdedup("warc", "index", f, check=False)
    assert (p.returncode, p.stdout) == (1, ""), p.stderr
    assert "not indexed" in p.stderr and "recompress" in p.stderr, p.stderr


def test_index_reports_bad_input_and_goes_on(webdedup, pywb_sample):
    p = webdedup("warc", "index", pywb_sample / "warcs" / "bad.arc", pywb_sample / "warcs" / "example.warc.gz", check=False)
    assert p.returncode == 1, p.stderr
    assert "bad.arc: offset" in p.stderr
    assert "example.warc.gz" in p.stdout  # the good file after the bad one is indexed


def warcio_records(path):
    with open(path, "rb") as fh:
        out = []
        for r in ArchiveIterator(fh):
            payload = r.content_stream().read() if r.rec_type != "revisit" else b""
            out.append((r.rec_type, r.rec_headers, r.http_headers, payload))
        return out


def check_dedup_output(inputs, outputs):
    """Same records in the same order; revisits point at responses that exist."""
    ids = {}
    revisits = []
    for i, o in zip(inputs, outputs):
        a, b = warcio_records(i), warcio_records(o)
        assert len(a) == len(b), o
        for (ta, ha, _, pa), (tb, hb, httpb, pb) in zip(a, b):
            assert ha.get_header("WARC-Record-ID") == hb.get_header("WARC-Record-ID")
            if tb == "revisit" and ta == "response":
                assert hb.get_header("WARC-Profile").endswith("/revisit/identical-payload-digest")
                assert httpb is not None and httpb.get_statuscode()
                revisits.append((hb.get_header("WARC-Refers-To"), hb.get_header("WARC-Payload-Digest")))
            else:
                assert tb == ta and pa == pb
                ids[hb.get_header("WARC-Record-ID")] = (tb, hb.get_header("WARC-Payload-Digest"))
    for target, digest in revisits:
        assert target in ids, f"revisit refers to a missing record {target}"
        assert ids[target][0] == "response"
    return revisits


def warcio_check(*files):
    code = "import sys; from warcio.cli import main; sys.exit(main())"
    p = subprocess.run([sys.executable, "-c", code, "check", "-v", *map(str, files)], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr


def write_warc(path, captures, gzip=True):
    with open(path, "wb") as fh:
        w = WARCWriter(fh, gzip=gzip)
        for url, body in captures:
            headers = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
            rec = w.create_warc_record(url, "response", payload=io.BytesIO(body), http_headers=headers)
            w.write_record(rec)


@pytest.mark.parametrize("gzip", [True, False])
def test_dedup_of_warcio_written_crawls(webdedup, tmp_path, gzip):
    ext = ".warc.gz" if gzip else ".warc"
    # Payloads that do not compress away: a revisit is only written when it is
    # smaller than the record it replaces.
    big = b"".join(hashlib.sha256(b"a%d" % i).hexdigest().encode() for i in range(200))
    bee = b"".join(hashlib.sha256(b"b%d" % i).hexdigest().encode() for i in range(50))
    c1, c2 = tmp_path / f"c1{ext}", tmp_path / f"c2{ext}"
    write_warc(c1, [("http://a.org/", big), ("http://b.org/", bee), ("http://a.org/x", big)], gzip)
    write_warc(c2, [("http://a.org/", big), ("http://c.org/", bee), ("http://d.org/", b"new")], gzip)
    out = tmp_path / "out"
    p = webdedup("warc", "dedup", c1, c2, "-o", out)
    assert "3 revisits written" in p.stderr, p.stderr
    outs = [out / c1.name, out / c2.name]
    warcio_check(*outs)
    assert len(check_dedup_output([c1, c2], outs)) == 3
    # --by url+digest: only the same URL with the same payload.
    out2 = tmp_path / "out2"
    p = webdedup("warc", "dedup", "--by", "url+digest", c1, c2, "-o", out2)
    assert "1 revisit written" in p.stderr, p.stderr
    check_dedup_output([c1, c2], [out2 / c1.name, out2 / c2.name])


def test_dedup_pywb_sample_readable_by_warcio(webdedup, pywb_sample, tmp_path):
    warcs = pywb_sample / "warcs"
    inputs = [warcs / n for n in ("example.warc.gz", "iana.warc.gz", "dupes.warc.gz", "example-extra.warc", "post-test.warc.gz")]
    out = tmp_path / "out"
    p = webdedup("warc", "dedup", *inputs, "-o", out, check=False)
    assert p.returncode in (0, 1), p.stderr
    outs = [out / i.name for i in inputs]
    for o in outs:
        code = "import sys; from warcio.cli import main; sys.exit(main())"
        r = subprocess.run([sys.executable, "-c", code, "index", str(o)], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    revisits = check_dedup_output(inputs, outs)
    assert revisits, "the sample has repeated payloads"
    # Our index of the output equals cdxj-indexer's.
    for o in outs:
        assert parse_cdxj(webdedup("warc", "index", o, check=False).stdout) == parse_cdxj(cdxj_indexer(o)), o.name


def test_cdx_dups_and_dates_on_pywb_cdx(webdedup, pywb_sample, tmp_path):
    cdx = pywb_sample / "cdx" / "iana.cdx"
    lines = [l.split(" ") for l in cdx.read_text().splitlines()[1:]]
    seen, want = set(), []
    for f in lines:
        k = (f[0], f[5].upper())
        if k in seen:
            want.append(f"{f[0]} sha1:{f[5].upper()} {f[1]}")
        seen.add(k)
    got = webdedup("cdx", "dups", cdx).stdout.splitlines()
    assert got == want and want
    dates = {}
    for f in lines:
        dates.setdefault((f[0], f[5].upper()), set()).add(f[1])
    want = [f"{k} sha1:{d} " + " ".join(sorted(v)) for (k, d), v in sorted(dates.items())]
    got = webdedup("cdx", "dates", "--memory", "64K", cdx).stdout.splitlines()
    assert got == want
    revisits = webdedup("cdx", "revisits", cdx).stdout.splitlines()
    assert len(revisits) == sum(1 for f in lines if f[3] == "warc/revisit")
