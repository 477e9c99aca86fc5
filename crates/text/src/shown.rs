//! Input bytes quoted in messages, made safe for a terminal.
//!
//! Error messages quote input (a bad header line, a CDX line, a tag name, a file
//! name). Raw control characters in them (ESC and OSC sequences, carriage returns,
//! C1 controls) would be interpreted by the terminal that shows the message: they can
//! recolour or retitle it, hide text, or fake other lines. Every message that quotes
//! input goes through [`escape_controls`] before it is printed.

use std::borrow::Cow;

/// `text` with every control character (C0 including tab and newline, DEL, C1)
/// written as a Rust-style escape: `\x1b`, `\n`, `\u{9b}`. Everything else,
/// including non-ASCII text, is kept, so ordinary messages are unchanged (and not
/// copied).
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    escape(text, char::is_control)
}

/// `text` as a field of a tab-separated line: tabs, line breaks and backslashes
/// escaped (`\t`, `\n`, `\r`, `\\`), so a line is always one record with its
/// fields, and the escapes can be undone.
pub fn escape_tsv(text: &str) -> Cow<'_, str> {
    escape(text, |c| matches!(c, '\t' | '\n' | '\r' | '\\'))
}

/// `text` with the characters `needs` picks written as Rust-style escapes; not
/// copied when there is none.
fn escape(text: &str, needs: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !text.chars().any(&needs) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            c if !needs(c) => out.push(c),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x80 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        }
    }
    Cow::Owned(out)
}

/// Up to `max` bytes of `bytes` for a message: invalid UTF-8 replaced (U+FFFD),
/// control characters escaped ([`escape_controls`]), trailing whitespace (a line's
/// end) removed.
pub fn quote_bytes(bytes: &[u8], max: usize) -> String {
    let cut = &bytes[..bytes.len().min(max)];
    let text = String::from_utf8_lossy(cut);
    escape_controls(text.trim_end()).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped() {
        assert!(matches!(escape_controls("plain – text"), Cow::Borrowed(_)));
        assert_eq!(
            escape_controls("a\x1b[31mred\x1b]0;title\x07\r\n\t\x7f\u{9b}2J"),
            "a\\x1b[31mred\\x1b]0;title\\x07\\r\\n\\t\\x7f\\u{9b}2J"
        );
        assert_eq!(
            quote_bytes(b"WARC/\x1b[2J\xff  \r\n", 100),
            "WARC/\\x1b[2J\u{fffd}"
        );
        assert_eq!(quote_bytes(b"abcdef", 3), "abc");
    }

    #[test]
    fn tsv_fields_escape_separators_and_backslashes_only() {
        assert!(matches!(escape_tsv("a b\x1b"), Cow::Borrowed(_)));
        assert_eq!(escape_tsv("a\tb\r\nc\\d"), "a\\tb\\r\\nc\\\\d");
    }
}
