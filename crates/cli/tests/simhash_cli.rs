//! End-to-end tests of `webdedup simhash` / `webdedup similar` through the real
//! binary (moved here from the simhash crate when its flags moved into the binary).

use std::fs;
use std::path::{Path, PathBuf};
use webdedup_simhash::core::hamming;
use webdedup_simhash::tokenize::{Fingerprinter, Settings, Tokenizer, Weights};

/// Runs `webdedup ARGS -q`: `Ok(exit status)` for 0 and 1, `Err(stderr)` for a
/// fatal error (status 2), as the library's entry points answer.
fn run(args: &[&str]) -> anyhow::Result<i32> {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_webdedup"))
        .args(args)
        .arg("-q")
        .output()?;
    match o.status.code() {
        Some(c @ (0 | 1)) => Ok(c),
        c => anyhow::bail!(
            "exit {c:?}: {}",
            String::from_utf8_lossy(&o.stderr).trim_end()
        ),
    }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Deterministic pseudo-text: `n` words from a small vocabulary.
fn words(seed: u64, n: usize) -> Vec<String> {
    const V: &[&str] = &[
        "the", "module", "server", "client", "returns", "value", "list", "of", "table", "index",
        "query", "database", "function", "python", "option", "file", "default", "string", "error",
        "read", "write", "data", "new", "old", "system", "package", "install", "version", "see",
        "also", "note", "when", "is", "not", "a", "and",
    ];
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            V[(x % V.len() as u64) as usize].to_string()
        })
        .collect()
}

/// Documents: 12 distinct bases; doc 12 = base 0 with one word changed, doc 13 =
/// exact copy of base 3, doc 14 = base 5 with its second half replaced (far).
fn corpus() -> Vec<(String, String)> {
    let mut docs: Vec<(String, String)> = (0..12)
        .map(|i| (format!("d{i}"), words(i + 1, 300).join(" ")))
        .collect();
    let mut w = words(1, 300);
    w[150] = "CHANGED".into();
    docs.push(("near0".into(), w.join(" ")));
    docs.push(("copy3".into(), docs[3].1.clone()));
    let mut far = words(6, 150);
    far.extend(words(99, 150));
    docs.push(("far5".into(), far.join(" ")));
    docs
}

fn write_vertical(path: &Path, docs: &[(String, String)]) -> String {
    let mut v = String::new();
    for (id, text) in docs {
        v.push_str(&format!(
            "<doc id=\"{id}\" url=\"https://example.org/{id}?a=1&amp;b=2\">\n<p>\n"
        ));
        for w in text.split(' ') {
            v.push_str(w);
            v.push_str("\tX\n");
        }
        v.push_str("</p>\n</doc>\n");
    }
    fs::write(path, &v).unwrap();
    v
}

/// The corpus written as the vertical `dir/name`.
fn corpus_vertical(dir: &Path, name: &str) -> (Vec<(String, String)>, PathBuf) {
    let docs = corpus();
    let vert = dir.join(name);
    write_vertical(&vert, &docs);
    (docs, vert)
}

fn read_tsv(path: &Path) -> Vec<Vec<String>> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split('\t').map(String::from).collect())
        .collect()
}

fn fp(settings: Settings, text: &str) -> u64 {
    Fingerprinter::new(settings).fingerprint(text).unwrap()
}

