//! Which copy of a near-duplicate group survives in batch MinHash mode (`--keep`).
//!
//! Stream mode keeps the first copy in input order: it decides before it has seen
//! the later ones. Batch mode has every candidate at hand, so its pick stage walks
//! them in the policy's order instead (the preferred document first, ties in input
//! order) with stream mode's rule: the first of a group to be walked survives and
//! the others are verified against it. `first` is input order itself, so it gives
//! stream mode's bytes.
//!
//! A policy's value is read in the hash phase and carried in the document table,
//! so the pick stage holds it only for the candidates it reads.

use std::fmt;
use std::str::FromStr;
use webdedup_formats::attrs::attr;
use webdedup_formats::fields::FieldPath;
use webdedup_formats::read::DocFormat;

/// A survivor policy.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Keep {
    /// The first in input order (stream mode's rule).
    #[default]
    First,
    /// The most characters of text.
    Longest,
    /// The latest date in a field (ISO 8601 / RFC 3339).
    Newest(FieldPath),
    /// The greatest number in a field.
    Max(FieldPath),
}

impl FromStr for Keep {
    type Err = String;
    fn from_str(s: &str) -> Result<Keep, String> {
        let field = |f: &str| -> Result<FieldPath, String> {
            if f.is_empty() || f.split('.').any(str::is_empty) {
                return Err(format!(
                    "--keep {s}: name a field (a dotted path such as metadata.date)"
                ));
            }
            Ok(FieldPath::parse(f))
        };
        match s.split_once(':') {
            None if s == "first" => Ok(Keep::First),
            None if s == "longest" => Ok(Keep::Longest),
            Some(("newest", f)) => Ok(Keep::Newest(field(f)?)),
            Some(("max", f)) => Ok(Keep::Max(field(f)?)),
            _ => Err(format!(
                "unknown survivor policy '{s}' (expected first, longest, newest:FIELD or max:FIELD)"
            )),
        }
    }
}

impl fmt::Display for Keep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Keep::First => f.write_str("first"),
            Keep::Longest => f.write_str("longest"),
            Keep::Newest(p) => write!(f, "newest:{p}"),
            Keep::Max(p) => write!(f, "max:{p}"),
        }
    }
}

/// A document's standing under a policy: greater is preferred. Dates, numbers
/// and lengths are mapped to `u128` so that one comparison serves them all.
pub type Rank = u128;

impl Keep {
    /// Whether documents carry a value (all but `first`).
    pub fn ranks(&self) -> bool {
        *self != Keep::First
    }

    /// The value of a document whose text has `text_chars` characters and whose
    /// bytes (a JSON Lines record, a vertical's `<doc>` line first) are `doc`, read
    /// as `format`; `Err` says why it has none.
    pub fn rank(&self, format: &DocFormat, doc: &[u8], text_chars: u64) -> Result<Rank, String> {
        let (path, date) = match self {
            Keep::First => return Ok(0),
            Keep::Longest => return Ok(text_chars as Rank),
            Keep::Newest(p) => (p, true),
            Keep::Max(p) => (p, false),
        };
        let value = field_value(format, doc, path)?;
        let parsed = if date {
            parse_datetime(&value).map(|(secs, nanos)| {
                (((secs as i128 - i64::MIN as i128) as u128) << 32) | nanos as u128
            })
        } else {
            parse_number(&value).map(|x| number_rank(x) as u128)
        };
        parsed.ok_or_else(|| {
            let what = if date {
                "an ISO 8601 date or date and time"
            } else {
                "a number"
            };
            format!("field '{path}' is not {what} ({})", shown(&value))
        })
    }
}

/// A field's value as text (a JSON string unquoted, a number as written).
enum Value {
    Text(String),
    Number(f64),
}

fn shown(v: &Value) -> String {
    match v {
        Value::Text(s) => {
            let s: String = s.chars().take(40).collect();
            format!("'{}'", webdedup_text::shown::escape_controls(&s))
        }
        Value::Number(x) => x.to_string(),
    }
}

