//! Parquet documents (FineWeb, most Hugging Face datasets): one document a row.
//!
//! * **Document**: a row. Its text is the string column `--text-field` (default
//!   `text`; a top-level column), its id, URL and title the columns the JSON Lines
//!   options name (dotted paths reach into struct columns; numbers are taken as
//!   written). Paragraphs are the lines of the text ([`plain`](crate::plain)), so a
//!   text gives the same paragraphs as in JSON Lines.
//! * **Chunk**: a row group, read on its own (a file is never held whole in
//!   memory); a row group whose uncompressed size is above `--chunk-bytes` is cut
//!   into that many equal slices of rows. Chunks depend on the file and
//!   `--chunk-bytes` only, so outputs are the same for any number of threads.
//! * **Written back** ([`parquet_out`](crate::parquet_out)): the same Parquet schema
//!   (the input's own, not one derived again from Arrow types), the input's
//!   key-value metadata, each column compressed with the input's codec (ZSTD where
//!   the input's cannot be written) and dictionary-encoded where the input's was;
//!   chunk statistics and no page indexes (a row group copied as stored has
//!   none); one row group per chunk, the rows in input order, dropped rows left out, the
//!   text column rebuilt from the kept paragraphs, every other column's values
//!   unchanged. A row group written whole with all its texts as read (and every
//!   row group with `--mark`) is copied as stored, its column chunks byte for
//!   byte. Chunks are encoded by the worker threads; the output file only
//!   appends encoded row groups, in order.
//!
//! Bad input: a file that is not Parquet (or whose footer is damaged) cannot be
//! read at all (no output, as any unreadable input). A missing text column, a text
//! column that is not a string, or a null text make their rows bad records: each is
//! reported with its row, counted, and written as it is unless
//! `--drop-bad-records`. A row group that cannot be decoded (a damaged page, a
//! codec not built in) is reported with its rows; when none of its rows was read
//! yet it is copied to the output as stored (unless `--drop-bad-records`), else
//! (a damaged page in a later slice of a cut row group) the rows from that slice
//! on are lost, and reported as lost. Rows are numbered from 1 in messages.

use crate::chunk::{BufferPool, Chunk, Extra, Issue, IssueKind};
use crate::doc::{DocMeta, DocSink};
use crate::fields::{FieldPath, JsonlOptions};
use arrow_array::{
    Array, ArrayRef, GenericStringArray, Int16Array, Int32Array, Int64Array, Int8Array,
    OffsetSizeTrait, RecordBatch, StringViewArray, StructArray, UInt16Array, UInt32Array,
    UInt64Array, UInt8Array,
};
use arrow_schema::{DataType, Fields, Schema};
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReader,
    ParquetRecordBatchReaderBuilder,
};
use parquet::arrow::arrow_writer::ArrowRowGroupWriterFactory;
use parquet::basic::Compression;
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterPropertiesPtr};
use parquet::file::writer::SerializedFileWriter;
use std::borrow::Cow;
use std::fmt;
use std::fs::File;
use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The first bytes of every Parquet file.
pub const MAGIC: &[u8] = b"PAR1";

/// One input file: its metadata, where its fields are, and how to write its rows.
/// Shared by the file's chunks.
pub struct ParquetSource {
    pub(crate) path: PathBuf,
    pub(crate) file: File,
    pub(crate) meta: ArrowReaderMetadata,
    /// How its row groups are read: `meta` with the text column decoded as
    /// `Utf8View` (see [`view_text_column`]).
    read_meta: ArrowReaderMetadata,
    /// The text column (a top-level column index), or why its rows are bad records.
    pub(crate) text: Result<usize, String>,
    id: Vec<Vec<usize>>,
    url: Vec<Vec<usize>>,
    title: Vec<Vec<usize>>,
    drop_bad: bool,
    /// Column writers of the output, with the input's schema and codecs.
    pub(crate) factory: ArrowRowGroupWriterFactory,
    pub(crate) props: WriterPropertiesPtr,
}

impl fmt::Debug for ParquetSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ParquetSource")
            .field("path", &self.path)
            .field("text", &self.text)
            .finish_non_exhaustive()
    }
}

fn invalid(path: &Path, what: impl fmt::Display) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("{}: {what}", path.display()),
    )
}

/// The indices of a dotted path through struct fields, if every step exists.
fn resolve(fields: &Fields, path: &FieldPath) -> Option<Vec<usize>> {
    let mut idx = Vec::new();
    let mut fields = fields;
    for (n, name) in path.0.iter().enumerate() {
        let (i, f) = fields.find(name)?;
        idx.push(i);
        if n + 1 < path.0.len() {
            match f.data_type() {
                DataType::Struct(children) => fields = children,
                _ => return None,
            }
        }
    }
    Some(idx)
}

