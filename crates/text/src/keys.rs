//! Key kinds and the hash that turns normalized text into a key.

use xxhash_rust::xxh3::{xxh3_64_with_seed, Xxh3};

/// What a key stands for. Every kind hashes with a seed of its own: the kinds live in
/// one store (one hash space, one set of blocks) but form disjoint key spaces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeyKind {
    /// A paragraph's normalized text. Seed 0, so this is plain xxh3-64.
    Paragraph,
    /// A document: its normalized paragraph texts joined by `\n`.
    Document,
    /// `url TAB title`, raw (unescaped attribute values, not normalized).
    UrlTitle,
    /// A word n-gram (near-duplicate mode).
    NGram,
    /// URL + payload digest of a web-archive capture.
    UrlDigest,
    /// A wikilinks row: its columns 2, 3, 5 and 6, normalized, joined by tabs.
    WikilinksRow,
    /// A wikilinks row's column 2 (the link target), normalized.
    WikilinksTarget,
    /// A MinHash LSH band: the band's index and its signature values
    /// (`webdedup-minhash`). A store holding them holds nothing else.
    MinHashBand,
    /// A window of K tokens (substring mode): the rolling hash of its token
    /// hashes, mixed with this kind's seed.
    SubstrWindow,
}

impl KeyKind {
    /// The xxh3 seed of this kind. These values are part of the on-disk format of
    /// every store: never change them.
    pub const fn seed(self) -> u64 {
        match self {
            KeyKind::Paragraph => 0,
            KeyKind::Document => 0x646f_6375_6d65_6e74, // "document"
            KeyKind::UrlTitle => 0x7572_6c2b_7469_746c, // "url+titl"
            KeyKind::NGram => 0x6e2d_6772_616d_7321,    // "n-grams!"
            KeyKind::UrlDigest => 0x7572_6c2b_6467_7374, // "url+dgst"
            KeyKind::WikilinksRow => 0x776b_6c6e_6b72_6f77, // "wklnkrow"
            KeyKind::WikilinksTarget => 0x776b_6c6e_6b74_6774, // "wklnktgt"
            KeyKind::MinHashBand => 0x6d68_2d62_616e_6473, // "mh-bands"
            KeyKind::SubstrWindow => 0x7375_6273_7472_6e67, // "substrng"
        }
    }
}

/// The key of `bytes` (already normalized) as `kind`.
#[inline]
pub fn key(kind: KeyKind, bytes: &[u8]) -> u64 {
    xxh3_64_with_seed(bytes, kind.seed())
}

/// A key built from several pieces, equal to [`key`] over their concatenation.
pub struct StreamKey {
    hasher: Xxh3,
}

impl StreamKey {
    pub fn new(kind: KeyKind) -> Self {
        StreamKey {
            hasher: Xxh3::with_seed(kind.seed()),
        }
    }

    #[inline]
    pub fn update(&mut self, bytes: &[u8]) {
        self.hasher.update(bytes);
    }

    pub fn finish(&self) -> u64 {
        self.hasher.digest()
    }

    /// Starts over with the same kind, keeping the allocation.
    pub fn reset(&mut self) {
        self.hasher.reset();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paragraph_key_is_plain_xxh3() {
        assert_eq!(
            key(KeyKind::Paragraph, b"hello world"),
            xxhash_rust::xxh3::xxh3_64(b"hello world")
        );
    }

    #[test]
    fn kinds_do_not_share_keys() {
        let kinds = [
            KeyKind::Paragraph,
            KeyKind::Document,
            KeyKind::UrlTitle,
            KeyKind::NGram,
            KeyKind::UrlDigest,
            KeyKind::WikilinksRow,
            KeyKind::WikilinksTarget,
            KeyKind::MinHashBand,
            KeyKind::SubstrWindow,
        ];
        let keys: std::collections::HashSet<u64> =
            kinds.iter().map(|k| key(*k, b"same text")).collect();
        assert_eq!(keys.len(), kinds.len());
    }

    #[test]
    fn stream_key_equals_one_shot() {
        let mut s = StreamKey::new(KeyKind::Document);
        s.update(b"first paragraph");
        s.update(b"\n");
        s.update(b"second");
        assert_eq!(
            s.finish(),
            key(KeyKind::Document, b"first paragraph\nsecond")
        );
        s.reset();
        s.update(b"x");
        assert_eq!(s.finish(), key(KeyKind::Document, b"x"));
    }
}
