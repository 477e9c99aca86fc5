"""Helpers of bench/dolma_agreement.sh (standard library only, except `time-dolma`,
which runs inside dolma's own virtualenv).

  edges DIR            writes the edge-case corpus (CRLF, blank and whitespace-only
                       lines, spaces around a paragraph, an empty text) as
                       DIR/documents/edges/part-0.jsonl.gz
  time-dolma CONFIG    runs dolma's dedupe engine (its Rust entry point, the one
                       `dolma dedupe` calls) on a JSON config; prints wall and CPU
                       seconds of that call alone (the CLI's start-up is left out)
  compare DOCS ATTRS OURS [MARK]
                       paragraph by paragraph: dolma's marked spans (ATTRS, its
                       attribute files) against the paragraphs `webdedup dedup`
                       dropped (OURS: outputs and .dd files), and both against an
                       exact reference computed here; every difference is
                       explained or the exit status is 1. With MARK (the outputs
                       of `dedup --mark`): its outputs must be the inputs, and its
                       attributes spans must mark exactly the paragraphs OURS
                       dropped, each span covering its line without the break
"""

import gzip
import json
import pathlib
import sys

# Rust's `char::is_whitespace` (Unicode White_Space), which both dolma
# (`str::trim`, with skip_empty) and webdedup (blank lines are not paragraphs) use.
# Python's str.isspace also counts U+001C..U+001F, so it is not used.
WHITE = "\t\n\x0b\x0c\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"


def blank(s):
    return s.strip(WHITE) == ""


def open_any(path):
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    elif data[:4] == b"\x28\xb5\x2f\xfd":
        import subprocess

        # Through a pipe: zstd skips a symbolic link given as a file name.
        data = subprocess.run(["zstd", "-qdc"], input=data, check=True, capture_output=True).stdout
    return data.decode("utf-8")


def dolma_paragraphs(text):
    """(start offset as dolma computes it, paragraph) for each piece of text.split("\\n"),
    exactly as dolma 1.2.1's deduper walks them (offsets in characters, the newline
    added while the offset is below the text's length in bytes minus one)."""
    out, offset, nbytes = [], 0, len(text.encode())
    if nbytes == 0:
        return out
    for p in text.split("\n"):
        start = offset
        offset += len(p)
        if offset < nbytes - 1:
            offset += 1
        out.append((start, p))
    return out


def our_key(pieces, i):
    """The paragraph text webdedup hashes under --normalize none: the line, without a
    `\\r` that ends it when a `\\n` follows (the `\\r` belongs to the line break)."""
    p = pieces[i]
    if i + 1 < len(pieces) and p.endswith("\r"):
        return p[:-1]
    return p


def edges(root):
    docs = [
        {"id": "e1", "text": "alpha line\r\nbeta line"},
        {"id": "e2", "text": "alpha line\nbeta line\r\n"},  # alpha: CRLF vs LF
        {"id": "e3", "text": "gamma\n\n   \n\u3000\ngamma"},  # blank, spaces, ideographic space
        {"id": "e4", "text": "  delta  \ndelta\n  delta  "},  # spaces are part of a paragraph
        {"id": "e5", "text": ""},
        {"id": "e6", "text": "\n\n"},
        {"id": "e7", "text": "epsilon\u00a0\nepsilon\u00a0"},
    ]
    d = root / "documents" / "edges"
    d.mkdir(parents=True, exist_ok=True)
    body = "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in docs)
    (d / "part-0.jsonl.gz").write_bytes(gzip.compress(body.encode()))


def time_dolma(config):
    import resource
    import time

    from dolma import dolma as engine  # the Rust extension that `dolma dedupe` calls

    cfg = pathlib.Path(config).read_text()
    r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    engine.deduper_entrypoint(cfg)
    t1, r1 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    print(f"{t1 - t0:.3f} {cpu:.3f}")


def dd_statuses(path):
    out = []
    for line in path.read_text().splitlines():
        status = line.split(' status="', 1)[1].split('"', 1)[0]
        ident = line.split(' id="', 1)[1].split('"', 1)[0] if ' id="' in line else None
        out.append((ident, status))
    return out


