//! MinHash signatures and LSH band keys: near-duplicate documents by the Jaccard
//! similarity of their shingle sets, as 64-bit keys for webdedup's stores.
//!
//! A document's text is normalized and cut into shingles ([`shingle`]: word
//! `N`-grams, or character `N`-grams for a document in a script without spaces,
//! chosen per document by default); the shingle hashes
//! go into a one-permutation sketch densified by rehashing rounds ([`sketch`]),
//! which gives `hashes` 32-bit values, each equal between two documents with
//! probability their Jaccard similarity J. The values are cut into `bands` bands of `rows`
//! values; each band is one 64-bit key of kind `KeyKind::MinHashBand` ([`band`]). Two
//! documents that share a band key are near-duplicate candidates (probability
//! `1 - (1 - J^rows)^bands`); [`estimate_jaccard`] of their signatures verifies them.
//!
//! Everything that decides a value is pinned (seeds, hash, bin and probe formulas),
//! so signatures and keys are the same on every machine and in every version that
//! describes itself with the same [`Params::describe`]; the test vectors in
//! `tests/vectors.rs` (and in docs/dev/design.md) guard that.
//!
//! ```
//! use webdedup_minhash::{MinHasher, Params, estimate_jaccard};
//! let mut m = MinHasher::new(Params::default()).unwrap();
//! let a = m.signature(b"the quick brown fox jumps over the lazy dog again and again").unwrap().to_vec();
//! let b = m.signature(b"The quick brown fox jumps over the lazy dog again and AGAIN!").unwrap().to_vec();
//! assert_eq!(a, b); // the same text after normalization
//! let mut keys = Vec::new();
//! m.params().banding().keys(&a, &mut keys);
//! assert_eq!(keys.len(), Params::default().bands);
//! assert_eq!(estimate_jaccard(&a, &b), 1.0);
//! ```

pub mod band;
pub mod reference;
pub mod shingle;
pub mod sketch;
pub mod verify;

pub use band::{estimate_jaccard, estimate_jaccard_low8, Banding, MAX_ROWS};
pub use shingle::{written_without_spaces, Shingler, Shingling, MAX_SHINGLE, SHINGLE_SEED};
pub use sketch::{mix64, Sketch};
pub use verify::{Verifier, VERIFY_SEED};
pub use webdedup_text::Normalization;

/// The largest signature.
pub const MAX_HASHES: usize = 4096;

/// Default shingles: 5-grams suited to each document's script: word 5-grams (the
/// ground truth of the quality study, and what the LLM-data pipelines use), or
/// character 5-grams for a document written without spaces (the script study,
/// docs/minhash.md).
pub const DEFAULT_SHINGLING: Shingling = Shingling::Auto(5);
/// Default normalization of the text before shingling: `lower` (lowercase,
/// punctuation and symbols dropped, digits kept). `loose`, the default before,
/// folds digits to `0`, which made pages that differ only in their numbers
/// (version tables, release notes) copies and capped precision at 0.996 in the
/// quality study (docs/minhash.md).
pub const DEFAULT_NORM: Normalization = Normalization::Lower;
/// Default signature length, bands and rows: chosen by the quality study
/// (BENCHMARKS.md, "MinHash").
pub const DEFAULT_HASHES: usize = 112;
pub const DEFAULT_BANDS: usize = 14;
pub const DEFAULT_ROWS: usize = 8;
/// Default verification threshold of a band match (estimated Jaccard with the
/// named original), chosen by the same study.
pub const DEFAULT_VERIFY: f64 = 0.8;
/// Default size of the verification sketch ([`verify`]): `--verify` estimates the
/// Jaccard similarity from 256 values of its own (1 byte each in the side store)
/// rather than from the 112 of the band signature, whose estimate missed
/// near-copies just above 0.8 (the script study, docs/minhash.md; 512 values
/// scored a little higher there but cost 29% more CPU than 112, 256 cost 14%).
pub const DEFAULT_VERIFY_HASHES: usize = 256;

/// Everything that decides signatures and band keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Params {
    pub shingling: Shingling,
    /// The text's normalization before shingling: `lower` or `loose`.
    pub norm: Normalization,
    /// Signature values (`k`).
    pub hashes: usize,
    pub bands: usize,
    pub rows: usize,
    /// Values of the verification sketch ([`verify`]); 0: `--verify` estimates
    /// from the low bytes of the band signature itself (the default before).
    pub verify_hashes: usize,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            shingling: DEFAULT_SHINGLING,
            norm: DEFAULT_NORM,
            hashes: DEFAULT_HASHES,
            bands: DEFAULT_BANDS,
            rows: DEFAULT_ROWS,
            verify_hashes: DEFAULT_VERIFY_HASHES,
        }
    }
}

