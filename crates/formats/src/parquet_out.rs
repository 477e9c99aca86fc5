//! Parquet written back: a chunk's kept rows encoded as one row group of the
//! input's schema, the text column rebuilt from the kept paragraphs, or a row
//! group copied as stored (see [`parquet`](crate::parquet) for the rules).

use crate::parquet::{ParquetSource, RowSlice, SliceBody};
use arrow_array::builder::{make_view, BufferBuilder, GenericStringBuilder, NullBufferBuilder};
use arrow_array::{
    Array, ArrayRef, BooleanArray, GenericStringArray, OffsetSizeTrait, RecordBatch,
    RecordBatchOptions, StringViewArray,
};
use arrow_schema::DataType;
use arrow_select::filter::FilterBuilder;
use parquet::arrow::arrow_writer::{compute_leaves, ArrowColumnChunk};
use parquet::column::writer::ColumnCloseResult;
use parquet::file::writer::SerializedFileWriter;
use std::fmt;
use std::fs::File;
use std::io::{self, Write};
use std::ops::Range;
use std::sync::Arc;

/// A chunk's rows as they go to the output.
pub enum RowGroupOut {
    /// No row (all dropped).
    Empty,
    /// Encoded columns of one row group.
    Encoded(Vec<ArrowColumnChunk>),
    /// A row group of the input copied as stored: a damaged one, or one written
    /// whole and unchanged.
    Raw {
        source: Arc<ParquetSource>,
        row_group: usize,
    },
}

impl fmt::Debug for RowGroupOut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RowGroupOut::Empty => f.write_str("Empty"),
            RowGroupOut::Encoded(c) => write!(f, "Encoded({} columns)", c.len()),
            RowGroupOut::Raw { row_group, .. } => write!(f, "Raw({row_group})"),
        }
    }
}

fn err(e: impl fmt::Display) -> io::Error {
    io::Error::other(e.to_string())
}

/// Which rows of a slice go out, and with which texts: `keep` has one flag a
/// row; `new[i]` is row `i`'s new text (a range of `text`), or `None` for its
/// value as read.
#[derive(Clone, Copy, Debug)]
pub struct KeptRows<'a> {
    pub keep: &'a [bool],
    pub text: &'a [u8],
    pub new: &'a [Option<Range<usize>>],
}

impl KeptRows<'_> {
    /// The rows that go out, in order.
    fn rows(&self) -> impl Iterator<Item = usize> + Clone + '_ {
        (0..self.keep.len()).filter(|&i| self.keep[i])
    }
}

/// Rebuilds a text column from its kept rows, each with its new text or its
/// value as read. The result has the column's type as read.
fn rebuild_texts(col: &ArrayRef, kept: KeptRows) -> Option<ArrayRef> {
    fn generic<O: OffsetSizeTrait>(col: &ArrayRef, kept: KeptRows) -> Option<ArrayRef> {
        let a = col.as_any().downcast_ref::<GenericStringArray<O>>()?;
        let mut b = GenericStringBuilder::<O>::with_capacity(a.len(), kept.text.len());
        for i in kept.rows() {
            match &kept.new[i] {
                // The kept pieces of a valid UTF-8 text, cut at line breaks:
                // checked all the same, the SIMD way (a few percent of the run
                // with the standard library's check).
                Some(r) => {
                    b.append_value(simdutf8::basic::from_utf8(kept.text.get(r.clone())?).ok()?)
                }
                None if a.is_null(i) => b.append_null(),
                None => b.append_value(a.value(i)),
            }
        }
        Some(Arc::new(b.finish()))
    }
    match col.data_type() {
        DataType::Utf8 => generic::<i32>(col, kept),
        DataType::LargeUtf8 => generic::<i64>(col, kept),
        DataType::Utf8View => rebuild_views(col.as_any().downcast_ref()?, kept),
        _ => None,
    }
}

/// [`rebuild_texts`] of a `Utf8View` column (the text column as read, see
/// [`view_text_column`]): a text kept as read keeps its view into the pages
/// read (no copy); the new texts are copied once, together, into one more
/// data buffer. The writer encodes views as it encodes offsets: the same bytes.
fn rebuild_views(a: &StringViewArray, kept: KeptRows) -> Option<ArrayRef> {
    let fresh: usize = kept
        .rows()
        .filter_map(|i| kept.new[i].as_ref())
        .map(|r| r.len())
        .sum();
    let block = u32::try_from(a.data_buffers().len()).ok()?;
    let mut added = BufferBuilder::<u8>::new(fresh);
    let mut views = Vec::with_capacity(a.len());
    let mut nulls = NullBufferBuilder::new(a.len());
    for i in kept.rows() {
        match &kept.new[i] {
            Some(r) => {
                let piece = kept.text.get(r.clone())?;
                // Checked as `generic` above does: the view must be UTF-8.
                simdutf8::basic::from_utf8(piece).ok()?;
                let offset = u32::try_from(added.len()).ok()?;
                views.push(make_view(piece, block, offset));
                added.append_slice(piece);
                nulls.append_non_null();
            }
            None => {
                views.push(a.views()[i]);
                nulls.append(a.is_valid(i));
            }
        }
    }
    u32::try_from(added.len()).ok()?;
    let mut buffers = a.data_buffers().to_vec();
    buffers.push(added.finish());
    // SAFETY: every view is either one of `a`'s own (valid UTF-8 within `a`'s
    // buffers, which keep their indices: `added` is appended after them) or
    // made by `make_view` over `added[offset..offset + len]`, a piece checked
    // to be UTF-8 just before. Validating again would read every kept text.
    let out = unsafe { StringViewArray::new_unchecked(views.into(), buffers, nulls.finish()) };
    Some(Arc::new(out))
}