#[test]
fn simhash_then_similar_pairs_match_brute_force() {
    let dir = tempfile::tempdir().unwrap();
    let (docs, vert) = corpus_vertical(dir.path(), "a.vert");
    let fps_path = dir.path().join("fps.tsv");
    assert_eq!(run(&["simhash", s(&vert), "-o", s(&fps_path)]).unwrap(), 0);
    let text = fs::read_to_string(&fps_path).unwrap();
    assert!(
        text.starts_with(
            "# webdedup-simhash v1 tokenizer=unicode shingle=5 weights=distinct hash=xxh3-64\n"
        ),
        "{text}"
    );
    let rows = read_tsv(&fps_path);
    assert_eq!(rows.len(), docs.len());
    let settings = Settings::default();
    let mut fps = Vec::new();
    for (row, (id, t)) in rows.iter().zip(&docs) {
        let h = fp(settings, t);
        assert_eq!(row[0], *id);
        assert_eq!(row[1], format!("{h:016x}"));
        assert_eq!(row[2], (h as i64).to_string());
        assert_eq!(row[3], ((h >> 48) as u16).to_string());
        assert_eq!(row[6], (h as u16).to_string());
        fps.push(h);
    }
    // The planted near-duplicate is near, the far one is far.
    assert!(
        hamming(fps[0], fps[12]) <= 6,
        "one changed word moved {} bits",
        hamming(fps[0], fps[12])
    );
    assert!(hamming(fps[5], fps[14]) > 10);

    for k in [0u32, 3, 6, 12] {
        let out = dir.path().join(format!("pairs{k}.tsv"));
        assert_eq!(
            run(&["similar", "-k", &k.to_string(), s(&fps_path), "-o", s(&out)]).unwrap(),
            0
        );
        let got: Vec<(String, String, u32)> = read_tsv(&out)
            .into_iter()
            .map(|r| (r[0].clone(), r[1].clone(), r[2].parse().unwrap()))
            .collect();
        let mut expect = Vec::new();
        for i in 0..docs.len() {
            for j in i + 1..docs.len() {
                let d = hamming(fps[i], fps[j]);
                if d <= k {
                    expect.push((docs[i].0.clone(), docs[j].0.clone(), d));
                }
            }
        }
        assert_eq!(got, expect, "k={k}");
        assert!(got.contains(&("d3".into(), "copy3".into(), 0)));
    }

    // Documents directly give the same pairs as their fingerprint file.
    let direct = dir.path().join("direct.tsv");
    assert_eq!(
        run(&["similar", "-k", "6", s(&vert), "-o", s(&direct)]).unwrap(),
        0
    );
    assert_eq!(
        fs::read(&direct).unwrap(),
        fs::read(dir.path().join("pairs6.tsv")).unwrap()
    );
}

#[test]
fn clusters_and_dedup_are_byte_faithful() {
    let dir = tempfile::tempdir().unwrap();
    let (docs, vert) = corpus_vertical(dir.path(), "in.vert");
    // zstd input: the output keeps the compression and the name.
    let zst = dir.path().join("in2.vert.zst");
    let vert2_docs = vec![
        ("late0".to_string(), docs[0].1.clone()),
        ("fresh".to_string(), words(500, 300).join(" ")),
    ];
    let plain2 = dir.path().join("tmp2");
    let raw2 = write_vertical(&plain2, &vert2_docs);
    fs::write(&zst, zstd::encode_all(raw2.as_bytes(), 3).unwrap()).unwrap();

    let out = dir.path().join("clusters.tsv");
    assert_eq!(
        run(&[
            "similar",
            "-k",
            "6",
            "--clusters",
            s(&vert),
            s(&zst),
            "-o",
            s(&out)
        ])
        .unwrap(),
        0
    );
    let cl = read_tsv(&out);
    assert!(cl.contains(&vec!["d0".into(), "d0".into(), "0".into()]));
    assert!(cl.contains(&vec!["d0".into(), "late0".into(), "0".into()]));
    assert!(cl.contains(&vec!["d3".into(), "copy3".into(), "0".into()]));
    assert!(cl.iter().any(|r| r[0] == "d0" && r[1] == "near0"));

    let od = dir.path().join("out");
    assert_eq!(
        run(&[
            "similar",
            "-k",
            "6",
            "--dedup",
            "--output-dir",
            s(&od),
            s(&vert),
            s(&zst)
        ])
        .unwrap(),
        0
    );
    let report = read_tsv(&od.join("simhash-dropped.tsv"));
    let dropped: Vec<&str> = report.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(dropped, ["near0", "copy3", "late0"]);
    assert_eq!(report[1][1], "d3");
    assert_eq!(report[1][2], "0");
    assert_eq!(report[2][3], s(&zst));
    // The kept documents are written exactly as read.
    let kept: Vec<(String, String)> = docs
        .iter()
        .filter(|(id, _)| !["near0", "copy3"].contains(&id.as_str()))
        .cloned()
        .collect();
    let expect = write_vertical(&dir.path().join("expect"), &kept);
    assert_eq!(fs::read_to_string(od.join("in.vert")).unwrap(), expect);
    let out2 = zstd::decode_all(&fs::read(od.join("in2.vert.zst")).unwrap()[..]).unwrap();
    let expect2 = write_vertical(&dir.path().join("expect2"), &vert2_docs[1..]);
    assert_eq!(String::from_utf8(out2).unwrap(), expect2);
}

