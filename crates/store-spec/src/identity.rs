//! A key set's identity: the settings that give its keys their meaning (hash, key
//! kind, normalization, n-gram size, MinHash parameters, block count), built by
//! one function, [`store_identity`], from a plain description of the keys.
//!
//! Every store records this identity and compares it the same way
//! ([`StoreMeta::mismatch`]): a store directory's snapshot and journal, a Redis key
//! set's settings record, the hash servers (the first worker's identity, kept in
//! their journal and snapshot), a batch run's store. So two runs whose keys mean
//! different things never share a store silently, whichever store it is; and no
//! front door (the command line, Python, batch mode) builds an identity of its own.
//!
//! Settings that refine a key kind (near mode's n-gram size) are recorded as
//! `KIND + NAME=VALUE` attributes of the key kind, so the four-field header of
//! snapshots, journals and the wire stays as it is and the refusal names the
//! setting (`n-gram size '5' in the store, '7' in this run`).

use webdedup_minhash::Params;
use webdedup_store::StoreMeta;
use webdedup_text::Normalization;

/// The hash function of every key.
pub const HASH: &str = "xxh3-64";

/// The key kind of `webdedup dedup`'s keys. Bump it if the keys of the vertical
/// policy ever change (seeds, what is hashed).
pub const VERTICAL_KEY_KIND: &str =
    "vertical-v1 (url+title, document, paragraph; xxh3 seeds per kind)";

/// The key kind of `cdx dups` / `warc dedup`: one (urlkey, payload digest) key per
/// version, the same in both commands, so they share a key set.
pub const ARCHIVE_KEY_KIND: &str = "url+digest-v1 (urlkey SPACE digest; xxh3 seed url+dgst)";

/// The normalization recorded for onion's rules: their n-gram keys hash tokens as
/// written, so a store of them never mixes with one of normalized keys.
pub const ONION_NORMALIZATION: &str = "onion";

/// The attribute of a near-mode key kind that holds the n-gram size.
pub const NGRAM_ATTRIBUTE: &str = "n-gram size";

/// The key kind of substring mode's keys: windows of tokens, winnowed.
/// v2: units are words as written, a line's first apart (v1 hashed normalized
/// words): a v1 store is refused by its key kind.
pub const SUBSTR_KEY_KIND: &str =
    "substr-v2 (rolling hash of windows of words as written, line starts apart, winnowed; xxh3 seed substrng)";

/// The attributes of the substring key kind: the window size in tokens and the
/// winnowing run in windows.
pub const WINDOW_ATTRIBUTE: &str = "window tokens (K)";
pub const WINNOW_ATTRIBUTE: &str = "winnowing windows (W)";

/// Which keys a store holds, as plain values.
#[derive(Clone, Debug, PartialEq)]
pub enum Keys<'a> {
    /// `webdedup dedup`'s keys (URL+title, document, paragraph), and with `near`
    /// the word n-grams of near mode.
    Vertical {
        normalization: Normalization,
        near: Option<NearKeys>,
    },
    /// MinHash LSH band keys of these parameters (nothing else).
    MinHash(&'a Params),
    /// Substring mode's window keys (`dedup --substr K,W`): windows of `k`
    /// tokens, one kept of each run of `w` (nothing else).
    Substr {
        normalization: Normalization,
        k: usize,
        w: usize,
    },
    /// The URL+digest versions of `cdx dups` and `warc dedup`.
    Archive,
}

/// What near mode adds to a store: n-grams of `ngram` tokens of this kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NearKeys {
    pub ngram: usize,
    pub tokens: NearTokens,
}

/// The tokens near mode's n-grams are made of: the rule sets hash different
/// things, so their keys never share a store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NearTokens {
    /// Words of the normalized text (webdedup's rules).
    Normalized,
    /// A vertical's token lines as written, whatever the normalization (onion's
    /// rules).
    Onion,
}

