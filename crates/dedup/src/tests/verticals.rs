//! Hand-made vertical documents for tests: this crate's decision-table tests and
//! the CLI's end-to-end tests (`crates/cli/tests/near_feedback.rs` includes
//! this file) build their inputs with the same two functions.

/// A paragraph of the given words (one token per line).
pub fn para(words: &str) -> String {
    format!(
        "<p>\n{}\n</p>\n",
        words.split(' ').collect::<Vec<_>>().join("\n")
    )
}

/// A document with the URL `url`, the title `t` and the given paragraphs.
pub fn doc(url: &str, body: &[String]) -> String {
    format!("<doc url=\"{url}\" title=\"t\">\n{}</doc>\n", body.concat())
}
