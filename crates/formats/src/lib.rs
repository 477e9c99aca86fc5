//! Formats webdedup reads and writes.
//!
//! * [`input`]: the one input layer: files, directories and `-` listed, plain,
//!   gzip or zstd streams opened (detected by magic bytes).
//! * [`output`]: writing outputs atomically, optionally compressed.
//! * [`output_plan`]: one output per input file, never two inputs to one output.
//! * [`chunk`]: input cut into chunks of whole documents ([`chunk::ChunkReader`]),
//!   the buffer pool, the problems met on the way: no format named.
//! * [`doc`]: documents whatever the format: the events a format's reader sends
//!   ([`doc::DocSink`]); [`whole_para`] a vertical paragraph's words given whole.
//! * [`read`]: the one document reader: the formats ([`read::DocFormat`]), chosen
//!   or sniffed, and the dispatch to each.
//! * [`fields`]: which fields (JSON Lines) or columns (Parquet) hold the text, id,
//!   URL and title.
//! * [`jsonl`]: JSON Lines documents (text, id, URL, title fields).
//! * [`parquet`]: Parquet documents (a row each), read by row group;
//!   [`parquet_out`] writes them back with the input's schema.
//! * [`wet`]: Common Crawl WET files (a `conversion` record each), written back
//!   as valid WARC records.
//! * [`plain`]: documents whose text is plain lines (Parquet, WET).
//! * [`convert`]: verticals to JSON Lines (the shared corpus's rules), for samples
//!   and the equivalence tests.
//! * [`strike`]: byte spans struck from a text, the document written back in
//!   its format (the substring modes).
//! * [`texts`]: whole documents as id and text, for readers that want no
//!   paragraphs (SimHash, the studies).
//! * [`problems`]: input problems counted and reported, one `webdedup:` line each.
//! * [`summary`]: a run's summary line and JSON figures, one way for every command.
//! * [`vertical`]: the vertical format (one token per line, `<doc>` / `<p>`
//!   structures), with [`attrs`], the attributes of its tag lines.
//!
//! ```
//! // Every command's summary speaks the same way: thousands separators, plurals right.
//! use webdedup_formats::summary::{count, thousands};
//! assert_eq!(thousands(1234567), "1,234,567");
//! assert_eq!(count(1, "file", "files"), "1 file");
//! assert_eq!(count(2048, "line", "lines"), "2,048 lines");
//! ```

pub mod arc;
pub mod attrs;
pub mod cdx;
pub mod chunk;
pub mod convert;
pub mod doc;
pub mod fields;
pub mod input;
pub mod jsonl;
pub mod output;
pub mod output_plan;
pub mod parquet;
pub mod parquet_out;
pub mod plain;
pub mod problems;
pub mod read;
pub mod strike;
pub mod summary;
pub mod texts;
pub mod vertical;
pub mod warc;
pub mod warc_out;
pub mod wet;
pub mod whole_para;

pub use input::{list_inputs, open_file, open_input, Compression, InputFile, ListOptions};
