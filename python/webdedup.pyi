"""webdedup: remove duplicate text from web corpora (KNOT-style dedup of verticals,
SimHash, CDX). The seed's libdedup API, on the same policy, store and renderer as
the `webdedup` command line."""

from os import PathLike
from pathlib import Path
from typing import List, Optional, Sequence, Tuple, Union

class WebdedupError(Exception):
    """An error of webdedup, with the Rust error's context."""

class WebdedupWarning(UserWarning):
    """Bad input that webdedup skipped (the rest was processed)."""

class Vert:
    """What `Worker.process` returns."""
    @property
    def data(self) -> bytes:
        """The kept bytes, exactly as `webdedup dedup` writes them."""
    @property
    def text(self) -> str:
        """The kept text (invalid UTF-8 replaced)."""
    @property
    def status(self) -> Optional[str]:
        """The status of the first document: K, N/M, D or E."""
    @property
    def statuses(self) -> List[str]:
        """One status per input document."""
    @property
    def kept(self) -> int:
        """Paragraphs kept."""
    @property
    def dropped(self) -> int:
        """Paragraphs dropped."""
    @property
    def problems(self) -> List[Tuple[int, str]]:
        """Input problems as (line, reason), lines from 1 in this input."""
    @property
    def feedback(self) -> bytes:
        """Feedback mode: the dropped paragraphs, each long one after a
        `<t>FILE:REC\\tFILE:REC</f>` line (what `webdedup dedup -f` writes to
        REL.dedup.dropped); b"" otherwise."""
    @property
    def references(self) -> List[Tuple[int, Optional[str], int]]:
        """Feedback mode: (dropped record, original source, original record) per
        referenced dropped paragraph; the source is None where it is not known."""
    @property
    def source(self) -> Optional[str]:
        """Feedback mode: the source this input's records are numbered in."""
    @property
    def first_record(self) -> int:
        """Feedback mode: the record number (from 1) of this input's first paragraph."""

class Document:
    """What `Worker.process_document` returns."""
    @property
    def text(self) -> str:
        """The text without its dropped lines."""
    @property
    def status(self) -> str:
        """K, N/M, D or E."""
    @property
    def dropped(self) -> List[Tuple[int, int]]:
        """Dropped spans as character offsets (start, end) into the input."""
    @property
    def references(self) -> List[Tuple[int, int, Optional[str], int]]:
        """Feedback mode: (start, end, original source, original record) of every
        dropped line whose original is named."""

class Worker:
    """Deduplicates against its Dedup's store. Thread-safe; one per thread is fastest."""
    def process(self, vert: Union[str, bytes], source: Optional[str] = None) -> Vert:
        """Deduplicates verticalized documents; releases the GIL. `source` (feedback
        mode) names where they come from; records are numbered within it."""
    def process_document(
        self,
        text: str,
        url: Optional[str] = None,
        title: Optional[str] = None,
        source: Optional[str] = None,
    ) -> Document:
        """Deduplicates plain text: paragraphs are the non-blank lines."""

