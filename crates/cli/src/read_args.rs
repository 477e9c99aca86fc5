//! How documents are read (`--input-format` and the fields of JSON Lines), shared
//! by `dedup`, `batch` and `check` (`simhash` and `similar` take the format and
//! field flags, [`DocFormatFlags`], alone).

use crate::flags::defs::DocFormatFlags;
use anyhow::Result;
use clap::Args;
use webdedup_formats::read::{ReadChoices, ReadSettings};

#[derive(Args, Debug, Clone)]
pub struct ReadArgs {
    #[command(flatten)]
    pub doc: DocFormatFlags,
    /// JSON Lines: the field holding the URL (default `url`, else `metadata.url`).
    #[arg(long, value_name = "FIELD")]
    pub url_field: Option<String>,
    /// JSON Lines: the field holding the title (default `title`, else
    /// `metadata.title`). Documents with both a URL and a title get the URL+title
    /// key; with `--doc-check url-title` the others always have their document key
    /// tested.
    #[arg(long, value_name = "FIELD")]
    pub title_field: Option<String>,
    /// Leave bad records (lines that are not a JSON object with a string text
    /// field) out of the outputs instead of passing them through unchanged; they
    /// are reported either way.
    #[arg(long)]
    pub drop_bad_records: bool,
}

impl ReadArgs {
    pub fn wikilinks(&self) -> bool {
        self.doc.input_format == "wikilinks"
    }

    /// The read settings, checked and completed by the library function the
    /// Python module calls too ([`ReadChoices::settings`]).
    pub fn settings(&self) -> Result<ReadSettings> {
        let format = match self.doc.input_format.as_str() {
            "wikilinks" => "vertical", // not read by document readers
            f => f,
        };
        ReadChoices {
            input_format: Some(format.to_owned()),
            url_field: self.url_field.clone(),
            title_field: self.title_field.clone(),
            drop_bad_records: self.drop_bad_records,
            ..self.doc.fields()
        }
        .settings()
        .map_err(anyhow::Error::msg)
    }
}