fn is_string(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}

/// The metadata to read the file with: the text column (`text`) decoded as
/// `Utf8View`, every other column as the file says. Views point into the
/// decompressed pages (and the dictionary page) instead of copying every text
/// into one grown buffer first: the chunk copies each text once anyway
/// ([`RowGroups::rows_chunk`]), and the output keeps the views of the texts
/// kept as read ([`rebuild_views`]); the writer encodes a view column with the
/// same bytes as the file's own type. Falls back to the file's types if the
/// reader refuses the hint.
fn view_text_column(meta: &ArrowReaderMetadata, text: usize) -> ArrowReaderMetadata {
    let schema = meta.schema();
    if schema.field(text).data_type() == &DataType::Utf8View {
        return meta.clone();
    }
    let fields: Vec<_> = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| {
            if i == text {
                Arc::new(f.as_ref().clone().with_data_type(DataType::Utf8View))
            } else {
                f.clone()
            }
        })
        .collect();
    let hinted = Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
    ArrowReaderMetadata::try_new(
        meta.metadata().clone(),
        ArrowReaderOptions::new().with_schema(hinted),
    )
    .unwrap_or_else(|_| meta.clone())
}

/// The output's writer properties: the input's codec per column (from its first
/// row group; ZSTD where the input's codec is not built in or there are no row
/// groups), dictionaries where the input has them, the input's key-value metadata.
/// The text column (`text`, a top-level column) is never dictionary-encoded:
/// texts are unique, and trying a dictionary of them (hashing every text before
/// falling back) cost more than the rest of the write.
fn writer_properties(meta: &ArrowReaderMetadata, text: Option<&str>) -> WriterProperties {
    let md = meta.metadata();
    // Chunk statistics, no page indexes: a damaged row group copied as stored
    // has none, and the writer cannot mix row groups with and without them.
    let mut b = WriterProperties::builder()
        .set_statistics_enabled(EnabledStatistics::Chunk)
        .set_offset_index_disabled(true)
        .set_compression(Compression::ZSTD(Default::default()))
        .set_key_value_metadata(md.file_metadata().key_value_metadata().cloned());
    if let Some(rg) = md.row_groups().first() {
        for c in rg.columns() {
            let codec = match c.compression() {
                c @ (Compression::UNCOMPRESSED
                | Compression::SNAPPY
                | Compression::GZIP(_)
                | Compression::ZSTD(_)) => c,
                _ => Compression::ZSTD(Default::default()),
            };
            let is_text = text.is_some_and(|t| c.column_path().parts() == [t]);
            b = b
                .set_column_compression(c.column_path().clone(), codec)
                .set_column_dictionary_enabled(
                    c.column_path().clone(),
                    c.dictionary_page_offset().is_some() && !is_text,
                );
        }
    }
    b.build()
}

