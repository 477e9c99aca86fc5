//! How well a run's struck characters agree with the exact keep-first answer:
//! every character in a span of at least L bytes that occurred earlier in the
//! corpus (each position's longest previous factor, from the suffix array).
//! For the streaming substring mode's agreement study (docs/substr.md).
//!
//! ```text
//! keep_first_agreement [--length L] [--attribute NAME]... --marks FILE... -- INPUT...
//! ```
//!
//! The marks are dolma attributes files, one JSON line a document:
//! `{"id": ID, "attributes": {NAME: [[START, END, SCORE], ...]}}`, offsets in
//! characters of the document's text as `webdedup_formats::texts` reads it; a
//! document is found by its id (the id field, else `FILE:LINE`), documents
//! without a line have nothing struck. Without `--attribute`, every attribute
//! whose value is a list of spans counts. Prints the characters struck by the
//! run and by the exact answer, both, and precision and recall.

use std::collections::HashMap;
use std::io::BufRead;
use std::ops::Range;
use std::path::PathBuf;
use webdedup_formats::problems::Problems;
use webdedup_formats::texts::{read_file_texts, Text};
use webdedup_substr::run::{find, input_files, Reading};
use webdedup_substr::{Keep, Settings};

fn fail(why: &str) -> ! {
    eprintln!("keep_first_agreement: error: {why}");
    std::process::exit(2)
}

/// Character spans of each marked document, by id.
fn read_marks(files: &[PathBuf], names: &[String]) -> HashMap<String, Vec<Range<usize>>> {
    let mut marks = HashMap::new();
    for f in files {
        let file = std::fs::File::open(f)
            .unwrap_or_else(|e| fail(&format!("cannot open {}: {e}", f.display())));
        for (n, line) in std::io::BufReader::new(file).lines().enumerate() {
            let line = line.unwrap_or_else(|e| fail(&format!("{}: {e}", f.display())));
            let v: serde_json::Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| fail(&format!("{}:{}: {e}", f.display(), n + 1)));
            let id = match &v["id"] {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let mut spans = Vec::new();
            if let Some(attrs) = v["attributes"].as_object() {
                for (name, list) in attrs {
                    if !names.is_empty() && !names.contains(name) {
                        continue;
                    }
                    for s in list.as_array().into_iter().flatten() {
                        let (Some(a), Some(b)) = (s[0].as_u64(), s[1].as_u64()) else {
                            continue;
                        };
                        spans.push(a as usize..b as usize);
                    }
                }
            }
            marks.insert(id, spans);
        }
    }
    marks
}

fn main() {
    let mut settings = Settings {
        keep: Keep::First,
        ..Settings::default()
    };
    let (mut names, mut marks, mut inputs) = (Vec::new(), Vec::new(), Vec::new());
    let mut args = std::env::args().skip(1);
    let mut in_inputs = false;
    while let Some(a) = args.next() {
        match a.as_str() {
            _ if in_inputs => inputs.push(PathBuf::from(a)),
            "--" => in_inputs = true,
            "--length" => {
                settings.length = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or_else(|| fail("--length takes a number"))
            }
            "--attribute" => names.extend(args.next()),
            "--marks" => marks.extend(args.next().map(PathBuf::from)),
            _ => fail(&format!("unknown argument {a} (inputs go after --)")),
        }
    }
    let files = input_files(&inputs).unwrap_or_else(|e| fail(&e.to_string()));
    let reading = Reading::default();
    let exact = find(&files, &reading, &settings, false, &Problems::new(false))
        .unwrap_or_else(|e| fail(&e.to_string()));
    let marks = read_marks(&marks, &names);
    let (mut run, mut truth, mut both) = (0u64, 0u64, 0u64);
    let mut docs = exact.docs.iter();
    let quiet = Problems::quiet();
    for f in &files {
        read_file_texts(f, &reading.read, reading.max_line_bytes, &quiet, &mut |t| {
            let Text::Doc { id, text, .. } = t else {
                return;
            };
            let Some(d) = docs.next() else { return };
            // Per character: struck by the exact answer (byte spans), by the run
            // (character spans).
            let mut exact_bytes = vec![false; text.len()];
            for s in &d.spans {
                exact_bytes[s.clone()].iter_mut().for_each(|x| *x = true);
            }
            let chars = text.chars().count();
            let mut marked = vec![false; chars];
            for s in marks.get(&id).into_iter().flatten() {
                let r = s.start.min(chars)..s.end.min(chars);
                marked[r].iter_mut().for_each(|x| *x = true);
            }
            for ((b, _), m) in text.char_indices().zip(marked) {
                let e = exact_bytes[b];
                run += m as u64;
                truth += e as u64;
                both += (m && e) as u64;
            }
        });
    }
    let ratio = |a: u64, b: u64| if b == 0 { 1.0 } else { a as f64 / b as f64 };
    println!(
        "length {}: run struck {run} characters, exact keep-first {truth}, both {both}; precision {:.4} recall {:.4}",
        settings.length,
        ratio(both, run),
        ratio(both, truth)
    );
}
