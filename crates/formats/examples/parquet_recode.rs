//! Rewrites Parquet files with another codec, everything else as in the input
//! (rows and their order, row group sizes, which columns have dictionaries), so a
//! benchmark can compare formats at equal compression: `bench/formats.sh` times
//! the shipped zstd files against JSON Lines `.zst`, and these uncompressed
//! copies against decompressed JSON Lines.
//!
//! Usage: `parquet_recode CODEC IN OUT` with CODEC `none`, `snappy` or `zstd`;
//! IN and OUT files, or directories (every `*.parquet` under IN, same relative
//! paths under OUT).

use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use std::error::Error;
use std::fs::{self, File};
use std::path::{Path, PathBuf};

type Result<T> = std::result::Result<T, Box<dyn Error>>;

fn recode(codec: Compression, input: &Path, output: &Path) -> Result<()> {
    let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(input)?)
        .map_err(|e| format!("{}: {e}", input.display()))?;
    let meta = reader.metadata().clone();
    let mut props = WriterProperties::builder()
        .set_compression(codec)
        .set_key_value_metadata(meta.file_metadata().key_value_metadata().cloned());
    if let Some(rg) = meta.row_groups().first() {
        props = props.set_max_row_group_row_count(Some(rg.num_rows().max(1) as usize));
        for c in rg.columns() {
            props = props.set_column_dictionary_enabled(
                c.column_path().clone(),
                c.dictionary_page_offset().is_some(),
            );
        }
    }
    let schema = reader.schema().clone();
    let reader = reader.build()?;
    if let Some(dir) = output.parent() {
        fs::create_dir_all(dir)?;
    }
    let mut writer = ArrowWriter::try_new(File::create(output)?, schema, Some(props.build()))?;
    for batch in reader {
        writer.write(&batch?)?;
    }
    writer.close()?;
    Ok(())
}

fn parquet_files(dir: &Path, found: &mut Vec<PathBuf>) -> Result<()> {
    let mut entries = fs::read_dir(dir)?.collect::<std::io::Result<Vec<_>>>()?;
    entries.sort_by_key(|e| e.path());
    for e in entries {
        let path = e.path();
        if path.is_dir() {
            parquet_files(&path, found)?;
        } else if path.extension().is_some_and(|x| x == "parquet") {
            found.push(path);
        }
    }
    Ok(())
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [codec, input, output] = args.as_slice() else {
        return Err("usage: parquet_recode none|snappy|zstd IN OUT".into());
    };
    let codec = match codec.as_str() {
        "none" => Compression::UNCOMPRESSED,
        "snappy" => Compression::SNAPPY,
        "zstd" => Compression::ZSTD(ZstdLevel::default()),
        other => return Err(format!("unknown codec '{other}' (none, snappy, zstd)").into()),
    };
    let (input, output) = (Path::new(input), Path::new(output));
    if input.is_dir() {
        let mut files = Vec::new();
        parquet_files(input, &mut files)?;
        for f in files {
            recode(codec, &f, &output.join(f.strip_prefix(input)?))?;
        }
        Ok(())
    } else {
        recode(codec, input, output)
    }
}