impl ParquetSource {
    /// Opens `path` (a regular Parquet file): reads its footer and finds the
    /// columns `opts` names.
    pub fn open(path: &Path, opts: &JsonlOptions) -> io::Result<ParquetSource> {
        let file = File::open(path)?;
        let meta = ArrowReaderMetadata::load(&file, ArrowReaderOptions::new())
            .map_err(|e| invalid(path, format_args!("not a readable Parquet file: {e}")))?;
        let schema = meta.schema().clone();
        let text = match opts.text.0.as_slice() {
            [name] => match schema.fields().find(name) {
                Some((i, f)) if is_string(f.data_type()) => Ok(i),
                Some((_, f)) => Err(format!(
                    "column '{}' is not a string ({})",
                    opts.text,
                    f.data_type()
                )),
                None => Err(format!("no column '{}'", opts.text)),
            },
            _ => Err(format!(
                "text field '{}': a text inside a struct column is not supported (name a top-level column)",
                opts.text
            )),
        };
        let paths = |v: &[FieldPath]| {
            v.iter()
                .filter_map(|p| resolve(schema.fields(), p))
                .collect::<Vec<_>>()
        };
        let text_name = text.as_ref().ok().map(|&i| schema.field(i).name().as_str());
        let props = Arc::new(writer_properties(&meta, text_name));
        let read_meta = match text {
            Ok(i) => view_text_column(&meta, i),
            Err(_) => meta.clone(),
        };
        // The factory needs a file writer only to learn its schema and properties.
        let probe = SerializedFileWriter::new(
            io::sink(),
            meta.parquet_schema().root_schema_ptr(),
            props.clone(),
        )
        .map_err(|e| invalid(path, format_args!("cannot prepare its output: {e}")))?;
        let factory = ArrowRowGroupWriterFactory::new(&probe, schema.clone());
        Ok(ParquetSource {
            path: path.to_owned(),
            file,
            text,
            id: paths(&opts.id),
            url: paths(&opts.url),
            title: paths(&opts.title),
            drop_bad: opts.drop_bad,
            factory,
            props,
            meta,
            read_meta,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Rows in the file.
    pub fn rows(&self) -> u64 {
        self.meta.metadata().file_metadata().num_rows().max(0) as u64
    }
}

/// What a chunk of a Parquet file holds.
#[derive(Debug)]
pub enum SliceBody {
    /// Decoded rows; `texts[i]` is row `i`'s text in the chunk's data, or `None`
    /// (a bad record: the text column is missing or not a string, or the value
    /// is null).
    Rows {
        batch: RecordBatch,
        texts: Vec<Option<Range<usize>>>,
    },
    /// A row group that could not be decoded, before any of its rows was read:
    /// its rows are bad records, copied to the output as stored.
    Damaged,
    /// Rows that could not be decoded after others of their row group were read:
    /// lost (reported).
    Lost,
}

/// A chunk's rows: a row group or a slice of one.
#[derive(Debug)]
pub struct RowSlice {
    pub source: Arc<ParquetSource>,
    pub row_group: usize,
    /// Number of its first row in the file (from 1).
    pub first_row: u64,
    pub rows: usize,
    pub body: SliceBody,
}

/// Reads a Parquet file in chunks (see the module docs).
pub struct RowGroups {
    source: Arc<ParquetSource>,
    chunk_bytes: usize,
    /// (row group, first row (from 1), rows, slices) of the row groups with rows.
    groups: Vec<(usize, u64, usize, usize)>,
    next: usize,
    /// The row group being read: its reader, rows read so far, slices emitted.
    current: Option<(ParquetRecordBatchReader, usize, usize)>,
    emitted: bool,
    done: bool,
    /// Where chunk buffers come from (and go back to once written), if set.
    pool: Option<Arc<BufferPool>>,
}

impl RowGroups {
    pub fn open(path: &Path, opts: &JsonlOptions, chunk_bytes: usize) -> io::Result<RowGroups> {
        let source = Arc::new(ParquetSource::open(path, opts)?);
        let mut groups = Vec::new();
        let mut first_row = 1u64;
        for (g, rg) in source.meta.metadata().row_groups().iter().enumerate() {
            let rows = rg.num_rows().max(0) as usize;
            if rows == 0 {
                continue;
            }
            let bytes = match rg.total_byte_size() {
                n if n > 0 => n as usize,
                _ => rg.compressed_size().max(0) as usize,
            };
            let slices = bytes.div_ceil(chunk_bytes.max(1)).clamp(1, rows);
            groups.push((g, first_row, rows, slices));
            first_row += rows as u64;
        }
        Ok(RowGroups {
            source,
            chunk_bytes,
            groups,
            next: 0,
            current: None,
            emitted: false,
            done: false,
            pool: None,
        })
    }

    /// Takes the buffers of new chunks from `pool`: each row group's texts are
    /// copied into a buffer already faulted in, not a fresh mapping.
    pub fn with_pool(mut self, pool: Arc<BufferPool>) -> Self {
        self.pool = Some(pool);
        self
    }

    pub fn source(&self) -> &Arc<ParquetSource> {
        &self.source
    }

    /// The next chunk, or None after the last one.
    pub fn next_chunk(&mut self) -> Option<Chunk> {
        if self.done {
            return None;
        }
        let Some(&(g, first, rows, slices)) = self.groups.get(self.next) else {
            self.done = true;
            // A file without rows still makes one (empty) last chunk: its output.
            return (!self.emitted).then(|| {
                self.emitted = true;
                self.chunk(0, 1, 0, SliceBody::Lost, Vec::new(), true)
            });
        };
        let last_group = self.next + 1 == self.groups.len();
        let per_slice = rows.div_ceil(slices);
        if self.current.is_none() {
            let reader = match self.source.file.try_clone() {
                Ok(f) => ParquetRecordBatchReaderBuilder::new_with_metadata(
                    f,
                    self.source.read_meta.clone(),
                )
                .with_row_groups(vec![g])
                .with_batch_size(per_slice)
                .build()
                .map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            };
            match reader {
                Ok(r) => self.current = Some((r, 0, 0)),
                Err(e) => return Some(self.failed(g, first, rows, 0, e, last_group)),
            }
        }
        let (reader, done_rows, _) = self.current.as_mut().expect("set above");
        let done_rows = *done_rows;
        match reader.next() {
            Some(Ok(batch)) if batch.num_rows() > 0 => {
                let n = batch.num_rows().min(rows - done_rows);
                let batch = batch.slice(0, n);
                let cur = self.current.as_mut().expect("set above");
                cur.1 += n;
                cur.2 += 1;
                let finished = cur.1 >= rows;
                if finished {
                    self.current = None;
                    self.next += 1;
                }
                Some(self.rows_chunk(g, first + done_rows as u64, batch, finished && last_group))
            }
            Some(Err(e)) => Some(self.failed(g, first, rows, done_rows, e.to_string(), last_group)),
            _ => Some(self.failed(
                g,
                first,
                rows,
                done_rows,
                "fewer rows than its metadata says".into(),
                last_group,
            )),
        }
    }

    /// The chunk of a row group (from row `done` on) that could not be decoded.
    fn failed(
        &mut self,
        g: usize,
        first: u64,
        rows: usize,
        done: usize,
        why: String,
        last_group: bool,
    ) -> Chunk {
        self.current = None;
        self.next += 1;
        let (from, to) = (first + done as u64, first + rows as u64 - 1);
        let (body, outcome) = if done == 0 {
            let outcome = if self.source.drop_bad {
                "left out (--drop-bad-records)"
            } else {
                "copied to the output as stored"
            };
            (SliceBody::Damaged, outcome)
        } else {
            (SliceBody::Lost, "these rows are lost")
        };
        let issue = Issue {
            line: from,
            kind: IssueKind::Damaged(format!(
                "row group {g} (rows {from}-{to}) cannot be decoded ({why}): {outcome}"
            )),
        };
        let n = if done == 0 { rows } else { 0 };
        self.chunk(g, from, n, body, vec![issue], last_group)
    }

    fn rows_chunk(&mut self, g: usize, first_row: u64, batch: RecordBatch, last: bool) -> Chunk {
        let mut data = self.pool.as_ref().map(|p| p.take().0).unwrap_or_default();
        let mut texts = Vec::with_capacity(batch.num_rows());
        if let Ok(col) = &self.source.text {
            let col = batch.column(*col);
            data.reserve(text_bytes(col));
            let mut push = |v: Option<&str>| {
                texts.push(v.map(|s| {
                    let start = data.len();
                    data.extend_from_slice(s.as_bytes());
                    start..data.len()
                }))
            };
            match col.data_type() {
                DataType::Utf8 => strings::<i32>(col, &mut push),
                DataType::LargeUtf8 => strings::<i64>(col, &mut push),
                _ => {
                    if let Some(a) = col.as_any().downcast_ref::<StringViewArray>() {
                        for i in 0..a.len() {
                            push(a.is_valid(i).then(|| a.value(i)));
                        }
                    }
                }
            }
        }
        texts.resize(batch.num_rows(), None);
        let rows = batch.num_rows();
        let mut c = self.chunk(
            g,
            first_row,
            rows,
            SliceBody::Rows { batch, texts },
            Vec::new(),
            last,
        );
        c.data = data;
        c
    }

    fn chunk(
        &mut self,
        g: usize,
        first_row: u64,
        rows: usize,
        body: SliceBody,
        issues: Vec<Issue>,
        last: bool,
    ) -> Chunk {
        self.emitted = true;
        self.done = last;
        Chunk {
            data: Vec::new(),
            first_line: first_row,
            offset: 0,
            skipped_lines: Vec::new(),
            issues,
            last,
            dropped_bytes: 0,
            extra: Extra::new(RowSlice {
                source: self.source.clone(),
                row_group: g,
                first_row,
                rows,
                body,
            }),
        }
    }

    /// `--chunk-bytes` as given (for messages and tests).
    pub fn chunk_bytes(&self) -> usize {
        self.chunk_bytes
    }
}

/// Bytes of the texts of a string column (all three string types): what
/// the chunk's buffer takes. (A view column's buffers may hold more: whole pages,
/// shared with the other slices of its row group.)
fn text_bytes(col: &ArrayRef) -> usize {
    fn offsets<O: OffsetSizeTrait>(col: &ArrayRef) -> Option<usize> {
        let a = col.as_any().downcast_ref::<GenericStringArray<O>>()?;
        let o = a.value_offsets();
        Some((o[o.len() - 1] - o[0]).as_usize())
    }
    match col.data_type() {
        DataType::Utf8 => offsets::<i32>(col),
        DataType::LargeUtf8 => offsets::<i64>(col),
        DataType::Utf8View => col
            .as_any()
            .downcast_ref::<StringViewArray>()
            .map(|a| a.views().iter().map(|&v| v as u32 as usize).sum()),
        _ => None,
    }
    .unwrap_or(0)
}

fn strings<O: OffsetSizeTrait>(col: &ArrayRef, push: &mut impl FnMut(Option<&str>)) {
    if let Some(a) = col.as_any().downcast_ref::<GenericStringArray<O>>() {
        for i in 0..a.len() {
            push(a.is_valid(i).then(|| a.value(i)));
        }
    }
}

/// The arrays along a struct path (outermost first), for reading one field of
/// every row.
fn path_arrays(batch: &RecordBatch, path: &[usize]) -> Option<Vec<ArrayRef>> {
    let (&first, rest) = path.split_first()?;
    let mut arrays = vec![batch.columns().get(first)?.clone()];
    for &i in rest {
        let parent = arrays.last()?.as_any().downcast_ref::<StructArray>()?;
        let child = parent.columns().get(i)?.clone();
        arrays.push(child);
    }
    Some(arrays)
}

/// Row `row` of the field at the end of `arrays` as text: strings as they are,
/// integers as written; anything else (and nulls) is missing.
fn value_at(arrays: &[ArrayRef], row: usize) -> Option<Cow<'_, str>> {
    if arrays.iter().any(|a| a.is_null(row)) {
        return None;
    }
    let a = arrays.last()?.as_any();
    macro_rules! ints {
        ($($t:ty),*) => {$(
            if let Some(a) = a.downcast_ref::<$t>() {
                return Some(Cow::Owned(a.value(row).to_string()));
            }
        )*};
    }
    if let Some(s) = a.downcast_ref::<GenericStringArray<i32>>() {
        return Some(Cow::Borrowed(s.value(row)));
    }
    if let Some(s) = a.downcast_ref::<GenericStringArray<i64>>() {
        return Some(Cow::Borrowed(s.value(row)));
    }
    if let Some(s) = a.downcast_ref::<StringViewArray>() {
        return Some(Cow::Borrowed(s.value(row)));
    }
    ints!(
        Int64Array,
        Int32Array,
        Int16Array,
        Int8Array,
        UInt64Array,
        UInt32Array,
        UInt16Array,
        UInt8Array
    );
    None
}

/// The first candidate field with a value in `row`.
fn first_value<'a>(fields: &'a [Vec<ArrayRef>], row: usize) -> Option<Cow<'a, str>> {
    fields.iter().find_map(|f| value_at(f, row))
}

