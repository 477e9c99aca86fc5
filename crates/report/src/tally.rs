//! Documents kept and removed, counted from `.dd` lines as they stream by: per
//! run, per crawl, per language and per domain, in memory bounded by the number
//! of groups (domains beyond [`MAX_GROUPS`] are counted together).

use std::collections::BTreeMap;
use webdedup_formats::vertical::{attr, parse_tag, Tag};

/// Distinct groups (domains) counted one by one; later new ones share a row.
pub const MAX_GROUPS: usize = 100_000;
/// The row where groups beyond [`MAX_GROUPS`] are counted.
pub const OTHER_GROUPS: &str = "(other domains)";

/// A document's fate, as `.dd` writes it (`crates/dedup/src/policy.rs`,
/// `DocStatus::code`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// `K`: kept whole.
    Kept,
    /// `N/M`: N of its M paragraphs kept.
    Partly { kept: u64, total: u64 },
    /// `D`: a duplicate document (exact, or MinHash's near duplicate).
    Duplicate,
    /// `E`: every paragraph was seen before.
    Emptied,
    /// `U`: its URL matched `--url-filter`.
    UrlFiltered,
    /// `B`: not a document (a bad record), not counted among documents.
    Bad,
}

impl Status {
    /// The status of a `.dd` line's `status` value.
    pub fn parse(code: &str) -> Option<Status> {
        Some(match code {
            "K" => Status::Kept,
            "D" => Status::Duplicate,
            "E" => Status::Emptied,
            "U" => Status::UrlFiltered,
            "B" => Status::Bad,
            _ => {
                let (k, t) = code.split_once('/')?;
                Status::Partly {
                    kept: k.parse().ok()?,
                    total: t.parse().ok()?,
                }
            }
        })
    }
}

/// One `.dd` line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DdLine {
    pub id: Option<String>,
    pub url: String,
    pub status: Status,
}

/// Reads a `.dd` line (`<dd id=".." url=".." title=".." status=".."/>`), or says
/// why it is not one.
pub fn parse_dd(line: &[u8]) -> Result<DdLine, String> {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let attrs = match parse_tag(line) {
        Some(Tag::Empty { name: b"dd", attrs }) => attrs,
        _ => return Err("not a <dd .../> line".into()),
    };
    let code = attr(attrs, b"status").ok_or("no status")?;
    let status = Status::parse(&code).ok_or_else(|| format!("unknown status '{code}'"))?;
    Ok(DdLine {
        id: attr(attrs, b"id").map(|v| v.into_owned()),
        url: attr(attrs, b"url")
            .map(|v| v.into_owned())
            .unwrap_or_default(),
        status,
    })
}

/// Counts of documents, as `dedup --json` names them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    pub documents_read: u64,
    pub documents_kept_whole: u64,
    pub documents_kept_partly: u64,
    pub documents_dropped_duplicate: u64,
    pub documents_dropped_all_paragraphs: u64,
    pub documents_dropped_url_filter: u64,
    pub bad_records: u64,
    /// Paragraphs of the partly kept documents, and how many of them were kept
    /// (`.dd` counts paragraphs only for them).
    pub partly_paragraphs: u64,
    pub partly_paragraphs_kept: u64,
}

impl Tally {
    pub fn add(&mut self, s: Status) {
        if s != Status::Bad {
            self.documents_read += 1;
        }
        match s {
            Status::Kept => self.documents_kept_whole += 1,
            Status::Partly { kept, total } => {
                self.documents_kept_partly += 1;
                self.partly_paragraphs += total;
                self.partly_paragraphs_kept += kept;
            }
            Status::Duplicate => self.documents_dropped_duplicate += 1,
            Status::Emptied => self.documents_dropped_all_paragraphs += 1,
            Status::UrlFiltered => self.documents_dropped_url_filter += 1,
            Status::Bad => self.bad_records += 1,
        }
    }

    pub fn merge(&mut self, o: &Tally) {
        self.documents_read += o.documents_read;
        self.documents_kept_whole += o.documents_kept_whole;
        self.documents_kept_partly += o.documents_kept_partly;
        self.documents_dropped_duplicate += o.documents_dropped_duplicate;
        self.documents_dropped_all_paragraphs += o.documents_dropped_all_paragraphs;
        self.documents_dropped_url_filter += o.documents_dropped_url_filter;
        self.bad_records += o.bad_records;
        self.partly_paragraphs += o.partly_paragraphs;
        self.partly_paragraphs_kept += o.partly_paragraphs_kept;
    }

    pub fn documents_kept(&self) -> u64 {
        self.documents_kept_whole + self.documents_kept_partly
    }

    pub fn documents_dropped(&self) -> u64 {
        self.documents_dropped_duplicate
            + self.documents_dropped_all_paragraphs
            + self.documents_dropped_url_filter
    }