#[test]
fn index_checks_new_batches_against_earlier_ones() {
    let dir = tempfile::tempdir().unwrap();
    let docs = corpus();
    let b1 = dir.path().join("b1.jsonl");
    let b2 = dir.path().join("b2.jsonl");
    let jsonl = |docs: &[(String, String)]| {
        docs.iter()
            .map(|(id, t)| serde_json::json!({"url": id, "body": t}).to_string() + "\n")
            .collect::<String>()
    };
    fs::write(&b1, jsonl(&docs[..12])).unwrap();
    fs::write(&b2, jsonl(&docs[12..])).unwrap();
    let ix = dir.path().join("ix");
    let common = [
        "--text-field",
        "body",
        "--id-field",
        "url",
        "-k",
        "6",
        "--index",
        s(&ix),
    ];
    let o1 = dir.path().join("p1.tsv");
    let mut a = vec!["similar", s(&b1), "-o", s(&o1)];
    a.extend(common);
    assert_eq!(run(&a).unwrap(), 0);
    assert!(read_tsv(&o1).is_empty());
    // Second batch: near0 and copy3 are near indexed documents.
    let od = dir.path().join("out");
    let mut a = vec!["similar", s(&b2), "--dedup", "--output-dir", s(&od)];
    a.extend(common);
    assert_eq!(run(&a).unwrap(), 0);
    let report = read_tsv(&od.join("simhash-dropped.tsv"));
    let pairs: Vec<(&str, &str)> = report
        .iter()
        .map(|r| (r[0].as_str(), r[1].as_str()))
        .collect();
    assert_eq!(pairs, [("near0", "d0"), ("copy3", "d3")]);
    assert_eq!(
        fs::read_to_string(od.join("b2.jsonl")).unwrap(),
        jsonl(&docs[14..])
    );
    // The index now holds 12 + 1 documents; running batch 2 again drops all of it.
    let od2 = dir.path().join("out2");
    let mut a = vec!["similar", s(&b2), "--dedup", "--output-dir", s(&od2)];
    a.extend(common);
    assert_eq!(run(&a).unwrap(), 0);
    assert_eq!(read_tsv(&od2.join("simhash-dropped.tsv")).len(), 3);
    assert_eq!(fs::read_to_string(od2.join("b2.jsonl")).unwrap(), "");
    // Another tokenizer is refused (fatal), naming both settings.
    let err = run(&[
        "similar",
        s(&b2),
        "--text-field",
        "body",
        "--index",
        s(&ix),
        "--tokenizer",
        "chars:4",
    ])
    .unwrap_err();
    assert!(err.to_string().contains("tokenizer=chars:4"), "{err}");
}

#[test]
fn bad_input_is_reported_and_the_rest_processed() {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("bad.jsonl");
    fs::write(
        &j,
        b"{\"id\":\"a\",\"text\":\"hello world again\"}\n{oops\n{\"id\":\"b\"}\n{\"id\":\"c\",\"text\":\"  ...  \"}\n{\"text\":\"x\"}\n{\"id\":\"d\",\"text\":\"fine text here\"}\n",
    )
    .unwrap();
    // (A missing input is a usage error of the command line, status 2: the
    // conventions test covers it.)
    let out = dir.path().join("o.csv");
    let code = run(&[
        "simhash",
        "--id-field",
        "id",
        "--format",
        "csv",
        s(&j),
        "-o",
        s(&out),
    ])
    .unwrap();
    assert_eq!(code, 1);
    let csv = fs::read_to_string(&out).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "id,simhash,signed,part1,part2,part3,part4");
    // `{"text":"x"}` has no id: named FILE:LINE, as by every reader of the project.
    assert_eq!(lines.len(), 4, "{csv}");
    assert!(lines[1].starts_with("a,") && lines[3].starts_with("d,"));
    assert!(lines[2].starts_with(&format!("{}:5,", s(&j))), "{csv}");
    // JSONL output.
    let out = dir.path().join("o.jsonl");
    assert_eq!(
        run(&[
            "simhash",
            "--id-field",
            "id",
            "--format",
            "jsonl",
            s(&j),
            "-o",
            s(&out)
        ])
        .unwrap(),
        1
    );
    let first: serde_json::Value =
        serde_json::from_str(fs::read_to_string(&out).unwrap().lines().next().unwrap()).unwrap();
    let h = fp(Settings::default(), "hello world again");
    assert_eq!(first["simhash"], format!("{h:016x}"));
    assert_eq!(first["signed"], h as i64);
    assert_eq!(first["parts"][0], (h >> 48) as u16);
    // Mixed settings among fingerprint inputs are fatal.
    let f1 = dir.path().join("f1.tsv");
    let f2 = dir.path().join("f2.tsv");
    fs::write(
        &f1,
        "# webdedup-simhash v1 tokenizer=unicode shingle=3 weights=count hash=xxh3-64\nx\t0000000000000001\n",
    )
    .unwrap();
    fs::write(
        &f2,
        "# webdedup-simhash v1 tokenizer=unicode shingle=1 weights=count hash=xxh3-64\ny\t0000000000000001\n",
    )
    .unwrap();
    assert!(run(&["similar", s(&f1), s(&f2)]).is_err());
    // `simhash` does not take fingerprint files as documents.
    let o = dir.path().join("refp.tsv");
    assert_eq!(run(&["simhash", s(&f1), "-o", s(&o)]).unwrap(), 1);
    assert_eq!(read_tsv(&o).len(), 0);
    // Options that make no sense together are refused by the parser.
    assert!(run(&["similar", "--dedup", "--output-dir", "x", "-o", "y", s(&f1)]).is_err());
    assert!(run(&["similar", "--report", "r", s(&f1)]).is_err());
    // Plain lines: one document per line, ids FILE:LINE.
    let t = dir.path().join("t.txt");
    fs::write(&t, "alpha beta gamma delta\nalpha beta gamma delta\n\n").unwrap();
    let out = dir.path().join("p.tsv");
    assert_eq!(
        run(&["similar", s(&t), "-o", s(&out)]).unwrap(),
        1,
        "the empty line is reported"
    );
    let rows = read_tsv(&out);
    assert_eq!(
        rows,
        vec![vec![
            format!("{}:1", s(&t)),
            format!("{}:2", s(&t)),
            "0".into()
        ]]
    );
}