/// Encodes the kept rows of `slice`, the text column rebuilt where a row has a
/// new text, as one row group of the output. A damaged slice is copied as stored
/// unless none of it is kept, and so is a whole row group kept whole with its
/// texts as read. Runs in the worker threads.
pub fn encode_slice(slice: &RowSlice, kept: KeptRows) -> io::Result<RowGroupOut> {
    let KeptRows { keep, new, .. } = kept;
    let batch = match &slice.body {
        SliceBody::Lost => return Ok(RowGroupOut::Empty),
        SliceBody::Damaged => {
            return Ok(if keep.iter().any(|&k| k) {
                RowGroupOut::Raw {
                    source: slice.source.clone(),
                    row_group: slice.row_group,
                }
            } else {
                RowGroupOut::Empty
            })
        }
        SliceBody::Rows { batch, .. } => batch,
    };
    let count = keep.iter().filter(|&&k| k).count();
    if count == 0 {
        return Ok(RowGroupOut::Empty);
    }
    // The text column, when some text changed, is built anew from the kept rows:
    // filtering it first would only copy every text once more.
    let rebuilt = match (&slice.source.text, new.iter().any(Option::is_some)) {
        (Ok(t), true) => Some(*t),
        _ => None,
    };
    // A whole row group written as read (all its rows kept, no text changed; every
    // row group with `--mark`): its column chunks are copied as stored, not encoded
    // again.
    let whole_group = slice.rows as i64
        == slice
            .source
            .meta
            .metadata()
            .row_group(slice.row_group)
            .num_rows();
    if whole_group && count == batch.num_rows() && rebuilt.is_none() {
        return Ok(RowGroupOut::Raw {
            source: slice.source.clone(),
            row_group: slice.row_group,
        });
    }
    let filter = (count < batch.num_rows()).then(|| {
        FilterBuilder::new(&BooleanArray::from(keep.to_vec()))
            .optimize()
            .build()
    });
    let mut cols = Vec::with_capacity(batch.num_columns());
    for (i, col) in batch.columns().iter().enumerate() {
        cols.push(match &filter {
            _ if rebuilt == Some(i) => rebuild_texts(col, kept)
                .ok_or_else(|| err("internal: the text column could not be rebuilt"))?,
            Some(f) => f.filter(col).map_err(err)?,
            None => col.clone(),
        });
    }
    let out = RecordBatch::try_new_with_options(
        batch.schema(),
        cols,
        &RecordBatchOptions::new().with_row_count(Some(count)),
    )
    .map_err(err)?;
    let mut writers = slice
        .source
        .factory
        .create_column_writers(slice.row_group)
        .map_err(err)?;
    let schema = out.schema();
    let mut next = writers.iter_mut();
    for (field, col) in schema.fields().iter().zip(out.columns()) {
        for leaf in compute_leaves(field, col).map_err(err)? {
            next.next()
                .ok_or_else(|| err("internal: more leaves than column writers"))?
                .write(&leaf)
                .map_err(err)?;
        }
    }
    let chunks = writers
        .into_iter()
        .map(|w| w.close())
        .collect::<Result<Vec<_>, _>>()
        .map_err(err)?;
    Ok(RowGroupOut::Encoded(chunks))
}

/// An output Parquet file: row groups appended in order, the footer at the end.
pub struct ParquetOut<W: Write + Send> {
    writer: SerializedFileWriter<W>,
}

impl<W: Write + Send> ParquetOut<W> {
    /// Starts the output of `source`'s rows (its schema and properties).
    pub fn create(out: W, source: &ParquetSource) -> io::Result<Self> {
        let writer = SerializedFileWriter::new(
            out,
            source.meta.parquet_schema().root_schema_ptr(),
            source.props.clone(),
        )
        .map_err(err)?;
        Ok(ParquetOut { writer })
    }

    /// Appends one row group; returns the bytes it took.
    pub fn append(&mut self, rg: RowGroupOut) -> io::Result<u64> {
        let before = self.writer.bytes_written();
        match rg {
            RowGroupOut::Empty => return Ok(0),
            RowGroupOut::Encoded(chunks) => {
                let mut w = self.writer.next_row_group().map_err(err)?;
                for c in chunks {
                    c.append_to_row_group(&mut w).map_err(err)?;
                }
                w.close().map_err(err)?;
            }
            RowGroupOut::Raw { source, row_group } => {
                let rg = source.meta.metadata().row_group(row_group);
                // A file of its own: `parquet` reads a `File` by seeking it, and
                // clones of `source.file` share one offset with the reader thread,
                // which may be decoding the next row group of this file right now.
                let input = File::open(&source.path).map_err(|e| {
                    io::Error::new(
                        e.kind(),
                        format!("{}: cannot open: {e}", source.path.display()),
                    )
                })?;
                let mut w = self.writer.next_row_group().map_err(err)?;
                for c in rg.columns() {
                    let close = ColumnCloseResult {
                        bytes_written: c.compressed_size().max(0) as u64,
                        rows_written: rg.num_rows().max(0) as u64,
                        metadata: c.clone(),
                        bloom_filter: None,
                        column_index: None,
                        offset_index: None,
                    };
                    w.append_column(&input, close).map_err(err)?;
                }
                w.close().map_err(err)?;
            }
        }
        Ok((self.writer.bytes_written() - before) as u64)
    }

    /// Writes the footer; returns the underlying writer.
    pub fn finish(self) -> io::Result<W> {
        self.writer.into_inner().map_err(err)
    }
}
