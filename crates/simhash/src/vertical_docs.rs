//! A small reader of `<doc ...>` documents in the vertical format, for fingerprinting.
//! (Isolated so that it can be replaced by `webdedup_formats::vertical` once that
//! lands.)
//!
//! A document runs from a line starting with `<doc` to the next `</doc>` line. Its
//! words are the first tab-separated column of its non-tag lines (tag lines start
//! with `<`); a `<g/>` line glues its neighbours (no space between them). Its id is
//! the `id` attribute, else the `url` attribute, XML-unescaped.

/// What one line did.
#[derive(Debug, PartialEq, Eq)]
pub enum Event {
    /// Nothing to report (inside or outside a document).
    None,
    /// A document ended on this line: its id (None if it had neither `id` nor `url`)
    /// and the line its `<doc` was on.
    DocEnd { id: Option<String>, start_line: u64 },
    /// A `<doc` line while a document was open: the open one (started on
    /// `start_line`) is abandoned.
    Unclosed { start_line: u64 },
    /// A `</doc>` line outside any document.
    StrayEnd,
}

/// Line-by-line state. The caller keeps the document's text in [`text`](Self::text)
/// until `DocEnd`.
#[derive(Default)]
pub struct VerticalDocs {
    open: Option<(u64, Option<String>)>,
    glue: bool,
    /// Words of the open document, joined by spaces (or nothing where glued).
    pub text: String,
    /// Whether the open document had invalid UTF-8 (replaced by U+FFFD).
    pub invalid_utf8: bool,
}

impl VerticalDocs {
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether a document is open (its lines belong to it).
    pub fn in_doc(&self) -> bool {
        self.open.is_some()
    }

    /// Line number where the open document started.
    pub fn open_line(&self) -> Option<u64> {
        self.open.as_ref().map(|o| o.0)
    }

    /// Feeds one line (without its line terminator) numbered `lineno`.
    pub fn line(&mut self, line: &[u8], lineno: u64) -> Event {
        let line = strip_cr(line);
        if line.starts_with(b"<doc")
            && matches!(line.get(4), None | Some(b' ') | Some(b'>') | Some(b'\t'))
        {
            let prev = self.open.take();
            self.text.clear();
            self.glue = false;
            self.invalid_utf8 = false;
            let id = attr(line, b"id").or_else(|| attr(line, b"url"));
            self.open = Some((lineno, id));
            return match prev {
                Some((start_line, _)) => Event::Unclosed { start_line },
                None => Event::None,
            };
        }
        if line.starts_with(b"</doc>") {
            return match self.open.take() {
                Some((start_line, id)) => Event::DocEnd { id, start_line },
                None => Event::StrayEnd,
            };
        }
        if self.open.is_none() {
            return Event::None;
        }
        if line.starts_with(b"<") {
            if line.starts_with(b"<g/>") || line.starts_with(b"<g />") {
                self.glue = true;
            }
            return Event::None;
        }
        let word = match memchr::memchr(b'\t', line) {
            Some(i) => &line[..i],
            None => line,
        };
        if word.is_empty() {
            return Event::None;
        }
        if !self.text.is_empty() && !self.glue {
            self.text.push(' ');
        }
        self.glue = false;
        match std::str::from_utf8(word) {
            Ok(s) => self.text.push_str(s),
            Err(_) => {
                self.invalid_utf8 = true;
                self.text.push_str(&String::from_utf8_lossy(word));
            }
        }
        Event::None
    }

    /// At end of input: the line of a document left open, if any.
    pub fn finish(&mut self) -> Option<u64> {
        self.open.take().map(|o| o.0)
    }
}

fn strip_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// The value of attribute `name` in a tag line (`name="value"`), XML-unescaped.
pub fn attr(line: &[u8], name: &[u8]) -> Option<String> {
    let mut i = 0;
    while i + name.len() + 2 <= line.len() {
        let rest = &line[i..];
        let pos = memchr::memmem::find(rest, name)?;
        let at = i + pos;
        let before_ok = at > 0 && matches!(line[at - 1], b' ' | b'\t');
        let after = &line[at + name.len()..];
        if before_ok && after.starts_with(b"=\"") {
            let v = &after[2..];
            let end = memchr::memchr(b'"', v)?;
            return Some(unescape(&String::from_utf8_lossy(&v[..end])));
        }
        i = at + 1;
    }
    None
}

/// Undoes XML escaping (`&amp; &lt; &gt; &quot; &apos;` and numeric references).
pub fn unescape(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(p) = rest.find('&') {
        out.push_str(&rest[..p]);
        rest = &rest[p..];
        let end = rest.find(';').filter(|&e| e <= 10);
        let rep = end.and_then(|e| match &rest[1..e] {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            ent if ent.starts_with("#x") || ent.starts_with("#X") => {
                u32::from_str_radix(&ent[2..], 16)
                    .ok()
                    .and_then(char::from_u32)
            }
            ent if ent.starts_with('#') => ent[1..].parse::<u32>().ok().and_then(char::from_u32),
            _ => None,
        });
        match (rep, end) {
            (Some(c), Some(e)) => {
                out.push(c);
                rest = &rest[e + 1..];
            }
            _ => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn docs(input: &str) -> Vec<(Option<String>, String)> {
        let mut v = VerticalDocs::new();
        let mut out = Vec::new();
        for (i, l) in input.lines().enumerate() {
            if let Event::DocEnd { id, .. } = v.line(l.as_bytes(), i as u64 + 1) {
                out.push((id, v.text.clone()));
            }
        }
        out
    }

    #[test]
    fn words_glue_and_ids() {
        let input = "<doc id=\"a&amp;b\" url=\"u\">\n<p>\nHello\tNN\n<g/>\n,\nworld\n</p>\n<p>\nnext\n</p>\n</doc>\n\
                     <doc url=\"https://x/?a=1&amp;b=&quot;2&quot;\">\nx\n</doc>\n<doc title=\"t\">\ny\n</doc>\n";
        assert_eq!(
            docs(input),
            vec![
                (Some("a&b".into()), "Hello, world next".into()),
                (Some("https://x/?a=1&b=\"2\"".into()), "x".into()),
                (None, "y".into())
            ]
        );
    }

    #[test]
    fn attr_needs_exact_name() {
        assert_eq!(attr(b"<doc xid=\"1\" id=\"2\">", b"id"), Some("2".into()));
        assert_eq!(attr(b"<doc url=\"1\">", b"id"), None);
        assert_eq!(attr(b"<doc id=\"unterminated>", b"id"), None);
        assert_eq!(unescape("&lt;&#65;&#x42;&bogus;&"), "<AB&bogus;&");
    }

    #[test]
    fn unclosed_and_stray() {
        let mut v = VerticalDocs::new();
        assert_eq!(v.line(b"</doc>", 1), Event::StrayEnd);
        assert_eq!(v.line(b"<doc id=\"1\">", 2), Event::None);
        assert_eq!(
            v.line(b"<doc id=\"2\">", 3),
            Event::Unclosed { start_line: 2 }
        );
        assert_eq!(v.line(b"w\xff", 4), Event::None);
        assert!(v.invalid_utf8);
        assert_eq!(v.finish(), Some(3));
    }
}