#[test]
fn japanese_and_chinese_fixture() {
    // Small CJK fixture (sentences written for this test).
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../simhash/tests/data");
    let out = tempfile::tempdir().unwrap();
    let o = out.path().join("cjk.tsv");
    assert_eq!(
        run(&[
            "simhash",
            "--tokenizer",
            "chars:2",
            s(&dir.join("cjk.jsonl")),
            "--id-field",
            "id",
            "-o",
            s(&o)
        ])
        .unwrap(),
        0
    );
    let rows = read_tsv(&o);
    let get =
        |id: &str| u64::from_str_radix(&rows.iter().find(|r| r[0] == id).unwrap()[1], 16).unwrap();
    assert!(hamming(get("ja1"), get("ja1-edit")) < hamming(get("ja1"), get("ja2")));
    assert!(hamming(get("zh1"), get("zh1-edit")) < hamming(get("zh1"), get("zh2")));
    // Same with charabia for Chinese; fingerprints are stable between runs.
    let o2 = out.path().join("cjk2.tsv");
    for _ in 0..2 {
        assert_eq!(
            run(&[
                "simhash",
                "--tokenizer",
                "charabia",
                "--shingle",
                "2",
                s(&dir.join("cjk.jsonl")),
                "--id-field",
                "id",
                "-o",
                s(&o2)
            ])
            .unwrap(),
            0
        );
    }
    let rows2 = read_tsv(&o2);
    let zh1 = fp(
        Settings {
            tokenizer: Tokenizer::Charabia,
            shingle: 2,
            weights: Weights::Distinct,
        },
        serde_json::from_str::<serde_json::Value>(
            fs::read_to_string(dir.join("cjk.jsonl"))
                .unwrap()
                .lines()
                .find(|l| l.contains("\"zh1\""))
                .unwrap(),
        )
        .unwrap()["text"]
            .as_str()
            .unwrap(),
    );
    assert_eq!(
        rows2.iter().find(|r| r[0] == "zh1").unwrap()[1],
        format!("{zh1:016x}")
    );
}