impl Params {
    /// Checks the ranges: `1 <= hashes <= MAX_HASHES`, `1 <= rows <= MAX_ROWS`,
    /// `bands >= 1` and `bands * rows <= hashes` (the bands use the first values;
    /// the others only sharpen [`estimate_jaccard`]).
    pub fn validate(&self) -> Result<(), String> {
        if self.norm == Normalization::None {
            return Err(
                "MinHash shingles are normalized 'lower' or 'loose', not 'none'".to_string(),
            );
        }
        if !(1..=MAX_HASHES).contains(&self.hashes) {
            return Err(format!(
                "hashes must be between 1 and {MAX_HASHES} (got {})",
                self.hashes
            ));
        }
        if !(1..=MAX_ROWS).contains(&self.rows) {
            return Err(format!(
                "rows must be between 1 and {MAX_ROWS} (got {})",
                self.rows
            ));
        }
        if self.bands == 0 || self.bands.saturating_mul(self.rows) > self.hashes {
            return Err(format!(
                "bands x rows must be at least 1 and at most hashes ({} x {} with {} hashes)",
                self.bands, self.rows, self.hashes
            ));
        }
        if self.verify_hashes > MAX_HASHES {
            return Err(format!(
                "verify hashes must be at most {MAX_HASHES} (got {}; 0: the signature's own)",
                self.verify_hashes
            ));
        }
        Ok(())
    }

    /// Bytes `--verify` keeps per kept document: one per value of the verification
    /// sketch, or of the signature when there is none.
    pub fn verification_len(&self) -> usize {
        match self.verify_hashes {
            0 => self.hashes,
            n => n,
        }
    }

    pub fn banding(&self) -> Banding {
        Banding {
            bands: self.bands,
            rows: self.rows,
        }
    }

    /// `minhash=fss-v1 shingles=auto:5 hashes=112 bands=14 rows=8 norm=lower
    /// verify-hashes=256`: the settings as one line (store settings, headers);
    /// [`parse`](Self::parse) reads it back. `fss-v1` names the pinned algorithm
    /// (see `sketch`). `verify-hashes` is left out when 0, so the settings of
    /// stores made before the verification sketch read the same.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "minhash=fss-v1 shingles={} hashes={} bands={} rows={} norm={}",
            self.shingling, self.hashes, self.bands, self.rows, self.norm
        );
        if self.verify_hashes > 0 {
            s.push_str(&format!(" verify-hashes={}", self.verify_hashes));
        }
        s
    }

    /// The key kind recorded in a store's settings: a store of band keys refuses
    /// other settings (and paragraph stores) by this string.
    pub fn key_kind(&self) -> String {
        format!("minhash-bands-v1 ({})", self.describe())
    }

    /// Reads what [`describe`](Self::describe) writes (other `key=value` words are
    /// ignored, missing ones are an error except `verify-hashes`, 0 when missing;
    /// another algorithm is refused).
    pub fn parse(s: &str) -> Result<Params, String> {
        let (mut algo, mut sh, mut hashes, mut bands, mut rows, mut norm) =
            (None, None, None, None, None, None);
        let mut verify_hashes = 0;
        let num = |v: &str, what: &str| {
            v.parse::<usize>()
                .map_err(|_| format!("bad {what} '{v}' in '{s}'"))
        };
        for w in s.split_whitespace() {
            if let Some((k, v)) = w.split_once('=') {
                match k {
                    "minhash" => algo = Some(v),
                    "shingles" => sh = Some(v.parse::<Shingling>()?),
                    "hashes" => hashes = Some(num(v, "hashes")?),
                    "bands" => bands = Some(num(v, "bands")?),
                    "rows" => rows = Some(num(v, "rows")?),
                    "norm" => norm = Some(v.parse::<Normalization>()?),
                    "verify-hashes" => verify_hashes = num(v, "verify-hashes")?,
                    _ => {}
                }
            }
        }
        match algo {
            Some("fss-v1") => {}
            Some(a) => return Err(format!("unknown MinHash algorithm '{a}' in '{s}'")),
            None => return Err(format!("incomplete MinHash settings '{s}'")),
        }
        let (Some(shingling), Some(norm), Some(hashes), Some(bands), Some(rows)) =
            (sh, norm, hashes, bands, rows)
        else {
            return Err(format!("incomplete MinHash settings '{s}'"));
        };
        let p = Params {
            shingling,
            norm,
            hashes,
            bands,
            rows,
            verify_hashes,
        };
        p.validate()?;
        Ok(p)
    }
}