def mark_files(mark_dir, rel):
    """The output and the attributes of `dedup --mark` for input `rel`."""
    # STEM.dedup.jsonl(.gz|.zst): outputs keep their format's extension.
    stem = rel.name.removesuffix(".gz").removesuffix(".zst").removesuffix(".jsonl") + ".dedup"
    d = mark_dir / rel.parent
    names = [stem + ".jsonl" + z for z in ("", ".gz", ".zst")]
    outs = [p for p in d.glob(stem + "*") if p.name in names]
    assert len(outs) == 1, f"no single --mark output for {rel}: {outs}"
    return outs[0], d / (stem + ".attributes.jsonl")


def compare(docs_dir, attrs_dir, ours_dir, mark_dir=None):
    docs_dir, attrs_dir, ours_dir = map(pathlib.Path, (docs_dir, attrs_dir, ours_dir))
    # --mark against the dropping run: paragraphs marked differently, spans whose
    # end is not their line's, outputs that are not their inputs.
    mark = {"files": 0, "records": 0, "spans": 0, "doc_spans": 0, "differ_from_dropped": 0,
            "differ_from_dolma": 0, "bad_span_end": 0, "output_not_input": 0}
    files = sorted(p.relative_to(docs_dir) for p in docs_dir.rglob("*") if p.is_file() or p.is_symlink())
    seen_dolma, seen_ours = set(), set()  # exact references, one per paragraph definition
    n = {"docs": 0, "paras": 0, "ours": 0, "dolma": 0, "ref_ours": 0, "ref_dolma": 0}
    # The same counts for the edge cases alone (the corpus's are the difference).
    edge = dict.fromkeys(n, 0)
    diffs = {"ours_vs_reference": 0, "bloom_false_positive": 0, "crlf": 0, "unexplained": 0}
    shown = []
    for rel in files:
        records = [json.loads(l) for l in open_any(docs_dir / rel).splitlines() if l.strip()]
        attrs = [json.loads(l) for l in open_any(attrs_dir / rel).splitlines() if l.strip()]
        dd_files = list((ours_dir / rel.parent).glob(rel.name.split(".")[0] + "*.dd"))
        assert len(dd_files) == 1, f"no single .dd for {rel}: {dd_files}"
        statuses = dd_statuses(dd_files[0])
        outs = [p for p in (ours_dir / rel.parent).glob(rel.name.split(".")[0] + "*")
                if not p.name.endswith(".dd") and not p.name.endswith(".run-id")]
        assert len(outs) == 1, f"no single output for {rel}: {outs}"
        kept = iter(json.loads(l) for l in open_any(outs[0]).splitlines() if l.strip())
        assert len(records) == len(attrs) == len(statuses), rel
        marks = iter(())
        if mark_dir:
            mark_out, mark_attrs = mark_files(pathlib.Path(mark_dir), rel)
            mark["files"] += 1
            mark["output_not_input"] += open_any(mark_out) != open_any(docs_dir / rel)
            marks = [json.loads(l) for l in mark_attrs.read_text().splitlines()]
            assert len(marks) == len(records), (rel, "attributes lines", len(marks), len(records))
            marks = iter(marks)
        for rec, att, (ident, status) in zip(records, attrs, statuses):
            assert att["id"] == rec["id"] == ident, (rel, rec["id"], att["id"], ident)
            if rel.parts[0] == "edges":
                before = dict(n)
            n["docs"] += 1
            text = rec["text"]
            pieces = dolma_paragraphs(text)
            start_of = {s: i for i, (s, _) in enumerate(pieces)}
            spans = next(iter(att["attributes"].values()), [])
            marked = {start_of[s] for s, _, _ in spans}
            paras = [i for i, (_, p) in enumerate(pieces) if not blank(p)]
            n["paras"] += len(paras)
            # Our decisions: K keeps all, E drops all, N/M keeps the paragraphs
            # found in order in the written text (a kept copy of a text is always
            # its first occurrence in the document, so matching in order is exact).
            if status == "K":
                dropped = set()
            elif status == "E":
                dropped = set(paras)
            else:
                out_lines = [p for p in next(kept)["text"].split("\n") if not blank(p)]
                dropped, j = set(), 0
                raw = [p for _, p in pieces]
                for i in paras:
                    # A kept line written last loses the `\r` of its break.
                    if j < len(out_lines) and out_lines[j].removesuffix("\r") == raw[i].removesuffix("\r"):
                        j += 1
                    else:
                        dropped.add(i)
                assert j == len(out_lines), (rel, rec["id"], "written text is not a subsequence")
            if status == "K":
                next(kept)
            raw = [p for _, p in pieces]
            for i in paras:
                key_d, key_o = raw[i], our_key(raw, i)
                ref_d, ref_o = key_d in seen_dolma, key_o in seen_ours
                seen_dolma.add(key_d)
                seen_ours.add(key_o)
                n["ref_dolma"] += ref_d
                n["ref_ours"] += ref_o
                ours, theirs = i in dropped, i in marked
                n["ours"] += ours
                n["dolma"] += theirs
                if ours != ref_o:
                    diffs["ours_vs_reference"] += 1
                if ours == theirs:
                    continue
                if theirs and not ref_d:
                    why = "bloom_false_positive"  # never seen before: a Bloom filter's false hit
                elif ref_d != ref_o:
                    why = "crlf"  # the texts differ only by a \r before the line break
                else:
                    why = "unexplained"
                diffs[why] += 1
                if len(shown) < 10:
                    shown.append(f"  {rel} {rec['id']} paragraph {i}: ours={'dropped' if ours else 'kept'}, "
                                 f"dolma={'marked' if theirs else 'unmarked'} ({why}): {raw[i][:60]!r}")
            m = next(marks, None)
            if m is not None:
                assert m["id"] == rec["id"], (rel, m["id"], rec["id"])
                a = m["attributes"]
                mark["records"] += 1
                marked_ours = set()
                for s, e, _ in a["webdedup_duplicate_paragraphs"]:
                    mark["spans"] += 1
                    i = start_of.get(s)
                    if i is None or e != s + len(our_key(raw, i)):
                        mark["bad_span_end"] += 1
                    else:
                        marked_ours.add(i)
                if a["webdedup_duplicate_document"]:
                    mark["doc_spans"] += 1
                    if a["webdedup_duplicate_document"] != [[0, len(text), 1.0]]:
                        mark["bad_span_end"] += 1
                    marked_ours |= set(paras)
                mark["differ_from_dropped"] += len(marked_ours ^ dropped)
                mark["differ_from_dolma"] += len(marked_ours ^ marked)
            if rel.parts[0] == "edges":
                for k in n:
                    edge[k] += n[k] - before[k]
        for _ in kept:
            raise AssertionError(f"{rel}: more written records than kept documents")
    print(f"{n['docs']} documents, {n['paras']} paragraphs (non-blank lines): "
          f"webdedup dropped {n['ours']}, dolma marked {n['dolma']}; "
          f"exact reference: {n['ref_ours']} (lines without a closing \\r), {n['ref_dolma']} (dolma's keys)")
    corpus = {k: n[k] - edge[k] for k in n}
    for name, c in (("corpus", corpus), ("edge cases", edge)):
        print(f"  {name}: {c['docs']} documents, {c['paras']} paragraphs: webdedup dropped {c['ours']}, "
              f"dolma marked {c['dolma']}; exact reference {c['ref_ours']} / {c['ref_dolma']}")
    print("differences: " + ", ".join(f"{k} {v}" for k, v in diffs.items()))
    for s in shown:
        print(s)
    bad_mark = False
    if mark_dir:
        print("--mark: " + ", ".join(f"{k} {v}" for k, v in mark.items()) +
              " (differ_from_dolma: the crlf differences above)")
        bad_mark = mark["differ_from_dropped"] or mark["bad_span_end"] or mark["output_not_input"]
        bad_mark = bad_mark or mark["differ_from_dolma"] != diffs["crlf"] + diffs["bloom_false_positive"]
    return 1 if diffs["unexplained"] or diffs["ours_vs_reference"] or bad_mark else 0


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "edges":
        edges(pathlib.Path(sys.argv[2]))
    elif cmd == "time-dolma":
        time_dolma(sys.argv[2])
    elif cmd == "compare":
        sys.exit(compare(*sys.argv[2:6]))
    else:
        sys.exit(__doc__)
