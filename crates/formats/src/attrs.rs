//! Attributes of a tag line (`<doc url="..." title="...">`): reading values
//! (quoted or bare, XML entities unescaped) and escaping them for writing.

use memchr::memchr;
use std::borrow::Cow;

/// The raw (still escaped) value of attribute `name` in `attrs`. Values may be
/// double-quoted, single-quoted or bare.
pub fn attr_raw<'a>(attrs: &'a [u8], name: &[u8]) -> Option<&'a [u8]> {
    attr_pairs(attrs).find(|(k, _)| *k == name).map(|(_, v)| v)
}

/// Every attribute of `attrs` in order, as (name, raw value); a bare attribute
/// without a value has an empty value.
pub fn attr_pairs(attrs: &[u8]) -> impl Iterator<Item = (&[u8], &[u8])> {
    let n = attrs.len();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < n && attrs[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= n {
            return None;
        }
        let key_start = i;
        while i < n && attrs[i] != b'=' && !attrs[i].is_ascii_whitespace() {
            i += 1;
        }
        let key = &attrs[key_start..i];
        while i < n && attrs[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= n || attrs[i] != b'=' {
            // A bare attribute without a value.
            return Some((key, &attrs[i..i]));
        }
        i += 1;
        while i < n && attrs[i].is_ascii_whitespace() {
            i += 1;
        }
        let value = match attrs.get(i) {
            Some(&q @ (b'"' | b'\'')) => {
                let start = i + 1;
                let len = memchr(q, &attrs[start..]).unwrap_or(n - start);
                i = (start + len + 1).min(n);
                &attrs[start..start + len]
            }
            _ => {
                let start = i;
                while i < n && !attrs[i].is_ascii_whitespace() {
                    i += 1;
                }
                &attrs[start..i]
            }
        };
        Some((key, value))
    })
}

/// The value of attribute `name`, XML entities unescaped (`&amp;` `&lt;` `&gt;`
/// `&quot;` `&apos;` and numeric references); invalid UTF-8 read lossily.
pub fn attr<'a>(attrs: &'a [u8], name: &[u8]) -> Option<Cow<'a, str>> {
    attr_raw(attrs, name).map(unescape)
}

/// Unescapes XML entities; unknown or malformed entities are kept as written.
pub fn unescape(raw: &[u8]) -> Cow<'_, str> {
    let s = String::from_utf8_lossy(raw);
    if !s.contains('&') {
        return s;
    }
    let mut out = String::with_capacity(s.len());
    let mut rest: &str = &s;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        let after = &rest[amp..];
        let decoded = after.find(';').filter(|&semi| semi <= 12).and_then(|semi| {
            let ent = &after[1..semi];
            let c = match ent {
                "amp" => Some('&'),
                "lt" => Some('<'),
                "gt" => Some('>'),
                "quot" => Some('"'),
                "apos" => Some('\''),
                _ => ent
                    .strip_prefix("#x")
                    .or_else(|| ent.strip_prefix("#X"))
                    .and_then(|h| u32::from_str_radix(h, 16).ok())
                    .or_else(|| ent.strip_prefix('#').and_then(|d| d.parse::<u32>().ok()))
                    .and_then(char::from_u32),
            };
            c.map(|c| (c, semi))
        });
        match decoded {
            Some((c, semi)) => {
                out.push(c);
                rest = &after[semi + 1..];
            }
            None => {
                out.push('&');
                rest = &after[1..];
            }
        }
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// Escapes a value for a double-quoted XML attribute.
pub fn escape_attr(value: &str, out: &mut Vec<u8>) {
    // Runs without a special byte are copied whole (most values have none).
    let mut rest = value.as_bytes();
    while let Some(i) = rest
        .iter()
        .position(|b| matches!(b, b'&' | b'"' | b'<' | b'>'))
    {
        out.extend_from_slice(&rest[..i]);
        out.extend_from_slice(match rest[i] {
            b'&' => b"&amp;",
            b'"' => b"&quot;",
            b'<' => b"&lt;",
            _ => b"&gt;",
        });
        rest = &rest[i + 1..];
    }
    out.extend_from_slice(rest);
}