fn field_value(format: &DocFormat, doc: &[u8], path: &FieldPath) -> Result<Value, String> {
    let missing = || format!("no field '{path}'");
    match format {
        DocFormat::Jsonl(_) => {
            let record: serde_json::Value =
                serde_json::from_slice(doc).map_err(|e| format!("not JSON ({e})"))?;
            match path.find(&record).ok_or_else(missing)? {
                serde_json::Value::String(s) => Ok(Value::Text(s.clone())),
                serde_json::Value::Number(n) => n
                    .as_f64()
                    .map(Value::Number)
                    .ok_or_else(|| format!("field '{path}' is not a number")),
                other => Err(format!(
                    "field '{path}' is {}",
                    match other {
                        serde_json::Value::Null => "null",
                        serde_json::Value::Bool(_) => "a boolean",
                        serde_json::Value::Array(_) => "an array",
                        _ => "an object",
                    }
                )),
            }
        }
        DocFormat::Vertical => {
            // The `<doc ...>` line's attributes (a dotted path names one attribute).
            let line = doc.split(|&b| b == b'\n').next().unwrap_or_default();
            let attrs = line
                .strip_prefix(b"<doc")
                .map(|a| a.trim_ascii_end().strip_suffix(b">").unwrap_or(a))
                .unwrap_or_default();
            attr(attrs, path.to_string().as_bytes())
                .map(|v| Value::Text(v.into_owned()))
                .ok_or_else(|| format!("no attribute '{path}'"))
        }
        other => Err(format!(
            "--keep reads JSON Lines fields and vertical <doc> attributes, not {} records",
            other.name()
        )),
    }
}

fn parse_number(v: &Value) -> Option<f64> {
    let x = match v {
        Value::Number(x) => *x,
        Value::Text(s) => s.trim().parse::<f64>().ok()?,
    };
    x.is_finite().then_some(x)
}

/// An order-preserving map of finite numbers to `u64` (0.0 and -0.0 alike).
fn number_rank(x: f64) -> u64 {
    let bits = (x + 0.0).to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | 1 << 63
    }
}

/// An ISO 8601 / RFC 3339 date (`2024-05-01`, midnight UTC) or date and time
/// (`2024-05-01T12:30`, `...:45`, `...:45.123`, then `Z`, `+02:00`, `+0200`,
/// `+02` or nothing for UTC; `T`, `t` or one space between date and time) as
/// seconds since 1970 (UTC) and nanoseconds.
fn parse_datetime(v: &Value) -> Option<(i64, u32)> {
    let Value::Text(s) = v else { return None };
    let s = s.trim().as_bytes();
    let num = |b: &[u8]| -> Option<i64> {
        (!b.is_empty() && b.iter().all(u8::is_ascii_digit))
            .then(|| b.iter().fold(0i64, |n, d| n * 10 + (d - b'0') as i64))
    };
    if s.len() < 10 || s[4] != b'-' || s[7] != b'-' {
        return None;
    }
    let (year, month, day) = (num(&s[0..4])?, num(&s[5..7])?, num(&s[8..10])?);
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    let mut secs = days_from_civil(year, month, day) * 86_400;
    let mut nanos = 0u32;
    let rest = &s[10..];
    if rest.is_empty() {
        return Some((secs, nanos));
    }
    if !matches!(rest[0], b'T' | b't' | b' ') {
        return None;
    }
    let rest = &rest[1..];
    if rest.len() < 5 || rest[2] != b':' {
        return None;
    }
    let (hour, minute) = (num(&rest[0..2])?, num(&rest[3..5])?);
    let mut rest = &rest[5..];
    let mut second = 0;
    if rest.first() == Some(&b':') {
        second = num(rest.get(1..3)?)?;
        rest = &rest[3..];
        if matches!(rest.first(), Some(b'.' | b',')) {
            let digits = rest[1..].iter().take_while(|b| b.is_ascii_digit()).count();
            if digits == 0 {
                return None;
            }
            let frac = &rest[1..1 + digits];
            for i in 0..9 {
                nanos = nanos * 10 + frac.get(i).map_or(0, |d| (d - b'0') as u32);
            }
            rest = &rest[1 + digits..];
        }
    }
    // 60: a leap second, read as the next second's start.
    if hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    secs += hour * 3600 + minute * 60 + second;
    let offset = match rest {
        b"" | b"Z" | b"z" => 0,
        [sign @ (b'+' | b'-'), tail @ ..] => {
            let (h, m) = match tail {
                [a, b] => (num(&[*a, *b])?, 0),
                [a, b, b':', c, d] | [a, b, c, d] => (num(&[*a, *b])?, num(&[*c, *d])?),
                _ => return None,
            };
            if h > 23 || m > 59 {
                return None;
            }
            let o = h * 3600 + m * 60;
            if *sign == b'+' {
                o
            } else {
                -o
            }
        }
        _ => return None,
    };
    Some((secs - offset, nanos))
}