/// Texts to signatures, reusing its buffers. One per thread.
#[derive(Debug)]
pub struct MinHasher {
    params: Params,
    shingler: Shingler,
    sketch: Sketch,
    signature: Vec<u32>,
    /// The verification sketch (`verify_hashes` > 0), when verification bytes are
    /// wanted ([`set_verifying`](Self::set_verifying)).
    verifier: Option<Verifier>,
    verifying: bool,
    verification: Vec<u8>,
}

impl MinHasher {
    /// Fails with a message when `params` are out of range.
    pub fn new(params: Params) -> Result<MinHasher, String> {
        params.validate()?;
        Ok(MinHasher {
            params,
            shingler: Shingler::new(params.shingling, params.norm),
            sketch: Sketch::new(params.hashes),
            signature: Vec::with_capacity(params.hashes),
            verifier: (params.verify_hashes > 0).then(|| Verifier::new(params.verify_hashes)),
            verifying: true,
            verification: Vec::with_capacity(params.verification_len()),
        })
    }

    pub fn params(&self) -> &Params {
        &self.params
    }

    /// Whether [`verification`](Self::verification) bytes are made (default: yes).
    /// A run without `--verify` turns them off: the verification sketch costs a
    /// hash per shingle.
    pub fn set_verifying(&mut self, on: bool) {
        self.verifying = on;
    }

    /// The verification bytes of the last signature (`--verify` compares them with
    /// [`estimate_jaccard_low8`]): the low byte of each value of the verification
    /// sketch, or of the signature when `verify_hashes` is 0; empty when the last
    /// text had no shingle or verification is off.
    pub fn verification(&self) -> &[u8] {
        &self.verification
    }

    /// The signature of `text` (words separated by whitespace; invalid UTF-8 is
    /// read lossily), or None when it has no shingle (nothing left after
    /// normalization).
    pub fn signature(&mut self, text: &[u8]) -> Option<&[u32]> {
        {
            let (shingler, push) = self.start();
            shingler.for_each(text, push);
        }
        self.finish()
    }

    /// As [`signature`](Self::signature), for text already normalized as the
    /// settings say (`lower` or `loose`).
    pub fn signature_normalized(&mut self, normalized: &[u8]) -> Option<&[u32]> {
        {
            let (shingler, push) = self.start();
            shingler.for_each_normalized(normalized, push);
        }
        self.finish()
    }

    /// As [`signature_normalized`](Self::signature_normalized) for text exactly as
    /// the settings' normalization writes it (see [`Shingler::for_each_loose`]):
    /// the same signature, one pass less.
    pub fn signature_loose(&mut self, loose: &[u8]) -> Option<&[u32]> {
        {
            let (shingler, push) = self.start();
            shingler.for_each_loose(loose, push);
        }
        self.finish()
    }

    /// The signature and band keys of `text` (keys appended to `keys`).
    pub fn signature_and_keys(&mut self, text: &[u8], keys: &mut Vec<u64>) -> Option<&[u32]> {
        let banding = self.params.banding();
        let sig = self.signature(text)?;
        banding.keys(sig, keys);
        Some(sig)
    }

    /// Clears the sketches; the shingler, and what takes each shingle hash.
    fn start(&mut self) -> (&mut Shingler, impl FnMut(u64) + '_) {
        self.sketch.clear();
        let sketch = &mut self.sketch;
        let mut verifier = self.verifier.as_mut().filter(|_| self.verifying);
        if let Some(v) = verifier.as_mut() {
            v.clear();
        }
        let push = move |x| {
            sketch.push(x);
            if let Some(v) = verifier.as_mut() {
                v.push(x);
            }
        };
        (&mut self.shingler, push)
    }

    fn finish(&mut self) -> Option<&[u32]> {
        let some = self.sketch.finish(&mut self.signature);
        self.verification.clear();
        if some && self.verifying {
            match self.verifier.as_mut() {
                Some(v) => v.finish(&mut self.verification),
                None => self
                    .verification
                    .extend(self.signature.iter().map(|&v| v as u8)),
            }
        }
        some.then_some(&self.signature[..])
    }
}
