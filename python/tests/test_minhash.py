"""pytest for webdedup.minhash_*: the pinned test vectors of the Rust library
(crates/minhash/tests/vectors.rs; the same values), normalization, errors."""

import threading

import pytest

import webdedup

FOX = "The quick brown fox jumps over the lazy dog. Pack my box with 5 dozen liquor jugs!"
CHINESE = "我们的世界很美丽，我们的世界很大。"

# (text, ngram, shingle_norm, hashes, bands, rows, first 8 values, sum of the values,
# first 3 band keys)
VECTORS = [
    (FOX, 5, None, 112, 14, 8,
     [1375557146, 1501579111, 2397801015, 1105189008, 1659780499, 2397113256, 601727505, 2238620293],
     220948243387, [0x8197AF5E5906129D, 0xCEC68436F77EBED1, 0xB44028ED99ECBD0E]),
    (FOX, 5, "loose", 112, 14, 8,
     [1375557146, 3822409493, 2397801015, 4108315866, 1659780499, 252583121, 601727505, 2238620293],
     224657039411, [0xD46037EBB0E5F327, 0x6B26B72E0BB2B85B, 0x3F1429874045A5CE]),
    ("Hello, World!", "words:5", "loose", 112, 14, 8,
     [4236198663, 1721751076, 1170763071, 3353634460, 2134895664, 4274175785, 2676451797, 338964337],
     234122800426, [0x590B986FDC92D22C, 0xF6D8853DF2D113CF, 0xEB2C9E99A5BECD55]),
    (CHINESE, "chars:3", "loose", 112, 14, 8,
     [42886591, 4024983457, 1905690554, 2907551120, 1300685167, 2057855881, 1848477150, 669655625],
     206686292609, [0xDE959B75E4E91087, 0xC276252F316B241C, 0x485FA94089CFC7AF]),
    (FOX, 3, "loose", 16, 4, 4,
     [2449811162, 2967675680, 1691819431, 621545585, 1925416313, 1369565966, 3062896922, 3112787391],
     34881435654, [0x2D36563BAC4F9630, 0x158B495DE5934C6C, 0xDD9C90608190AA96]),
]


@pytest.mark.parametrize("text,ngram,norm,hashes,bands,rows,first8,total,keys3", VECTORS)
def test_minhash_vectors_equal_the_rust_library(text, ngram, norm, hashes, bands, rows, first8, total, keys3):
    sig = webdedup.minhash_signature(text, ngram=ngram, hashes=hashes, shingle_norm=norm)
    assert len(sig) == hashes and all(0 <= v < 2**32 for v in sig)
    assert sig[:8] == first8 and sum(sig) == total
    keys = webdedup.minhash_band_keys(sig, bands=bands, rows=rows)
    assert len(keys) == bands and keys[:3] == keys3


def test_minhash_defaults_normalization_and_estimate():
    a = webdedup.minhash_signature(FOX)
    assert a == webdedup.minhash_signature(FOX, ngram=5, hashes=112)
    # Case, punctuation and the kind of whitespace do not matter; digits do, unless
    # folded (shingle_norm="loose").
    assert a == webdedup.minhash_signature(
        "the QUICK brown\tfox — jumps over the lazy dog\n\nPack my box with 5 dozen liquor jugs")
    seven = "the QUICK brown\tfox — jumps over the lazy dog\n\nPack my box with 7 dozen liquor jugs"
    assert a != webdedup.minhash_signature(seven)
    assert webdedup.minhash_signature(FOX, shingle_norm="loose") == webdedup.minhash_signature(
        seven, shingle_norm="loose")
    assert webdedup.minhash_signature(" ... !!! ") is None
    assert webdedup.minhash_signature("") is None
    # The Rust library's estimate of the same pair (tests/vectors.rs, loose).
    loose = webdedup.minhash_signature(FOX, shingle_norm="loose")
    cat = webdedup.minhash_signature(FOX.replace("dog", "cat"), shingle_norm="loose")
    assert webdedup.minhash_jaccard(loose, cat) == pytest.approx(47 / 112)
    assert webdedup.minhash_jaccard(a, a) == 1.0
    assert webdedup.minhash_band_keys(a) == webdedup.minhash_band_keys(a, 14, 8)


def test_minhash_default_shingles_follow_each_texts_script():
    # auto:5, the command line's default: character 5-grams for Chinese, word
    # 5-grams for English.
    zh = CHINESE * 3
    assert webdedup.minhash_signature(zh) == webdedup.minhash_signature(zh, ngram="chars:5")
    assert webdedup.minhash_signature(zh) != webdedup.minhash_signature(zh, ngram="words:5")
    assert webdedup.minhash_signature(FOX) == webdedup.minhash_signature(FOX, ngram="auto:5")
    assert webdedup.minhash_signature(FOX) != webdedup.minhash_signature(FOX, ngram="chars:5")


def test_minhash_bad_arguments_raise():
    with pytest.raises(ValueError, match="shingle size"):
        webdedup.minhash_signature(FOX, ngram=0)
    with pytest.raises(ValueError, match="shingling"):
        webdedup.minhash_signature(FOX, ngram="bytes:3")
    with pytest.raises(TypeError, match="ngram"):
        webdedup.minhash_signature(FOX, ngram=2.5)
    with pytest.raises(ValueError, match="hashes"):
        webdedup.minhash_signature(FOX, hashes=0)
    sig = webdedup.minhash_signature(FOX)
    with pytest.raises(ValueError, match="bands x rows"):
        webdedup.minhash_band_keys(sig, bands=15, rows=8)
    with pytest.raises(ValueError, match="different lengths"):
        webdedup.minhash_jaccard(sig, sig[:-1])


def test_minhash_from_threads_gives_the_same_values():
    texts = [f"{FOX} number {i} " + "word " * i for i in range(40)]
    expected = [webdedup.minhash_signature(t) for t in texts]
    out = [None] * len(texts)

    def work(i):
        out[i] = webdedup.minhash_signature(texts[i])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(texts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert out == expected
