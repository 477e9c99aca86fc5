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
    if !text.chars().any(char::is_control) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x80 && c.is_control() => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
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
}