class Dedup:
    """The key store and the settings every worker uses.

    map=None: the embedded store in this process. store_dir: load and save the
    command line's snapshot (DIR/store.snap). store="redis://HOST:PORT[,...]": the
    key set in Redis / Valkey (one node or a Cluster). map=PATH: the hash servers
    of a block map (`webdedup distribute`), connected at the first request;
    start_servers() starts the map's servers on this machine (with store_dir,
    saving to store_dir/server-PORT.snap). port: the seed's servers' port, checked
    against the map (which names each server's port).

    url_filter: a rules file or a list of rules (`webdedup dedup --url-filter`);
    matching documents get status U. feedback=True (the embedded store or a map,
    not Redis): dropped paragraphs come with references to their originals
    (Vert.feedback, Vert.references, Document.references), numbered within each
    call's `source`.
    """
    def __init__(
        self,
        map: Optional[Union[str, PathLike]] = None,
        port: Optional[int] = None,
        store_dir: Optional[Union[str, PathLike]] = None,
        *,
        store: Optional[str] = None,
        store_password: Optional[str] = None,
        normalize: str = "loose",
        min_para_chars: int = 50,
        doc_check: str = "all",
        near: bool = False,
        ngram: int = 7,
        threshold: float = 0.5,
        smooth: bool = False,
        max_stub: int = 20,
        url_filter: Optional[Union[str, PathLike, Sequence[str]]] = None,
        feedback: bool = False,
        blocks: int = 1999,
        capacity: int = 0,
        server_timeout: float = 120.0,
    ) -> None: ...
    def create_worker(self) -> Worker:
        """A new worker."""
    def start_servers(self, *, check: bool = False) -> int:
        """Starts `webdedup server` ($WEBDEDUP_BIN) for the map's loopback servers
        not running yet; they outlive the interpreter (pids in MAP.servers/). 0 once
        all listen, else 1 (check=True: raises WebdedupError). 0 without a map."""
    def stop_servers(self, *, check: bool = False) -> int:
        """SIGTERM to the map's local servers, whoever started them (they save);
        0 when all stopped (check=True: raises WebdedupError otherwise)."""
    def test_servers(self, *, check: bool = False) -> int:
        """0 when every server of the map answers and is ready, else 1
        (check=True: raises WebdedupError naming the others)."""
    def save(self) -> int:
        """Saves the store to store_dir; returns the number of keys."""
    def write_files_index(self, dir: Union[str, PathLike]) -> Path:
        """Feedback mode: writes DIR/files.idx (the file ids of every source used),
        for `webdedup check`; returns its path."""
    def __len__(self) -> int: ...

dedup = Dedup

def simhash(text: str, settings: Optional[str] = None) -> Optional[int]:
    """The 64-bit SimHash of text (None when it has no feature)."""

def hamming(a: int, b: int) -> int:
    """Bits in which a and b differ."""

def similar(fingerprints: Sequence[int], k: int) -> List[Tuple[int, int, int]]:
    """All pairs (i, j, distance), i < j, within k bits."""

def cdx_dups(lines: Sequence[str]) -> List[str]:
    """The CDX lines whose (urlkey, digest) appeared on an earlier line. Lines that
    are not CDX are skipped with a WebdedupWarning naming them (lines[I])."""

def minhash_signature(text: str, ngram: Union[int, str] = 5, hashes: int = 112) -> Optional[List[int]]:
    """The MinHash signature of text: `hashes` 32-bit values (pinned: the same on
    every machine and version). ngram: word n-grams (int, or "words:N") or "chars:N"
    for scripts without spaces. None when the text has no word after normalization."""

def minhash_band_keys(signature: Sequence[int], bands: int = 14, rows: int = 8) -> List[int]:
    """The LSH band keys (64-bit) of a signature: two documents sharing one are
    near-duplicate candidates (probability 1 - (1 - J**rows)**bands)."""

def minhash_jaccard(a: Sequence[int], b: Sequence[int]) -> float:
    """The Jaccard similarity estimated from two signatures of the same settings."""

def batch_hash(
    input: Union[str, PathLike], work: Union[str, PathLike], task_index: int, task_count: int,
    *, partitions: int = 64, normalize: str = "loose", min_para_chars: int = 50, doc_check: str = "all",
) -> bool:
    """Batch phase 1 for one task; False if it had already finished."""

def batch_resolve(
    input: Union[str, PathLike], work: Union[str, PathLike], task_index: int, task_count: int,
    stage: str, *, store: Optional[Union[str, PathLike]] = None, partitions: int = 64,
    normalize: str = "loose", min_para_chars: int = 50, doc_check: str = "all",
) -> bool:
    """Batch phase 2 for one task and stage (url-title, docs, paras)."""

def batch_filter(
    input: Union[str, PathLike], work: Union[str, PathLike], output: Union[str, PathLike],
    task_index: int, task_count: int, *, dd: bool = False, partitions: int = 64,
    normalize: str = "loose", min_para_chars: int = 50, doc_check: str = "all",
) -> bool:
    """Batch phase 3 for one task: writes its outputs."""

def batch_publish(
    input: Union[str, PathLike], work: Union[str, PathLike], task_count: int,
    store: Union[str, PathLike], *, partitions: int = 64, normalize: str = "loose",
    min_para_chars: int = 50, doc_check: str = "all",
) -> int:
    """Folds the run's new keys into the store directory; returns its key count."""
