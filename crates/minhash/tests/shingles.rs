//! Shingles against their definitions: word n-grams of the `loose` normalization
//! (written the obvious way), and character n-grams equal to SimHash's `chars:N`
//! tokens (the same definition, reused).
use proptest::prelude::*;
use webdedup_minhash::{Shingler, Shingling};
use webdedup_simhash::tokenize::{Fingerprinter, Settings, Tokenizer, Weights};
use webdedup_text::normalize::{normalize, Normalization};

fn word_shingles_by_definition(text: &str, n: usize) -> Vec<String> {
    let norm = normalize(text, Normalization::Loose);
    let words: Vec<&str> = norm.split(' ').filter(|w| !w.is_empty()).collect();
    if words.is_empty() {
        vec![]
    } else if words.len() < n {
        vec![words.join(" ")]
    } else {
        words.windows(n).map(|w| w.join(" ")).collect()
    }
}

proptest! {
    #[test]
    fn word_shingles_are_windows_of_normalized_words(text in "([a-zA-Z0-9 ,.!\n\t]|\\PC){0,80}", n in 1usize..8) {
        let mut s = Shingler::new(Shingling::Words(n), Normalization::Loose);
        prop_assert_eq!(s.shingles(text.as_bytes()), word_shingles_by_definition(&text, n));
        let mut count = 0;
        prop_assert_eq!(s.for_each(text.as_bytes(), |_| count += 1), count);
    }

    /// `signature_loose` over paragraphs normalized one by one and joined by one
    /// space (what `webdedup minhash` does) equals the signature of the raw text.
    #[test]
    fn loose_signature_of_joined_paragraphs_equals_the_raw_texts(
        paras in proptest::collection::vec("([a-zA-Z0-9 ,.!\t]|\\PC){0,40}", 0..5),
        chars in any::<bool>(),
        lower in any::<bool>(),
    ) {
        let norm = if lower { Normalization::Lower } else { Normalization::Loose };
        let params = webdedup_minhash::Params {
            shingling: if chars { Shingling::Chars(3) } else { Shingling::Words(3) },
            norm,
            hashes: 16,
            bands: 4,
            rows: 4,
            verify_hashes: 0,
        };
        let mut joined = String::new();
        for p in &paras {
            let n = normalize(p, norm);
            if !n.is_empty() {
                if !joined.is_empty() {
                    joined.push(' ');
                }
                joined.push_str(&n);
            }
        }
        let mut m = webdedup_minhash::MinHasher::new(params).unwrap();
        let raw = m.signature(paras.join("\n").as_bytes()).map(|s| s.to_vec());
        let loose = m.signature_loose(joined.as_bytes()).map(|s| s.to_vec());
        prop_assert_eq!(raw, loose);
    }

    #[test]
    fn char_shingles_are_simhash_chars_tokens(text in "([a-z .]|\\PC){0,60}", n in 1usize..7) {
        let mut s = Shingler::new(Shingling::Chars(n), Normalization::Loose);
        let mut f = Fingerprinter::new(Settings::new(Tokenizer::Chars(n), 1, Weights::Distinct));
        prop_assert_eq!(s.shingles(text.as_bytes()), f.tokens(&text));
    }
}
