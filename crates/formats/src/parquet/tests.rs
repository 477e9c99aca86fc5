use super::*;
use crate::parquet_out::*;
use arrow_array::{LargeStringArray, StringArray};
use arrow_schema::Field;
use parquet::arrow::ArrowWriter;

/// A file of its own under the temporary directory (removed on drop).
struct TempFile(PathBuf);

impl TempFile {
    fn new(name: &str) -> TempFile {
        // Tests run as threads of one process: a number keeps their files apart.
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        TempFile(std::env::temp_dir().join(format!(
            "webdedup-parquet-{}-{n}-{name}.parquet",
            std::process::id()
        )))
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

const TEXTS: [Option<&str>; 5] = [
    Some("first line\nsecond line that is longer than twelve bytes"),
    None,
    Some("short"),
    Some("žluťoučký kůň\núpěl ďábelské ódy"),
    Some(""),
];

/// Writes `TEXTS` (text column of type `text_type`) and ids as one row group.
fn write_file(path: &Path, text_type: DataType) {
    let texts: ArrayRef = match text_type {
        DataType::Utf8 => Arc::new(StringArray::from(TEXTS.to_vec())),
        DataType::LargeUtf8 => Arc::new(LargeStringArray::from(TEXTS.to_vec())),
        DataType::Utf8View => Arc::new(StringViewArray::from(TEXTS.to_vec())),
        _ => unreachable!(),
    };
    let ids: ArrayRef = Arc::new(StringArray::from(vec!["a", "b", "c", "d", "e"]));
    let schema = Arc::new(Schema::new(vec![
        Field::new("text", text_type, true),
        Field::new("id", DataType::Utf8, false),
    ]));
    let batch = RecordBatch::try_new(schema.clone(), vec![texts, ids]).unwrap();
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(Default::default()))
        .build();
    let mut w = ArrowWriter::try_new(File::create(path).unwrap(), schema, Some(props)).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

fn first_slice(groups: &mut RowGroups) -> (Vec<u8>, Box<RowSlice>) {
    let chunk = groups.next_chunk().unwrap();
    let slice = chunk.extra.take::<RowSlice>().expect("a Parquet chunk");
    (chunk.data, slice)
}

fn encode_to_bytes(slice: &RowSlice, kept: KeptRows) -> Vec<u8> {
    let rg = encode_slice(slice, kept).unwrap();
    assert!(matches!(rg, RowGroupOut::Encoded(_)), "{rg:?}");
    let mut out = ParquetOut::create(Vec::new(), &slice.source).unwrap();
    out.append(rg).unwrap();
    out.finish().unwrap()
}

/// The text column of the batch converted to `to` (the file's type), as the
/// reader gave it before texts were read as views.
fn with_text_as(slice: &RowSlice, to: &DataType) -> RowSlice {
    let SliceBody::Rows { batch, texts } = &slice.body else {
        panic!("no rows");
    };
    let views = batch
        .column(0)
        .as_any()
        .downcast_ref::<StringViewArray>()
        .unwrap();
    let values: Vec<Option<&str>> = views.iter().collect();
    let col: ArrayRef = match to {
        DataType::Utf8 => Arc::new(StringArray::from(values)),
        DataType::LargeUtf8 => Arc::new(LargeStringArray::from(values)),
        _ => unreachable!(),
    };
    let schema = Arc::new(Schema::new(vec![
        Field::new("text", to.clone(), true),
        batch.schema().field(1).clone(),
    ]));
    RowSlice {
        source: slice.source.clone(),
        row_group: slice.row_group,
        first_row: slice.first_row,
        rows: slice.rows,
        body: SliceBody::Rows {
            batch: RecordBatch::try_new(schema, vec![col, batch.column(1).clone()]).unwrap(),
            texts: texts.clone(),
        },
    }
}

fn read_back(bytes: Vec<u8>) -> (DataType, Vec<Option<String>>, Vec<String>) {
    let f = TempFile::new("read-back");
    std::fs::write(&f.0, bytes).unwrap();
    let mut r = ParquetRecordBatchReaderBuilder::try_new(File::open(&f.0).unwrap())
        .unwrap()
        .build()
        .unwrap();
    let batch = r.next().unwrap().unwrap();
    let text = string_values(batch.column(0));
    let ids = string_values(batch.column(1))
        .into_iter()
        .map(Option::unwrap)
        .collect();
    (batch.column(0).data_type().clone(), text, ids)
}

fn string_values(col: &ArrayRef) -> Vec<Option<String>> {
    (0..col.len())
        .map(|i| value_at(std::slice::from_ref(col), i).map(|s| s.into_owned()))
        .collect()
}

#[test]
fn texts_are_read_as_views_and_written_back_with_the_bytes_of_the_files_own_type() {
    for (n, file_type) in [DataType::Utf8, DataType::LargeUtf8, DataType::Utf8View]
        .into_iter()
        .enumerate()
    {
        let f = TempFile::new(&format!("views-{n}"));
        write_file(&f.0, file_type.clone());
        let mut groups = RowGroups::open(&f.0, &JsonlOptions::default(), 1 << 20).unwrap();
        let (data, slice) = first_slice(&mut groups);
        let SliceBody::Rows { batch, texts } = &slice.body else {
            panic!("no rows");
        };
        // Read as views whatever the file's type; the chunk holds each text once.
        assert_eq!(
            batch.column(0).data_type(),
            &DataType::Utf8View,
            "{file_type}"
        );
        let read: Vec<Option<&str>> = texts
            .iter()
            .map(|r| {
                r.as_ref()
                    .map(|r| std::str::from_utf8(&data[r.clone()]).unwrap())
            })
            .collect();
        assert_eq!(read, TEXTS.to_vec(), "{file_type}");
        assert_eq!(
            data.len(),
            TEXTS.iter().flatten().map(|t| t.len()).sum::<usize>()
        );

        // Row "b" (null) and "c" dropped, "a" and "d" given new texts (one longer
        // than a view's inline 12 bytes, one not), "e" kept as read.
        let rendered = b"first line\nupel ody";
        let keep = [true, false, false, true, true];
        let new = [Some(0..10), None, None, Some(11..19), None];
        let kept = KeptRows {
            keep: &keep,
            text: rendered,
            new: &new,
        };
        let out = encode_to_bytes(&slice, kept);
        let (out_type, text, ids) = read_back(out.clone());
        assert_eq!(out_type, file_type);
        assert_eq!(
            text,
            vec![
                Some("first line".into()),
                Some("upel ody".into()),
                Some("".into())
            ]
        );
        assert_eq!(ids, ["a", "d", "e"]);
        // The same bytes as when the column was read (and rebuilt) in the file's own type.
        if file_type != DataType::Utf8View {
            let reference = with_text_as(&slice, &file_type);
            assert_eq!(out, encode_to_bytes(&reference, kept), "{file_type}");
            // Rows dropped, texts as read (the view column filtered, not rebuilt).
            let none = vec![None; 5];
            let as_read = KeptRows {
                keep: &[true, true, false, true, true],
                text: &[],
                new: &none,
            };
            assert_eq!(
                encode_to_bytes(&slice, as_read),
                encode_to_bytes(&reference, as_read),
                "{file_type}"
            );
        }
    }
}

#[test]
fn a_text_that_is_not_utf8_is_refused_not_written() {
    let f = TempFile::new("not-utf8");
    write_file(&f.0, DataType::Utf8);
    let mut groups = RowGroups::open(&f.0, &JsonlOptions::default(), 1 << 20).unwrap();
    let (_, slice) = first_slice(&mut groups);
    let keep = [true; 5];
    let new = [Some(0..2), None, None, None, None];
    let kept = KeptRows {
        keep: &keep,
        text: b"\xff\xfe",
        new: &new,
    };
    assert!(encode_slice(&slice, kept).is_err());
}

#[test]
fn row_groups_take_their_chunk_buffers_from_the_pool() {
    let f = TempFile::new("pool");
    write_file(&f.0, DataType::Utf8);
    let pool = BufferPool::new(4);
    let buf = Vec::with_capacity(1 << 16);
    let ptr = buf.as_ptr();
    pool.give(buf);
    let mut groups = RowGroups::open(&f.0, &JsonlOptions::default(), 1 << 20)
        .unwrap()
        .with_pool(pool);
    let (data, _) = first_slice(&mut groups);
    assert_eq!(data.as_ptr(), ptr, "the pooled buffer was not reused");
    assert_eq!(&data[..10], b"first line");
}
