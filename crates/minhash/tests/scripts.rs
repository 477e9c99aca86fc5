//! `auto:N` shingles: chosen per document by its script, and then exactly the
//! shingles (so the signatures) of `words:N` or `chars:N`.
use webdedup_minhash::{written_without_spaces, MinHasher, Params, Shingler, Shingling};

const ENGLISH: &str =
    "The quick brown fox jumps over the lazy dog. Pack my box with 5 dozen liquor jugs!";
const CHINESE: &str =
    "虚拟化是近年来计算领域最重要的进步之一。该术语涵盖模拟虚拟计算机的各种抽象和技术。";
const JAPANESE: &str = "仮想化は近年のコンピュータ分野における最も重要な進歩の一つです。";
const THAI: &str = "เลือกคำสั่งนี้เพื่อเปิดหน้าต่างใหม่ที่มีเนื้อหาของเอกสารปัจจุบัน";
const RUSSIAN: &str =
    "Виртуализация является одним из самых значительных достижений вычислительной техники";

fn shingles(sh: Shingling, text: &str) -> Vec<String> {
    Shingler::new(sh, Params::default().norm).shingles(text.as_bytes())
}

fn signature(sh: Shingling, text: &str) -> Vec<u32> {
    let params = Params {
        shingling: sh,
        ..Params::default()
    };
    MinHasher::new(params)
        .unwrap()
        .signature(text.as_bytes())
        .unwrap()
        .to_vec()
}

#[test]
fn each_document_gets_the_shingles_of_its_script() {
    for (text, chars) in [
        (ENGLISH, false),
        (RUSSIAN, false),
        (CHINESE, true),
        (JAPANESE, true),
        (THAI, true),
    ] {
        let want = if chars {
            Shingling::Chars(5)
        } else {
            Shingling::Words(5)
        };
        assert_eq!(
            shingles(Shingling::Auto(5), text),
            shingles(want, text),
            "{text}"
        );
        assert_eq!(
            signature(Shingling::Auto(5), text),
            signature(want, text),
            "{text}"
        );
        assert_ne!(
            shingles(Shingling::Chars(5), text),
            shingles(Shingling::Words(5), text),
            "{text}: the two choices must differ for the test to mean anything"
        );
    }
    assert_eq!(Params::default().shingling, Shingling::Auto(5));
}

#[test]
fn a_third_of_the_letters_decides() {
    let cases: [(&[u8], bool, &str); 17] = [
        // Latin letters count one each.
        ("libreoff 设置选项".as_bytes(), true, "4 of 12 letters Han"),
        (
            "libreoffice 设置选项".as_bytes(),
            false,
            "4 of 15 letters Han",
        ),
        (
            "abcdefghijkl 设置选项变更".as_bytes(),
            true,
            "6 of 18 letters Han",
        ),
        (
            "abcdefghijklm 设置选项变更".as_bytes(),
            false,
            "6 of 19 letters Han",
        ),
        // Digits (written `0` by the normalization) and spaces are not letters.
        ("0000 0000 设".as_bytes(), true, "digits are no letters"),
        // Words of 16 letters and more on average are not separated, whatever the
        // script (Latin that lost its spaces).
        (
            b"qemuisasoftwareemulatorforafull x",
            true,
            "32 letters in 2 words",
        ),
        (
            b"qemuisasoftwareemulatorforaful x",
            false,
            "31 letters in 2 words",
        ),
        (b"donaudampfschif", false, "15 letters in 1 word"),
        // Characters are counted, not bytes.
        (
            "𠀀𠀁𠀂 abcdef".as_bytes(),
            true,
            "3 of 9 letters 4-byte Han",
        ),
        (
            "𠀀𠀁𠀂 abcdefg".as_bytes(),
            false,
            "3 of 10 letters 4-byte Han",
        ),
        (
            "абвгдежзийклмнопабвгдежзийклмноп б".as_bytes(),
            true,
            "33 Cyrillic letters in 2 words",
        ),
        (
            "абвгдежзийклмнопабвгдежзийклмн б".as_bytes(),
            false,
            "31 Cyrillic letters in 2 words",
        ),
        // Korean is written with spaces.
        ("가상화는 컴퓨팅 분야의".as_bytes(), false, "Hangul"),
        // No letter, no script.
        (b"", false, "empty"),
        (b"0 00", false, "digits only"),
        // Malformed UTF-8 is of no such script, never a panic.
        (b"\xe8\x99 \xff\xfe abc", false, "malformed"),
        (b"\xf0\xa0", false, "cut 4-byte character"),
    ];
    for (text, want, why) in cases {
        assert_eq!(written_without_spaces(text), want, "{why}: {text:?}");
    }
    assert_eq!(
        Shingling::Auto(4).resolve("设置选项".as_bytes()),
        Shingling::Chars(4)
    );
    assert_eq!(
        Shingling::Auto(4).resolve(b"set options"),
        Shingling::Words(4)
    );
    assert_eq!(
        Shingling::Words(4).resolve("设置选项".as_bytes()),
        Shingling::Words(4)
    );
}

#[test]
fn near_copies_in_unspaced_scripts_share_most_auto_shingles() {
    // One character changed in a Chinese sentence: words:5 sees one "word" per
    // sentence and so nothing in common; auto:5 sees character 5-grams.
    let edited = CHINESE.replace("最重要", "最关键");
    let jaccard = |sh: Shingling| {
        let a: std::collections::HashSet<String> = shingles(sh, CHINESE).into_iter().collect();
        let b: std::collections::HashSet<String> = shingles(sh, &edited).into_iter().collect();
        a.intersection(&b).count() as f64 / a.union(&b).count() as f64
    };
    assert_eq!(jaccard(Shingling::Words(5)), 0.0);
    assert!(
        jaccard(Shingling::Auto(5)) > 0.7,
        "{}",
        jaccard(Shingling::Auto(5))
    );
}
