use std::collections::HashMap;
use std::path::PathBuf;
use webdedup_simhash::input::{read_items, Item, Problems, ReadOptions};
use webdedup_simhash::tokenize::lowercase_into;
fn main() {
    let problems = Problems::new(true);
    let mut bad_chars: HashMap<char, usize> = HashMap::new();
    let (mut chunks, mut nonascii, mut long, mut mixed, mut mixed_bytes) =
        (0usize, 0usize, 0usize, 0usize, 0usize);
    for f in std::env::args().skip(1) {
        read_items(
            &PathBuf::from(f),
            &ReadOptions::default(),
            &problems,
            |it| {
                if let Item::Doc { text, .. } = it {
                    let mut buf = String::new();
                    lowercase_into(text, &mut buf);
                    for ch in buf.split(|c: char| c.is_ascii_whitespace()) {
                        chunks += 1;
                        if !ch.is_ascii() {
                            nonascii += 1;
                            if ch.len() > 64 {
                                long += 1;
                            }
                        } else if ch.bytes().any(|b| b.is_ascii_alphanumeric())
                            && !ch.bytes().all(|b| b.is_ascii_alphanumeric())
                        {
                            mixed += 1;
                            mixed_bytes += ch.len();
                            if mixed % 20000 == 0 {
                                eprintln!("{ch}");
                            }
                        }
                        for c in ch.chars() {
                            if !c.is_ascii() {
                                *bad_chars.entry(c).or_default() += 1;
                            }
                        }
                    }
                }
            },
        );
    }
    let mut v: Vec<_> = bad_chars.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1));
    println!(
        "chunks={chunks} nonascii={nonascii} long={long} mixed={mixed} mixed_bytes={mixed_bytes}"
    );
    for (c, n) in v.iter().take(80) {
        print!("{:?}U+{:04X}:{} ", c, *c as u32, n);
    }
    println!();
}