fn is_leap(y: i64) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Option<(i64, u32)> {
        parse_datetime(&Value::Text(s.into()))
    }

    #[test]
    fn dates_and_datetimes_compare_as_instants() {
        assert_eq!(at("1970-01-01"), Some((0, 0)));
        assert_eq!(at("2024-02-29"), Some((1_709_164_800, 0)));
        assert_eq!(at("2024-02-29T00:00:00Z"), at("2024-02-29"));
        assert_eq!(at("2024-02-29T02:00:00+02:00"), at("2024-02-29"));
        assert_eq!(at("2024-02-28 22:00-0200"), at("2024-02-29"));
        assert_eq!(
            at("2024-02-29t00:00:00.5z"),
            Some((1_709_164_800, 500_000_000))
        );
        assert!(at("1969-12-31T23:59:59Z").unwrap().0 < 0);
        for bad in [
            "2023-02-29",
            "2024-13-01",
            "2024-1-01",
            "yesterday",
            "2024-01-01T25:00",
            "2024-01-01Tx",
            "2024-01-01T10:00+5",
        ] {
            assert_eq!(at(bad), None, "{bad}");
        }
    }

    #[test]
    fn ranks_order_values_and_name_what_is_wrong() {
        let j = DocFormat::Jsonl(Default::default());
        let newest = Keep::from_str("newest:meta.date").unwrap();
        let r = |k: &Keep, doc: &str| k.rank(&j, doc.as_bytes(), 0);
        let a = r(&newest, r#"{"meta":{"date":"2023-12-31T23:00:00-02:00"}}"#).unwrap();
        let b = r(&newest, r#"{"meta":{"date":"2024-01-01"}}"#).unwrap();
        assert!(a > b, "an hour after midnight UTC is newer");
        assert_eq!(
            r(&newest, r#"{"meta":{}}"#).unwrap_err(),
            "no field 'meta.date'"
        );
        assert!(r(&newest, r#"{"meta":{"date":"soon"}}"#)
            .unwrap_err()
            .contains("not an ISO 8601 date"));
        let max = Keep::from_str("max:score").unwrap();
        let ranks: Vec<_> = [
            r#"{"score":-2.5}"#,
            r#"{"score":-0.0}"#,
            r#"{"score":"0.25"}"#,
            r#"{"score":3}"#,
        ]
        .iter()
        .map(|d| r(&max, d).unwrap())
        .collect();
        assert!(ranks.windows(2).all(|w| w[0] < w[1]), "{ranks:?}");
        assert!(r(&max, r#"{"score":true}"#)
            .unwrap_err()
            .contains("a boolean"));
        let vert = Keep::from_str("newest:date").unwrap();
        let doc = b"<doc id=\"1\" date=\"2024-05-01\">\n<p>\nx\n</doc>\n";
        assert!(vert.rank(&DocFormat::Vertical, doc, 0).unwrap() > b);
        assert_eq!(Keep::Longest.rank(&j, b"", 42), Ok(42));
    }

    #[test]
    fn policies_parse_and_print_back() {
        for s in ["first", "longest", "newest:date", "max:quality.score"] {
            assert_eq!(Keep::from_str(s).unwrap().to_string(), s);
        }
        for bad in ["newest", "newest:", "max:a..b", "oldest:date", "last"] {
            assert!(Keep::from_str(bad).is_err(), "{bad}");
        }
    }
}
