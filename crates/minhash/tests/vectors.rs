//! Test vectors: signatures and band keys are pinned (docs/dev/design.md, "MinHash",
//! lists the same values, and python/tests checks them through `import webdedup`).
//! A change that moves any of these values changes every stored band key: it needs
//! a new algorithm name in `Params::describe` (`fss-v2`, ...), never an edit here.
use webdedup_minhash::{
    estimate_jaccard, MinHasher, Normalization, Params, Shingler, Shingling, DEFAULT_BANDS,
    DEFAULT_HASHES, DEFAULT_ROWS, SHINGLE_SEED,
};
use xxhash_rust::xxh3::xxh3_64_with_seed;

const FOX: &str =
    "The quick brown fox jumps over the lazy dog. Pack my box with 5 dozen liquor jugs!";
const CHINESE: &str = "我们的世界很美丽，我们的世界很大。";

struct Vector {
    text: &'static str,
    params: Params,
    first8: [u32; 8],
    sum: u64,
    keys3: [u64; 3],
}

fn vectors() -> Vec<Vector> {
    // Pinned before `lower` became the default; a vector of the default below.
    let d = Params {
        norm: Normalization::Loose,
        ..Params::default()
    };
    vec![
        // The defaults: `lower` keeps the 5 of "5 dozen".
        Vector {
            text: FOX,
            params: Params::default(),
            first8: [
                1375557146, 1501579111, 2397801015, 1105189008, 1659780499, 2397113256, 601727505,
                2238620293,
            ],
            sum: 220948243387,
            keys3: [0x8197af5e5906129d, 0xcec68436f77ebed1, 0xb44028ed99ecbd0e],
        },
        Vector {
            text: FOX,
            params: d,
            first8: [
                1375557146, 3822409493, 2397801015, 4108315866, 1659780499, 252583121, 601727505,
                2238620293,
            ],
            sum: 224657039411,
            keys3: [0xd46037ebb0e5f327, 0x6b26b72e0bb2b85b, 0x3f1429874045a5ce],
        },
        // Fewer than 5 words: one shingle; the later rounds fill the bins.
        Vector {
            text: "Hello, World!",
            params: d,
            first8: [
                4236198663, 1721751076, 1170763071, 3353634460, 2134895664, 4274175785, 2676451797,
                338964337,
            ],
            sum: 234122800426,
            keys3: [0x590b986fdc92d22c, 0xf6d8853df2d113cf, 0xeb2c9e99a5becd55],
        },
        Vector {
            text: CHINESE,
            params: Params {
                shingling: Shingling::Chars(3),
                ..d
            },
            first8: [
                42886591, 4024983457, 1905690554, 2907551120, 1300685167, 2057855881, 1848477150,
                669655625,
            ],
            sum: 206686292609,
            keys3: [0xde959b75e4e91087, 0xc276252f316b241c, 0x485fa94089cfc7af],
        },
        Vector {
            text: FOX,
            params: Params {
                shingling: Shingling::Words(3),
                norm: Normalization::Loose,
                hashes: 16,
                bands: 4,
                rows: 4,
                verify_hashes: 0,
            },
            first8: [
                2449811162, 2967675680, 1691819431, 621545585, 1925416313, 1369565966, 3062896922,
                3112787391,
            ],
            sum: 34881435654,
            keys3: [0x2d36563bac4f9630, 0x158b495de5934c6c, 0xdd9c90608190aa96],
        },
    ]
}

#[test]
fn defaults_are_the_documented_ones() {
    let d = Params::default();
    assert_eq!(
        d.describe(),
        "minhash=fss-v1 shingles=auto:5 hashes=112 bands=14 rows=8 norm=lower verify-hashes=256"
    );
    assert_eq!((DEFAULT_HASHES, DEFAULT_BANDS, DEFAULT_ROWS), (112, 14, 8));
    assert_eq!(Params::parse(&d.describe()), Ok(d));
    // Settings written before the verification sketch (a store's) read as
    // verification on the signature's own bytes, and describe themselves as before.
    let before = "minhash=fss-v1 shingles=auto:5 hashes=112 bands=14 rows=8 norm=lower";
    let p = Params::parse(before).unwrap();
    assert_eq!(
        p,
        Params {
            verify_hashes: 0,
            ..d
        }
    );
    assert_eq!(p.describe(), before);
    assert_eq!((d.verification_len(), p.verification_len()), (256, 112));
    assert!((d.banding().threshold() - 0.7191).abs() < 1e-4);
}

#[test]
fn shingles_and_their_hash() {
    let mut s = Shingler::new(Shingling::Words(5), Normalization::Loose);
    let sh = s.shingles(FOX.as_bytes());
    assert_eq!(sh.len(), 13);
    assert_eq!(sh[0], "the quick brown fox jumps");
    assert_eq!(sh[9], "pack my box with 0");
    assert_eq!(sh[12], "with 0 dozen liquor jugs");
    assert_eq!(
        xxh3_64_with_seed(b"the quick brown fox jumps", SHINGLE_SEED),
        0xf9d2e36696ffd52f
    );
    let mut hashes = Vec::new();
    s.for_each(FOX.as_bytes(), |h| hashes.push(h));
    assert_eq!(hashes[0], 0xf9d2e36696ffd52f);
    let mut c = Shingler::new(Shingling::Chars(3), Normalization::Loose);
    let sh = c.shingles(CHINESE.as_bytes());
    assert_eq!(sh[..3], ["我们的", "们的世", "的世界"]);
    assert_eq!(sh.len(), 13);
    assert_eq!(sh[12], "界很大");
}

