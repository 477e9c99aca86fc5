//! The URL filter (`--url-filter FILE`): documents whose URL matches a rule are
//! dropped before any store request (status `U`).
//!
//! One rule per line; blank lines and lines starting with `#` are ignored:
//!
//! | line | matches |
//! |---|---|
//! | `https://example.com/a` or `url:https://example.com/a` | exactly that URL |
//! | `host:example.com` | every URL whose host is `example.com` (any scheme, port, path) |
//! | `domain:example.com` | the host `example.com` and all its subdomains |
//! | `prefix:https://example.com/docs/` | every URL starting with that text |
//! | `re:^https?://[^/]*\.example\.(com\|org)/` | every URL the regular expression finds a match in |
//!
//! Matching is on the `url` attribute of the `<doc>` line, unescaped, as written
//! (no normalization: say `prefix:http://` and `prefix:https://` if both occur).

use regex::RegexSet;
use std::collections::HashSet;
use std::path::Path;

#[derive(Debug, Default)]
pub struct UrlFilter {
    exact: HashSet<String>,
    hosts: HashSet<String>,
    domains: Vec<String>,
    prefixes: Vec<String>,
    regexes: Option<RegexSet>,
    rules: usize,
}

impl UrlFilter {
    /// Reads rules from `path`. Bad lines are returned as `FILE:LINE: reason`
    /// problems; the good rules still apply.
    pub fn load(path: &Path) -> std::io::Result<(UrlFilter, Vec<String>)> {
        let text = std::fs::read(path)?;
        let text = String::from_utf8_lossy(&text);
        let (filter, problems) = UrlFilter::parse(&text);
        let problems = problems
            .into_iter()
            .map(|(line, why)| format!("{}:{line}: {why}", path.display()))
            .collect();
        Ok((filter, problems))
    }

    /// Parses rules; returns the filter and (line number, reason) for bad lines.
    pub fn parse(text: &str) -> (UrlFilter, Vec<(usize, String)>) {
        let mut f = UrlFilter::default();
        let mut problems = Vec::new();
        let mut patterns = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (kind, value) = match line.split_once(':') {
                Some((k @ ("url" | "host" | "domain" | "prefix" | "re"), v)) => (k, v.trim()),
                _ => ("url", line),
            };
            if value.is_empty() {
                problems.push((i + 1, format!("empty '{kind}:' rule")));
                continue;
            }
            match kind {
                "url" => {
                    f.exact.insert(value.to_owned());
                }
                "host" => {
                    f.hosts.insert(value.to_ascii_lowercase());
                }
                "domain" => f
                    .domains
                    .push(value.trim_start_matches('.').to_ascii_lowercase()),
                "prefix" => f.prefixes.push(value.to_owned()),
                _ => match regex::Regex::new(value) {
                    Ok(_) => patterns.push(value.to_owned()),
                    Err(e) => {
                        problems.push((i + 1, format!("bad regular expression: {e}")));
                        continue;
                    }
                },
            }
            f.rules += 1;
        }
        if !patterns.is_empty() {
            f.regexes = Some(RegexSet::new(&patterns).expect("each pattern compiled alone"));
        }
        (f, problems)
    }

    /// Number of rules in force.
    pub fn len(&self) -> usize {
        self.rules
    }

    pub fn is_empty(&self) -> bool {
        self.rules == 0
    }

    pub fn matches(&self, url: &str) -> bool {
        if self.exact.contains(url) || self.prefixes.iter().any(|p| url.starts_with(p.as_str())) {
            return true;
        }
        if !self.hosts.is_empty() || !self.domains.is_empty() {
            if let Some(host) = host_of(url) {
                let host = host.to_ascii_lowercase();
                if self.hosts.contains(&host) {
                    return true;
                }
                if self.domains.iter().any(|d| {
                    host == *d
                        || (host.len() > d.len()
                            && host.ends_with(d.as_str())
                            && host.as_bytes()[host.len() - d.len() - 1] == b'.')
                }) {
                    return true;
                }
            }
        }
        self.regexes.as_ref().is_some_and(|r| r.is_match(url))
    }
}

/// The host of an absolute URL: between `scheme://` (and any `user@`) and the next
/// `:`, `/`, `?` or `#`.
fn host_of(url: &str) -> Option<&str> {
    let rest = &url[url.find("://")? + 3..];
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = authority.split(':').next().unwrap_or("");
    (!host.is_empty()).then_some(host)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_rule_kind_matches_what_it_says() {
        let (f, problems) = UrlFilter::parse(
            "# comment\n\nhttps://a.com/x\nurl:https://a.com/y\nhost:B.org\ndomain:c.net\nprefix:http://d.com/docs/\nre:^https?://e\\.com/[0-9]+$\n",
        );
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(f.len(), 6);
        for url in [
            "https://a.com/x",
            "https://a.com/y",
            "http://b.org/any/page",
            "https://user@b.org:8080/p",
            "https://c.net/",
            "https://www.c.net/x",
            "http://d.com/docs/intro",
            "https://e.com/42",
        ] {
            assert!(f.matches(url), "{url} should match");
        }
        for url in [
            "https://a.com/x2",
            "https://a.com/",
            "http://www.b.org/",
            "https://notc.net/",
            "http://d.com/doc",
            "https://e.com/42/x",
            "",
        ] {
            assert!(!f.matches(url), "{url} should not match");
        }
    }

    #[test]
    fn bad_lines_are_reported_with_their_number_and_the_rest_applies() {
        let (f, problems) = UrlFilter::parse("re:(unclosed\nhost:\nhost:ok.com\n");
        assert_eq!(problems.len(), 2);
        assert_eq!(problems[0].0, 1);
        assert!(problems[0].1.contains("bad regular expression"));
        assert_eq!(problems[1].0, 2);
        assert!(f.matches("http://ok.com/"));
    }
}