/// Fingerprints are only comparable under the same settings: a file whose header names
/// settings this version does not compute (another hash, another format version) or
/// other settings than the rest of the run is refused (fatal, exit 2), and the message
/// names the file and both settings. Neither is read as documents or compared.
#[test]
fn fingerprint_files_of_unknown_or_other_settings_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ours = "tokenizer=unicode shingle=5 weights=distinct hash=xxh3-64";
    let rows = "a\t564ffaa9bed18ad2\nb\t8b80184890bea02d\n";
    let write = |name: &str, header: &str| {
        let p = dir.path().join(name);
        fs::write(&p, format!("{header}\n{rows}")).unwrap();
        p
    };
    let good = write("good.tsv", &format!("# webdedup-simhash v1 {ours}"));
    let md5_settings = "tokenizer=unicode shingle=5 weights=distinct hash=md5";
    let md5 = write("md5.tsv", &format!("# webdedup-simhash v1 {md5_settings}"));
    let v2 = write("v2.tsv", &format!("# webdedup-simhash v2 {ours}"));
    let other = write(
        "other.tsv",
        "# webdedup-simhash v1 tokenizer=unicode shingle=3 weights=distinct hash=xxh3-64",
    );
    let out = dir.path().join("pairs.tsv");
    let refused = |files: &[&Path]| -> String {
        let mut a = vec!["similar"];
        a.extend(files.iter().map(|p| s(p)));
        a.extend(["-o", s(&out)]);
        match run(&a) {
            Ok(code) => panic!("{files:?} accepted (exit {code})"),
            Err(e) => format!("{e:#}"),
        }
    };
    // An unknown hash, beside a good file and alone (then the run's own settings are
    // the command line's).
    for files in [vec![&good, &md5], vec![&md5, &good], vec![&md5]] {
        let e = refused(&files.iter().map(|p| p.as_path()).collect::<Vec<_>>());
        assert!(e.contains("md5.tsv:1"), "{e}");
        assert!(e.contains(md5_settings) && e.contains(ours), "{e}");
    }
    // Another format version: not silently read as one document per line.
    for files in [vec![&v2], vec![&good, &v2]] {
        let e = refused(&files.iter().map(|p| p.as_path()).collect::<Vec<_>>());
        assert!(e.contains("v2.tsv:1") && e.contains("v2"), "{e}");
        assert!(e.contains(ours), "{e}");
    }
    // Known but different settings.
    let e = refused(&[&good, &other]);
    assert!(e.contains("other.tsv") && e.contains("shingle=3") && e.contains(ours));
    // Two headers in one file (files concatenated): the second one counts too.
    let cat = dir.path().join("cat.tsv");
    fs::write(
        &cat,
        [fs::read(&good).unwrap(), fs::read(&other).unwrap()].concat(),
    )
    .unwrap();
    let e = refused(&[&cat]);
    assert!(e.contains("cat.tsv:4") && e.contains("shingle=3"), "{e}");
    // The same settings twice are fine.
    let same = write("same.tsv", &format!("# webdedup-simhash v1 {ours}"));
    assert_eq!(
        run(&["similar", s(&good), s(&same), "-o", s(&out)]).unwrap(),
        0
    );
    assert_eq!(read_tsv(&out).len(), 2, "a and b of both files pair up");
}

#[test]
fn directories_are_searched_and_fifos_in_them_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    fs::create_dir_all(input.join("sub")).unwrap();
    fs::write(input.join("b.txt"), "second file line\n").unwrap();
    fs::write(input.join("sub/a.txt"), "first file line\n").unwrap();
    let fifo = input.join("pipe.txt");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let out = dir.path().join("fps.tsv");
    // Never waits on the FIFO: it is reported and skipped (exit 1).
    let code = run(&[
        "simhash",
        "--input-format",
        "lines",
        s(&input),
        "-o",
        s(&out),
    ])
    .unwrap();
    assert_eq!(code, 1);
    let ids: Vec<String> = read_tsv(&out)
        .iter()
        .map(|r| r[0].rsplit('/').next().unwrap().to_string())
        .collect();
    // Sorted relative paths: b.txt, then sub/a.txt.
    assert_eq!(ids, ["b.txt:1", "a.txt:1"]);
}

/// `--text-field` and `--id-field` take dotted paths into nested objects on JSON
/// Lines, as `webdedup dedup` and simhash's own Parquet reader do: a field named
/// `a.b` reaches `{"a": {"b": ...}}` (it was looked up as one flat key, so every
/// record was reported as missing the field and none fingerprinted).
#[test]
fn dotted_fields_reach_into_nested_json_objects() {
    let dir = tempfile::tempdir().unwrap();
    let docs = corpus();
    let nested = dir.path().join("nested.jsonl");
    let flat = dir.path().join("flat.jsonl");
    let mut n = String::new();
    let mut f = String::new();
    for (id, text) in &docs {
        n += &serde_json::json!({"meta": {"key": id}, "doc": {"body": text}}).to_string();
        n.push('\n');
        f += &serde_json::json!({"id": id, "text": text}).to_string();
        f.push('\n');
    }
    fs::write(&nested, n).unwrap();
    fs::write(&flat, f).unwrap();
    let (out_nested, out_flat) = (dir.path().join("n.tsv"), dir.path().join("f.tsv"));
    let args = [
        "simhash",
        s(&nested),
        "-o",
        s(&out_nested),
        "--text-field",
        "doc.body",
        "--id-field",
        "meta.key",
    ];
    assert_eq!(run(&args).unwrap(), 0, "nested fields reported as missing");
    assert_eq!(run(&["simhash", s(&flat), "-o", s(&out_flat)]).unwrap(), 0);
    let nested_fps = read_tsv(&out_nested);
    assert_eq!(nested_fps.len(), docs.len());
    assert_eq!(nested_fps, read_tsv(&out_flat));
}