/// Walks the rows of `chunk` (a chunk of [`RowGroups`]), telling `sink` about
/// documents.
pub fn parse_chunk<S: DocSink>(chunk: &Chunk, sink: &mut S) {
    for issue in &chunk.issues {
        sink.issue(issue.clone());
    }
    let Some(slice) = chunk.extra.get::<RowSlice>() else {
        return;
    };
    let src = &slice.source;
    let (batch, texts) = match &slice.body {
        SliceBody::Lost => return,
        SliceBody::Damaged => {
            for i in 0..slice.rows {
                sink.passthrough(0..0, slice.first_row + i as u64, src.drop_bad);
            }
            return;
        }
        SliceBody::Rows { batch, texts } => (batch, texts),
    };
    let arrays = |paths: &[Vec<usize>]| {
        paths
            .iter()
            .filter_map(|p| path_arrays(batch, p))
            .collect::<Vec<_>>()
    };
    let (ids, urls, titles) = (arrays(&src.id), arrays(&src.url), arrays(&src.title));
    let data = &chunk.data[..];
    let mut pos = 0;
    for (i, text) in texts.iter().enumerate() {
        let row = slice.first_row + i as u64;
        match text {
            Some(r) => {
                let (id, url, title) = (
                    first_value(&ids, i),
                    first_value(&urls, i),
                    first_value(&titles, i),
                );
                let meta = DocMeta::Fields {
                    id: id.as_deref(),
                    url: url.as_deref(),
                    title: title.as_deref(),
                };
                crate::plain::document(data, r.clone(), r.clone(), row, &meta, sink);
                pos = r.end;
            }
            None => {
                let reason = match &src.text {
                    Err(why) => why.clone(),
                    Ok(_) => "the text is null".to_string(),
                };
                sink.issue(Issue {
                    line: row,
                    kind: IssueKind::BadRecord {
                        reason,
                        dropped: src.drop_bad,
                    },
                });
                sink.passthrough(pos..pos, row, src.drop_bad);
            }
        }
    }
}

#[cfg(test)]
mod tests;