/// The identity of a store of `keys` in `blocks` blocks: the one function that
/// builds a [`StoreMeta`].
pub fn store_identity(keys: &Keys, blocks: u32) -> StoreMeta {
    let (normalization, key_kind) = match keys {
        Keys::Vertical {
            normalization,
            near,
        } => {
            let normalization = match near {
                Some(n) if n.tokens == NearTokens::Onion => ONION_NORMALIZATION,
                _ => normalization.name(),
            };
            let kind = match near {
                Some(n) => format!("{VERTICAL_KEY_KIND} + {NGRAM_ATTRIBUTE}={}", n.ngram),
                None => VERTICAL_KEY_KIND.to_string(),
            };
            (normalization.to_string(), kind)
        }
        // Signatures are of text in their settings' normalization (`Params::describe`).
        Keys::MinHash(p) => (p.norm.name().to_string(), p.key_kind()),
        Keys::Substr {
            normalization,
            k,
            w,
        } => (
            normalization.name().to_string(),
            format!("{SUBSTR_KEY_KIND} + {WINDOW_ATTRIBUTE}={k} + {WINNOW_ATTRIBUTE}={w}"),
        ),
        // URL keys and digests are compared as they are.
        Keys::Archive => (
            Normalization::None.name().to_string(),
            ARCHIVE_KEY_KIND.to_string(),
        ),
    };
    StoreMeta {
        hash: HASH.into(),
        normalization,
        blocks,
        key_kind,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exact(normalization: Normalization, blocks: u32) -> StoreMeta {
        store_identity(
            &Keys::Vertical {
                normalization,
                near: None,
            },
            blocks,
        )
    }

    fn near(ngram: usize, tokens: NearTokens) -> StoreMeta {
        let near = Some(NearKeys { ngram, tokens });
        store_identity(
            &Keys::Vertical {
                normalization: Normalization::Loose,
                near,
            },
            1999,
        )
    }

    fn substr(k: usize, w: usize) -> StoreMeta {
        let normalization = Normalization::Loose;
        store_identity(
            &Keys::Substr {
                normalization,
                k,
                w,
            },
            1999,
        )
    }

    #[test]
    fn substr_refusals_name_k_and_w() {
        let m = substr(12, 8).mismatch(&substr(12, 4), "S");
        assert_eq!(
            m.as_deref(),
            Some("S holds keys made with other settings: winnowing windows (W) '4' in the store, '8' in this run")
        );
        let m = substr(12, 8)
            .mismatch(&near(7, NearTokens::Normalized), "S")
            .unwrap();
        assert!(m.contains("key kind"), "{m}");
    }

    #[test]
    fn exact_keys_keep_the_identity_stores_have_recorded() {
        assert_eq!(
            exact(Normalization::Loose, 1999),
            StoreMeta {
                hash: "xxh3-64".into(),
                normalization: "loose".into(),
                blocks: 1999,
                key_kind: VERTICAL_KEY_KIND.into(),
            }
        );
    }

    #[test]
    fn every_setting_that_changes_keys_changes_the_identity() {
        let all = [
            exact(Normalization::Loose, 1999),
            exact(Normalization::None, 1999),
            exact(Normalization::Loose, 101),
            near(7, NearTokens::Normalized),
            near(5, NearTokens::Normalized),
            near(7, NearTokens::Onion),
            store_identity(&Keys::MinHash(&Params::default()), 1999),
            store_identity(&Keys::Archive, 1999),
            substr(12, 8),
            substr(12, 4),
            substr(20, 8),
        ];
        for (i, a) in all.iter().enumerate() {
            for b in &all[i + 1..] {
                assert!(a.mismatch(b, "the store").is_some(), "{a:?} = {b:?}");
            }
        }
    }

    #[test]
    fn onion_tokens_ignore_the_normalization() {
        let onion = |normalization| {
            let near = Some(NearKeys {
                ngram: 7,
                tokens: NearTokens::Onion,
            });
            store_identity(
                &Keys::Vertical {
                    normalization,
                    near,
                },
                1999,
            )
        };
        assert_eq!(onion(Normalization::Loose), onion(Normalization::None));
    }

    #[test]
    fn refusals_name_the_setting_and_both_values() {
        let m = near(7, NearTokens::Normalized).mismatch(&near(5, NearTokens::Normalized), "S");
        assert_eq!(
            m.as_deref(),
            Some("S holds keys made with other settings: n-gram size '5' in the store, '7' in this run")
        );
        let m = near(7, NearTokens::Normalized).mismatch(&near(7, NearTokens::Onion), "S");
        assert_eq!(
            m.as_deref(),
            Some("S holds keys made with other settings: normalization 'onion' in the store, 'loose' in this run")
        );
        let m = near(7, NearTokens::Normalized)
            .mismatch(&exact(Normalization::Loose, 1999), "S")
            .unwrap();
        assert!(
            m.ends_with("n-gram size 'none' in the store, '7' in this run"),
            "{m}"
        );
    }
}
