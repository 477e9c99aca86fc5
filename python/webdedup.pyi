"""webdedup: remove duplicate text from web corpora (KNOT-style dedup of verticals,
SimHash, CDX). The seed's libdedup API, on the same policy, store and renderer as
the `webdedup` command line."""

from os import PathLike
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union, overload

from typing_extensions import TypedDict, Unpack

class WebdedupError(Exception):
    """An error of webdedup, with the Rust error's context."""

class WebdedupWarning(UserWarning):
    """Bad input that webdedup skipped (the rest was processed)."""

class Vert:
    """What `Worker.process` returns for bytes or str."""
    @property
    def format(self) -> str:
        """The input's format, `vertical` or `jsonl` (the kept bytes are in it)."""
    @property
    def data(self) -> bytes:
        """The kept bytes, exactly as `webdedup dedup` writes them."""
    @property
    def text(self) -> str:
        """The kept text (invalid UTF-8 replaced)."""
    @property
    def status(self) -> Optional[str]:
        """The status of the first document: K, N/M, D, E, U or B (a bad record)."""
    @property
    def statuses(self) -> List[str]:
        """One status per input document (JSON Lines: per record, B for a bad one)."""
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

class Records:
    """What `Worker.process_records` (and `Worker.process` given dicts) returns."""
    @property
    def records(self) -> List[Any]:
        """The records to keep, in input order: a record kept whole is the very
        object given; one that lost paragraphs is a copy (the dicts along the text
        field's path copied) whose text holds the kept lines; a bad record is kept
        as it is unless drop_bad_records=True."""
    @property
    def statuses(self) -> List[str]:
        """One status per input record: K, N/M, D, E, U or B (a bad record)."""
    @property
    def kept(self) -> int:
        """Paragraphs kept."""
    @property
    def dropped(self) -> int:
        """Paragraphs dropped."""
    @property
    def problems(self) -> List[Tuple[int, str]]:
        """Bad records as (index from 0, reason); each was also warned about."""
    @property
    def references(self) -> List[Tuple[int, Optional[str], int]]:
        """Feedback mode: (dropped record, original source, original record)."""
    @property
    def source(self) -> Optional[str]:
        """Feedback mode: the source the paragraphs are numbered in."""
    @property
    def first_record(self) -> int:
        """Feedback mode: the record number (from 1) of this call's first paragraph."""

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
    @overload
    def process(self, data: Union[str, bytes], source: Optional[str] = None) -> Vert: ...
    @overload
    def process(
        self, data: Union[Mapping[str, Any], List[Any], Tuple[Any, ...]], source: Optional[str] = None
    ) -> Records: ...
    def process(self, data: Any, source: Optional[str] = None) -> Union[Vert, Records]:
        """Deduplicates documents in the Dedup's input_format (verticals or JSON
        Lines; "auto" sniffs the data); a dict or a list of dicts is taken as
        records (process_records). Parquet or WET bytes raise ValueError (give
        their records as dicts, or their files to the batch functions). Bad input is listed in `problems` and warned
        about (WebdedupWarning naming the line or record), never raised. Releases
        the GIL. `source` (feedback mode) names where they come from; records are
        numbered within it."""
    def process_records(self, records: Iterable[Any], source: Optional[str] = None) -> Records:
        """Deduplicates JSON Lines records given as dicts (the Dedup's text_field,
        id_field, url_field, title_field), with the decisions `webdedup dedup`
        makes on a file of these records; the input is never modified."""
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

    substr=True, (K, W) or (K, W, B): substring mode (`webdedup dedup
    --substr=K,W,B`, True is (10, 4, 80), B is 80 when left out): spans repeated
    inside documents are removed, the first copy kept; not with near, nor (yet)
    with feedback.

    input_format ("auto", "vertical", "jsonl") and the JSON Lines fields are the
    command line's --input-format, --text-field, --id-field (default id),
    --url-field (default url, else metadata.url), --title-field (default title,
    else metadata.title) and --drop-bad-records; dotted paths reach nested fields.

    An option left out (None) takes the command line's default (normalize "loose",
    min_para_chars 50, doc_check "all", ngram 7, threshold 0.5, max_stub 20,
    blocks 1999, input_format "auto", text_field "text"), and every value is
    checked by the library function the command line calls: a bad one raises
    ValueError with the command line's message (naming its flag, e.g. --ngram).
    """
    def __init__(
        self,
        map: Optional[Union[str, PathLike]] = None,
        port: Optional[int] = None,
        store_dir: Optional[Union[str, PathLike]] = None,
        *,
        store: Optional[str] = None,
        store_password: Optional[str] = None,
        normalize: Optional[str] = None,
        min_para_chars: Optional[int] = None,
        doc_check: Optional[str] = None,
        near: bool = False,
        ngram: Optional[int] = None,
        threshold: Optional[float] = None,
        smooth: bool = False,
        max_stub: Optional[int] = None,
        url_filter: Optional[Union[str, PathLike, Sequence[str]]] = None,
        feedback: bool = False,
        substr: Union[bool, Tuple[int, int], None] = None,
        blocks: Optional[int] = None,
        capacity: Optional[int] = None,
        server_timeout: float = 120.0,
        input_format: Optional[str] = None,
        text_field: Optional[str] = None,
        id_field: Optional[str] = None,
        url_field: Optional[str] = None,
        title_field: Optional[str] = None,
        drop_bad_records: bool = False,
    ) -> None: ...
    def create_worker(self) -> Worker:
        """A new worker."""
    def start_servers(self, *, check: bool = False) -> int:
        """Starts `webdedup server` ($WEBDEDUP_BIN) for the map's loopback servers
        not running yet; they outlive the interpreter (pids in MAP.servers/). 0 once
        all listen, else 1 with a WebdedupWarning saying why, e.g. no binary: set
        WEBDEDUP_BIN (check=True: raises WebdedupError). 0 without a map."""
    def stop_servers(self, *, check: bool = False) -> int:
        """SIGTERM to the map's local servers, whoever started them (they save);
        0 when all stopped, else 1 with a WebdedupWarning (check=True: raises
        WebdedupError)."""
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

def cdx_dups(lines: Sequence[str], *, whole_lines: bool = False) -> List[str]:
    """The captures whose (urlkey, digest) appeared on an earlier line, as
    `webdedup cdx dups` prints them (`urlkey sha1:DIGEST timestamp`); with
    whole_lines=True the CDX lines themselves (the CLI's --lines). Lines that are
    not CDX are skipped with a WebdedupWarning naming them (lines[I])."""

def minhash_signature(text: str, ngram: Union[int, str] = "auto:5", hashes: int = 112, shingle_norm: str = "lower") -> Optional[List[int]]:
    """The MinHash signature of text: `hashes` 32-bit values (pinned: the same on
    every machine and version). ngram: "auto:N" (the default: "chars:N" for a text
    mostly in a script without spaces, else "words:N"), word n-grams (int, or
    "words:N") or "chars:N". shingle_norm: "lower" (digits kept) or "loose" (digits
    written 0, the default before). None when the text has no word after
    normalization."""

def minhash_band_keys(signature: Sequence[int], bands: int = 14, rows: int = 8) -> List[int]:
    """The LSH band keys (64-bit) of a signature: two documents sharing one are
    near-duplicate candidates (probability 1 - (1 - J**rows)**bands)."""

def minhash_jaccard(a: Sequence[int], b: Sequence[int]) -> float:
    """The Jaccard similarity estimated from two signatures of the same settings."""

class MinHashResult:
    """What MinHashWorker.process returns."""
    @property
    def data(self) -> bytes:
        """The kept documents, byte for byte as `webdedup minhash` writes them."""
    @property
    def text(self) -> str: ...
    @property
    def statuses(self) -> List[str]:
        """One per input document: K kept, D dropped (near-duplicate), B bad record."""
    @property
    def pairs(self) -> List[Tuple[str, str, Optional[float]]]:
        """Each dropped document: (its name, its original's name, the estimated
        Jaccard similarity or None when not known)."""
    @property
    def pairs_text(self) -> bytes:
        """The `.pairs` report lines of these documents."""
    @property
    def clusters(self) -> List[str]:
        """Each document's cluster, in input order (bad records have none): the
        name of its cluster's kept document, its own when kept, its original's
        when dropped (`webdedup minhash --clusters`)."""
    @property
    def clusters_text(self) -> bytes:
        """The `.clusters` lines of these documents (DOC TAB CLUSTER)."""
    @property
    def kept(self) -> int: ...
    @property
    def dropped(self) -> int: ...
    @property
    def problems(self) -> List[Tuple[int, str]]: ...

class MinHashWorker:
    def process(self, data: Union[str, bytes], source: str = "python") -> MinHashResult:
        """Judges the documents of data (verticals or JSON Lines) in order against
        the store. Documents without an id are named SOURCE:LINE; feed files in the
        command line's order, each named by its relative path, to get its bytes."""

class MinHashDedup:
    """Near-duplicate documents by MinHash LSH, as `webdedup minhash` decides them,
    on the embedded store, a store directory shared with `webdedup minhash --store
    DIR`, or the hash servers of a block map. Redis is refused."""
    def __init__(
        self,
        map: Optional[Union[str, PathLike]] = None,
        store_dir: Optional[Union[str, PathLike]] = None,
        *,
        shingles: Optional[str] = None,
        shingle_norm: Optional[str] = None,
        hashes: Optional[int] = None,
        bands: Optional[int] = None,
        rows: Optional[int] = None,
        verify: Optional[float] = None,
        verify_hashes: Optional[int] = None,
        store: Optional[str] = None,
        blocks: int = 1999,
        server_timeout: float = 120.0,
        input_format: Optional[str] = None,
        text_field: Optional[str] = None,
        id_field: Optional[str] = None,
        url_field: Optional[str] = None,
        title_field: Optional[str] = None,
        drop_bad_records: bool = False,
    ) -> None: ...
    def create_worker(self) -> MinHashWorker: ...
    def save(self) -> int:
        """Writes store_dir/minhash.kept and store_dir/store.snap; returns the keys."""
    def __len__(self) -> int: ...

class _ReadOptions(TypedDict, total=False):
    """How every batch function reads: verticals, JSON Lines, Parquet or WET
    files (input_format, sniffed per file by default) with the same field
    options as Dedup. Left out (or None): the command line's defaults."""
    input_format: Optional[str]
    text_field: Optional[str]
    id_field: Optional[str]
    url_field: Optional[str]
    title_field: Optional[str]
    drop_bad_records: bool

class _BatchOptions(_ReadOptions, total=False):
    """The keyword arguments every batch phase takes (the read options too);
    every phase of a run must be given the same ones (the work directory records
    them and refuses others). Left out (or None): the command line's defaults."""
    partitions: Optional[int]
    normalize: Optional[str]
    min_para_chars: Optional[int]
    doc_check: Optional[str]

class _BatchMinHashOptions(_BatchOptions, total=False):
    """minhash=True (with the settings of `webdedup minhash`: shingles "auto:N",
    "words:N" or "chars:N", shingle_norm "lower" or "loose", hashes, bands, rows,
    verify, verify_hashes; None: its defaults) is `webdedup batch --minhash`: the outputs of
    `webdedup minhash`; no store (batch_publish is exact mode's)."""
    minhash: bool
    shingles: Optional[str]
    shingle_norm: Optional[str]
    hashes: Optional[int]
    bands: Optional[int]
    rows: Optional[int]
    verify: Optional[float]
    verify_hashes: Optional[int]

def batch_hash(
    input: Union[str, PathLike], work: Union[str, PathLike], task_index: int, task_count: int,
    **options: Unpack[_BatchMinHashOptions],
) -> bool:
    """Batch phase 1 for one task; False if it had already finished."""

def batch_resolve(
    input: Union[str, PathLike], work: Union[str, PathLike], task_index: int, task_count: int,
    stage: str, *, store: Optional[Union[str, PathLike]] = None,
    **options: Unpack[_BatchMinHashOptions],
) -> bool:
    """Batch phase 2 for one task and stage (url-title, docs, paras; with minhash:
    bands on every task, then pick on task 0 only)."""

def batch_filter(
    input: Union[str, PathLike], work: Union[str, PathLike], output: Union[str, PathLike],
    task_index: int, task_count: int, *, dd: bool = False, compress: str = "auto",
    **options: Unpack[_BatchMinHashOptions],
) -> bool:
    """Batch phase 3 for one task: writes its outputs (compress: "auto" compresses
    JSON Lines outputs as their inputs' names say, verticals stay plain; or
    gzip, zstd, none)."""

def batch_publish(
    input: Union[str, PathLike], work: Union[str, PathLike], task_count: int,
    store: Union[str, PathLike], **options: Unpack[_BatchOptions],
) -> int:
    """Folds the run's new keys into the store directory; returns its key count."""

def batch_substr(
    input: Union[str, PathLike], output: Union[str, PathLike], *, length: int = 100,
    keep_first: bool = False, max_memory: Optional[int] = None, mark: bool = False,
    feedback: bool = False, restore: bool = False, threads: Optional[int] = None,
    **options: Unpack[_ReadOptions],
) -> Dict[str, int]:
    """`webdedup batch substr INPUT -o OUTPUT`: ExactSubstr's rule over every
    input at once (the flags as keywords: length, keep_first, max_memory in MB,
    mark, feedback for -f, restore for -r, threads for -t; the read options of
    the other batch functions). Returns the figures of its --json: files,
    documents, documents_changed, spans, bytes_struck, text_bytes, problems."""
