//! The store identity of a run's options: the plain description of its keys
//! ([`Keys`]) that `webdedup_store_spec::identity::store_identity` turns into the
//! settings every store records and compares. Front doors and runners take a
//! run's key set from here, so none builds an identity of its own.

use crate::options::{NearRules, Options};
use webdedup_store::StoreMeta;
use webdedup_store_spec::identity::{store_identity, Keys, NearKeys, NearTokens};
use webdedup_store_spec::KeySet;

/// The [`Keys`] of a run with `options` (`dedup`, `minhash`, batch mode, Python).
pub fn keys_of(options: &Options) -> Keys<'_> {
    if let Some(s) = options.substr() {
        // Units are words as written, whatever `--normalize` says.
        return Keys::Substr {
            normalization: webdedup_text::Normalization::None,
            k: s.k,
            w: s.w,
        };
    }
    match options.minhash() {
        Some(m) => Keys::MinHash(&m.params),
        None => Keys::Vertical {
            normalization: options.normalization,
            near: options.near().map(|n| NearKeys {
                ngram: n.ngram,
                tokens: match n.rules {
                    NearRules::Webdedup => NearTokens::Normalized,
                    NearRules::Onion => NearTokens::Onion,
                },
            }),
        },
    }
}

/// The identity of the store of a run with `options` in `blocks` blocks.
pub fn of_options(options: &Options, blocks: u32) -> StoreMeta {
    store_identity(&keys_of(options), blocks)
}

/// The key set of a run with `options` in `blocks` blocks (default namespace).
pub fn key_set(options: &Options, blocks: u32) -> KeySet {
    KeySet::of(&keys_of(options), blocks)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PolicyChoices;
    use webdedup_text::Normalization;

    fn near(ngram: usize, rules: NearRules, normalization: Normalization) -> StoreMeta {
        let o = PolicyChoices {
            near: true,
            ngram: Some(ngram),
            near_rules: Some(rules),
            normalization: Some(normalization),
            ..Default::default()
        }
        .options()
        .unwrap();
        of_options(&o, 1999)
    }

    #[test]
    fn every_option_that_changes_keys_changes_the_identity() {
        let loose = Normalization::Loose;
        let all = [
            of_options(&Options::default(), 1999),
            of_options(
                &Options {
                    normalization: Normalization::None,
                    ..Default::default()
                },
                1999,
            ),
            of_options(&Options::default(), 101),
            near(7, NearRules::Webdedup, loose),
            near(7, NearRules::Webdedup, Normalization::None),
            near(5, NearRules::Webdedup, loose),
            near(7, NearRules::Onion, loose),
        ];
        for (i, a) in all.iter().enumerate() {
            for b in &all[i + 1..] {
                assert!(a.mismatch(b, "the store").is_some(), "{a:?} = {b:?}");
            }
        }
    }

    #[test]
    fn onion_rules_record_their_own_normalization() {
        let m = near(7, NearRules::Webdedup, Normalization::Loose)
            .mismatch(&near(7, NearRules::Onion, Normalization::Loose), "S");
        assert_eq!(
            m.as_deref(),
            Some("S holds keys made with other settings: normalization 'onion' in the store, 'loose' in this run")
        );
        // Onion's tokens are the token lines as written: the normalization does
        // not change them, nor the identity.
        assert_eq!(
            near(7, NearRules::Onion, Normalization::Loose),
            near(7, NearRules::Onion, Normalization::None)
        );
    }
}