#[test]
fn signatures_and_band_keys_are_pinned() {
    for v in vectors() {
        let mut m = MinHasher::new(v.params).unwrap();
        let mut keys = Vec::new();
        let sig = m.signature_and_keys(v.text.as_bytes(), &mut keys).unwrap();
        let what = format!("{} of {:?}", v.params.describe(), v.text);
        assert_eq!(sig.len(), v.params.hashes, "{what}");
        assert_eq!(sig[..8], v.first8, "{what}");
        assert_eq!(sig.iter().map(|&x| x as u64).sum::<u64>(), v.sum, "{what}");
        assert_eq!(keys.len(), v.params.bands, "{what}");
        assert_eq!(keys[..3], v.keys3, "{what}");
    }
}

#[test]
fn normalization_and_entry_points_agree() {
    let loose = Params {
        norm: Normalization::Loose,
        ..Params::default()
    };
    let mut m = MinHasher::new(loose).unwrap();
    let a = m.signature(FOX.as_bytes()).unwrap().to_vec();
    // Case, digits and punctuation do not matter; whitespace of any kind separates.
    let b = m
        .signature("the QUICK brown\tfox — jumps over the lazy dog\n\nPack my box with 7 dozen liquor jugs".as_bytes())
        .unwrap()
        .to_vec();
    assert_eq!(a, b);
    let c = m
        .signature_normalized(
            b"the quick brown fox jumps over the lazy dog pack my box with 0 dozen liquor jugs",
        )
        .unwrap()
        .to_vec();
    assert_eq!(a, c);
    // No word, no signature.
    assert!(m.signature(b" ... !!! ").is_none());
    assert!(m.signature(b"").is_none());
    let cat = m
        .signature(
            b"The quick brown fox jumps over the lazy cat. Pack my box with 5 dozen liquor jugs!",
        )
        .unwrap()
        .to_vec();
    assert_eq!(estimate_jaccard(&a, &cat), 47.0 / 112.0);
}

#[test]
fn the_default_normalization_keeps_digits() {
    let mut m = MinHasher::new(Params::default()).unwrap();
    let a = m.signature(FOX.as_bytes()).unwrap().to_vec();
    // Case and punctuation do not matter, digits do.
    let same =
        "the QUICK brown\tfox — jumps over the lazy dog\n\nPack my box with 5 dozen liquor jugs";
    assert_eq!(m.signature(same.as_bytes()).unwrap(), a);
    let seven = FOX.replace('5', "7");
    assert_ne!(m.signature(seven.as_bytes()).unwrap(), a);
    let normalized =
        b"the quick brown fox jumps over the lazy dog pack my box with 5 dozen liquor jugs";
    assert_eq!(m.signature_normalized(normalized).unwrap(), a);
    assert_eq!(m.signature_loose(normalized).unwrap(), a);
}

#[test]
fn settings_are_checked() {
    let d = Params::default();
    let too_many_rows = Params {
        rows: 65,
        bands: 1,
        hashes: 100,
        ..d
    };
    for (p, says) in [
        (Params { hashes: 0, ..d }, "hashes"),
        (Params { bands: 15, ..d }, "bands x rows"),
        (too_many_rows, "rows"),
        (
            Params {
                verify_hashes: 5000,
                ..d
            },
            "verify hashes",
        ),
    ] {
        let e = MinHasher::new(p).unwrap_err();
        assert!(e.contains(says), "{p:?}: {e}");
    }
    for (text, says) in [
        (
            "minhash=oph-v9 shingles=words:5 hashes=112 bands=14 rows=8 norm=loose",
            "oph-v9",
        ),
        (
            "minhash=fss-v1 shingles=words:5 hashes=112 rows=8 norm=loose",
            "incomplete",
        ),
    ] {
        let e = Params::parse(text).unwrap_err();
        assert!(e.contains(says), "{text}: {e}");
    }
    assert!("chars:0".parse::<Shingling>().is_err());
    assert!("bytes:3".parse::<Shingling>().is_err());
    assert_eq!("7".parse::<Shingling>(), Ok(Shingling::Words(7)));
    assert_eq!("auto:3".parse::<Shingling>(), Ok(Shingling::Auto(3)));
    assert_eq!(Shingling::Auto(3).to_string(), "auto:3");
    assert_eq!(
        MinHasher::new(Params { hashes: 128, ..d })
            .unwrap()
            .params()
            .hashes,
        128
    );
}

/// The verification bytes at the defaults (256 values of the verification
/// sketch), pinned as the signature is: a store's side store holds them.
#[test]
fn verification_bytes_are_pinned() {
    let mut m = MinHasher::new(Params::default()).unwrap();
    m.signature(FOX.as_bytes()).unwrap();
    let v = m.verification();
    let sum: u64 = v.iter().map(|&b| b as u64).sum();
    assert_eq!(v.len(), 256);
    assert_eq!(
        (&v[..8], sum),
        (&[199u8, 162, 167, 17, 8, 82, 116, 34][..], 33719)
    );
}
