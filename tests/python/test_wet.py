"""`webdedup dedup` on Common Crawl WET files, checked with warcio: the output is
valid WARC that warcio reads with its digests checked, each kept record with its
kept lines and a correct Content-Length (WEBDEDUP_BIN names the binary)."""

import io

import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.warcwriter import WARCWriter

P1 = "The first paragraph is long enough to be looked up in the store."
P2 = "A second paragraph, unique to the first page, also long enough."
P3 = "The third paragraph appears only on the second page of this crawl."


def write_wet(path, gzip, pages):
    with open(path, "wb") as f:
        w = WARCWriter(f, gzip=gzip)
        w.write_record(w.create_warcinfo_record(path.name, {"software": "webdedup test"}))
        for uri, text in pages:
            rec = w.create_warc_record(
                uri,
                "conversion",
                payload=io.BytesIO(text.encode()),
                warc_content_type="text/plain",
            )
            w.write_record(rec)


def read_records(path):
    out = []
    with open(path, "rb") as f:
        for rec in ArchiveIterator(f, check_digests="raise"):
            body = rec.content_stream().read()
            length = int(rec.rec_headers.get_header("Content-Length"))
            out.append((rec.rec_type, rec.rec_headers.get_header("WARC-Target-URI"), body, length))
    return out


@pytest.mark.parametrize("gzip", [True, False])
def test_dedup_of_a_wet_file_is_valid_warc_for_warcio(webdedup, tmp_path, gzip):
    name = "crawl.warc.wet.gz" if gzip else "crawl.warc.wet"
    src = tmp_path / "in"
    src.mkdir()
    write_wet(
        src / name,
        gzip,
        [
            ("https://a.example/", f"{P1}\n{P2}\n"),
            ("https://b.example/", f"{P1}\r\n\r\n{P3}"),
            ("https://c.example/", f"{P1}\n{P2}\n"),
        ],
    )
    out = tmp_path / "out"
    webdedup("dedup", "-i", src, "-o", out, "-q", "--dd")
    # Outputs keep their format's extension: crawl.dedup.warc.wet(.gz).
    result = out / ("crawl.dedup.warc.wet" + (".gz" if gzip else ""))
    records = read_records(result)
    assert [r[0] for r in records] == ["warcinfo", "conversion", "conversion"]
    # The first page whole, the second with its new paragraph only (the line
    # break before it goes with the dropped line), the third dropped as a copy.
    assert records[1][1:3] == ("https://a.example/", f"{P1}\n{P2}\n".encode())
    assert records[2][1:3] == ("https://b.example/", P3.encode())
    for _, _, body, length in records:
        assert len(body) == length
    dd = (out / "crawl.dedup.dd").read_text()
    assert [line.split('status="')[1].split('"')[0] for line in dd.splitlines()] == ["K", "1/2", "D"]

    # --mark: the input unchanged (record for record) and the spans beside it.
    marked = tmp_path / "marked"
    webdedup("dedup", "-i", src, "-o", marked, "-q", "--mark")
    assert read_records(marked / result.name) == read_records(src / name)
    attrs = (marked / "crawl.dedup.attributes.jsonl").read_text().splitlines()
    assert len(attrs) == 4