    /// The figures under `dedup --json`'s names.
    pub fn figures(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("documents_read", self.documents_read),
            ("documents_kept", self.documents_kept()),
            ("documents_kept_whole", self.documents_kept_whole),
            ("documents_kept_partly", self.documents_kept_partly),
            ("documents_dropped", self.documents_dropped()),
            (
                "documents_dropped_duplicate",
                self.documents_dropped_duplicate,
            ),
            (
                "documents_dropped_all_paragraphs",
                self.documents_dropped_all_paragraphs,
            ),
            (
                "documents_dropped_url_filter",
                self.documents_dropped_url_filter,
            ),
            ("bad_records", self.bad_records),
        ]
    }
}

/// The largest groups, and how many others there are with their sum.
pub type Top<'a> = (Vec<(&'a str, &'a Tally)>, Option<(usize, Tally)>);

/// Tallies by a key (crawl, language, domain), at most [`MAX_GROUPS`] keys.
#[derive(Clone, Debug, Default)]
pub struct Groups {
    pub by: BTreeMap<String, Tally>,
}

impl Groups {
    pub fn add(&mut self, key: &str, s: Status) {
        let key = if self.by.contains_key(key) || self.by.len() < MAX_GROUPS {
            key
        } else {
            OTHER_GROUPS
        };
        if let Some(t) = self.by.get_mut(key) {
            t.add(s);
        } else {
            self.by.entry(key.to_owned()).or_default().add(s);
        }
    }

    /// The `n` largest groups by documents (ties by name), then the rest summed.
    pub fn top(&self, n: usize) -> Top<'_> {
        let mut all: Vec<(&str, &Tally)> = self.by.iter().map(|(k, t)| (k.as_str(), t)).collect();
        all.sort_by(|a, b| {
            b.1.documents_read
                .cmp(&a.1.documents_read)
                .then(a.0.cmp(b.0))
        });
        if all.len() <= n {
            return (all, None);
        }
        let mut rest = Tally::default();
        for (_, t) in &all[n..] {
            rest.merge(t);
        }
        let left = all.len() - n;
        all.truncate(n);
        (all, Some((left, rest)))
    }
}

/// The host of a URL, lowercased, without `www.` and port (`(no URL)` without one).
pub fn domain_of(url: &str) -> String {
    if url.is_empty() {
        return "(no URL)".into();
    }
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
    let host = match host.rsplit_once(':') {
        Some((h, port)) if port.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => host,
    };
    let host = host.to_ascii_lowercase();
    host.strip_prefix("www.").map(str::to_owned).unwrap_or(host)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dd_lines_of_every_status() {
        let l =
            parse_dd(b"<dd id=\"a&amp;b\" url=\"https://x.org/\" title=\"t\" status=\"3/5\"/>\n")
                .unwrap();
        assert_eq!(l.id.as_deref(), Some("a&b"));
        assert_eq!(l.url, "https://x.org/");
        assert_eq!(l.status, Status::Partly { kept: 3, total: 5 });
        for (code, s) in [
            ("K", Status::Kept),
            ("D", Status::Duplicate),
            ("E", Status::Emptied),
            ("U", Status::UrlFiltered),
            ("B", Status::Bad),
        ] {
            let line = format!("<dd url=\"\" title=\"\" status=\"{code}\"/>");
            assert_eq!(parse_dd(line.as_bytes()).unwrap().status, s);
        }
        assert!(parse_dd(b"<dd url=\"\" status=\"Q\"/>")
            .unwrap_err()
            .contains("'Q'"));
        assert!(parse_dd(b"<doc url=\"\" status=\"K\">").is_err());
        assert!(parse_dd(b"<dd url=\"\"/>").is_err());
    }

    #[test]
    fn bad_records_are_not_documents() {
        let mut t = Tally::default();
        for s in [
            Status::Kept,
            Status::Partly { kept: 1, total: 4 },
            Status::Duplicate,
            Status::Emptied,
            Status::UrlFiltered,
            Status::Bad,
        ] {
            t.add(s);
        }
        assert_eq!(t.documents_read, 5);
        assert_eq!(t.documents_kept(), 2);
        assert_eq!(t.documents_dropped(), 3);
        assert_eq!(t.bad_records, 1);
        assert_eq!((t.partly_paragraphs, t.partly_paragraphs_kept), (4, 1));
    }

    #[test]
    fn domains() {
        assert_eq!(domain_of("https://www.Python.org:443/a?b"), "python.org");
        assert_eq!(domain_of("http://u:p@host.example/x"), "host.example");
        assert_eq!(domain_of("docs.python.org/3/"), "docs.python.org");
        assert_eq!(domain_of(""), "(no URL)");
    }

    #[test]
    fn top_groups_and_the_rest() {
        let mut g = Groups::default();
        for (k, n) in [("b", 3), ("a", 3), ("c", 1), ("d", 2)] {
            for _ in 0..n {
                g.add(k, Status::Kept);
            }
        }
        let (top, rest) = g.top(2);
        let names: Vec<&str> = top.iter().map(|(k, _)| *k).collect();
        assert_eq!(names, ["a", "b"]);
        let (left, rest) = rest.unwrap();
        assert_eq!((left, rest.documents_read), (2, 3));
    }
}
