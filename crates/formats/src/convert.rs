//! Verticals to JSON Lines, as the shared corpus's `web3-jsonl` was made (its
//! README's rules): one document a line, `{"id": ..., "text": ..., "metadata":
//! {...}}`, the text being the document's paragraphs one per line, a paragraph's
//! tokens joined by one space except where the vertical has glue (`<g/>`), which
//! joins them with none. So a paragraph of the vertical and a line of the text are
//! the same unit: the project's tests and samples compare the two formats with it.
//!
//! `id` is the `id` attribute (absent: no `id` field); every other attribute goes
//! to `metadata` in its order, XML-unescaped. The JSON is written as Python's
//! `json.dumps(..., ensure_ascii=False)` writes it (`", "` and `": "`).
//! Malformed verticals are read by the project's one vertical reader, whose rules
//! and reports apply (an unclosed `<doc>` is closed where the reader closes it).

use crate::attrs::{attr_pairs, unescape};
use crate::chunk::{ChunkReader, Issue};
use crate::doc::{DocMeta, DocSink};
use crate::read::DocFormat;
use std::io::{self, Read, Write};
use std::ops::Range;

/// Collects one document at a time and writes it as a JSON line.
struct ToJsonl<'w, W> {
    out: &'w mut W,
    meta: Vec<(String, String)>,
    text: String,
    para_has_word: bool,
    docs: u64,
    issues: Vec<Issue>,
    error: Option<io::Error>,
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).expect("a string always serializes")
}

impl<W: Write> DocSink for ToJsonl<'_, W> {
    fn doc_start(&mut self, _header: Range<usize>, _line: u64, meta: &DocMeta<'_>) {
        self.meta.clear();
        self.text.clear();
        if let DocMeta::Attrs(attrs) = meta {
            for (k, v) in attr_pairs(attrs) {
                self.meta.push((
                    String::from_utf8_lossy(k).into_owned(),
                    unescape(v).into_owned(),
                ));
            }
        }
    }
    fn structure(&mut self, _range: Range<usize>) {}
    fn para_start(&mut self, _start: usize, _line: u64, _implicit: bool) {
        if !self.text.is_empty() {
            self.text.push('\n');
        }
        self.para_has_word = false;
    }
    fn word(&mut self, word: &[u8], glued: bool, _line: u64) {
        if self.para_has_word && !glued {
            self.text.push(' ');
        }
        self.text.push_str(&String::from_utf8_lossy(word));
        self.para_has_word = true;
    }
    fn para_end(&mut self, _end: usize) {}
    fn doc_end(&mut self, _close: Option<Range<usize>>) {
        let mut line = String::from("{");
        if let Some((_, id)) = self.meta.iter().find(|(k, _)| k == "id") {
            line.push_str(&format!("\"id\": {}, ", json_str(id)));
        }
        line.push_str(&format!(
            "\"text\": {}, \"metadata\": {{",
            json_str(&self.text)
        ));
        let mut first = true;
        for (k, v) in self.meta.iter().filter(|(k, _)| k != "id") {
            if !first {
                line.push_str(", ");
            }
            first = false;
            line.push_str(&format!("{}: {}", json_str(k), json_str(v)));
        }
        line.push_str("}}\n");
        self.docs += 1;
        if self.error.is_none() {
            if let Err(e) = self.out.write_all(line.as_bytes()) {
                self.error = Some(e);
            }
        }
    }
    fn issue(&mut self, issue: Issue) {
        self.issues.push(issue);
    }
}

/// What a conversion read.
#[derive(Debug, Default)]
pub struct ConvertStats {
    pub documents: u64,
    /// Problems of the vertical input (its reader's rules), with their lines.
    pub issues: Vec<Issue>,
}

/// Converts a (decompressed) vertical stream to JSON Lines (see the module docs).
pub fn vertical_to_jsonl(input: impl Read, out: &mut impl Write) -> io::Result<ConvertStats> {
    let mut sink = ToJsonl {
        out,
        meta: Vec::new(),
        text: String::new(),
        para_has_word: false,
        docs: 0,
        issues: Vec::new(),
        error: None,
    };
    let format = DocFormat::Vertical;
    let mut chunks = ChunkReader::new(input);
    while let Some(chunk) = chunks.next_chunk() {
        format.parse(&chunk, &mut sink);
        if let Some(e) = sink.error.take() {
            return Err(e);
        }
    }
    Ok(ConvertStats {
        documents: sink.docs,
        issues: sink.issues,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paragraphs_become_lines_and_glue_joins_tokens() {
        let v = "<doc id=\"d&amp;1\" url=\"https://x/?a=1&amp;b\" title=\"T &quot;q&quot;\" lang=\"en\">\n<p>\nSource\ncode\n<g/>\n:\nLib/x.py\n</p>\n<p>\nSee\nalso\n</p>\n</doc>\n<doc url=\"u\">\n</doc>\n";
        let mut out = Vec::new();
        let stats = vertical_to_jsonl(v.as_bytes(), &mut out).unwrap();
        assert_eq!(stats.documents, 2);
        assert!(stats.issues.is_empty());
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"id\": \"d&1\", \"text\": \"Source code: Lib/x.py\\nSee also\", \"metadata\": {\"url\": \"https://x/?a=1&b\", \"title\": \"T \\\"q\\\"\", \"lang\": \"en\"}}\n\
             {\"text\": \"\", \"metadata\": {\"url\": \"u\"}}\n"
        );
    }
}
