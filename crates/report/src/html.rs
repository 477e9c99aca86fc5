//! The page: one HTML file with its style inline, no script and nothing loaded
//! from elsewhere, readable from a phone's width up (tables scroll sideways in
//! their own box, charts scale). Sections are kept or left out whole to stay
//! under the page's byte cap, in the order of their priority.

use std::fmt::Write as _;

/// `s` with `& < > " '` escaped, for text and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "\
:root{--fg:#1d2430;--muted:#5b6575;--line:#d8dde5;--bar:#3b6fb6;--kept:#2e7d4f;--gone:#b3402f;--bg:#fff;--soft:#f4f6f9}
*{box-sizing:border-box}
body{margin:0;font:15px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:var(--fg);background:var(--bg)}
main{max-width:1100px;margin:0 auto;padding:12px 16px 48px}
h1{font-size:1.45rem;margin:.6em 0 .2em}h2{font-size:1.2rem;margin:1.6em 0 .4em;border-bottom:1px solid var(--line);padding-bottom:.2em}h3{font-size:1rem;margin:1.2em 0 .3em}
p.note,.muted{color:var(--muted);font-size:.9rem}
nav{display:flex;flex-wrap:wrap;gap:.3em .9em;font-size:.9rem;margin:.4em 0 1em}
nav a{color:var(--bar)}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(150px,1fr));gap:8px;margin:.5em 0}
.card{background:var(--soft);border-radius:6px;padding:8px 10px}
.card .v{font-size:1.3rem;font-weight:600}.card .k{color:var(--muted);font-size:.8rem}
.scroll{overflow-x:auto;-webkit-overflow-scrolling:touch}
table{border-collapse:collapse;font-size:.88rem;min-width:100%}
th,td{padding:4px 8px;border-bottom:1px solid var(--line);text-align:right;white-space:nowrap}
th:first-child,td:first-child,td.text{text-align:left}
th{background:var(--soft);font-weight:600}
.share{display:inline-block;height:.7em;background:var(--gone);vertical-align:middle;margin-left:4px}
svg.chart{width:100%;max-width:720px;height:auto;display:block}
svg .bar{fill:var(--bar)}svg .axis{stroke:var(--muted)}svg .tick,svg .axis-title,svg .marker-label{font-size:11px;fill:var(--muted)}
svg .marker{stroke:var(--gone);stroke-dasharray:4 3}svg .marker-label{fill:var(--gone)}
.pair{display:grid;grid-template-columns:1fr 1fr;gap:8px;margin:.4em 0 1.2em}
.pair>div{background:var(--soft);border-radius:6px;padding:8px;font-size:.85rem;overflow-wrap:anywhere;max-height:22em;overflow-y:auto}
ins{background:#d6f0dd;text-decoration:none}del{background:#f7d9d4}
code,pre{font:.85rem ui-monospace,SFMono-Regular,Menlo,monospace;overflow-wrap:anywhere;white-space:pre-wrap}
@media (max-width:600px){body{font-size:14px}main{padding:8px 10px 32px}.pair{grid-template-columns:1fr}}
";

/// A section of the page: its anchor, heading, body and priority (0 is kept
/// first when the page would pass its cap).
pub struct Section {
    pub id: String,
    pub title: String,
    pub body: String,
    pub priority: u8,
}

/// The page of `sections` (in their order) under `title`, at most `max_bytes`
/// long where the sections allow: those that do not fit are left out, lowest
/// priority first, and named in a note. Returns the page and the ids left out.
pub fn page(
    title: &str,
    intro: &str,
    sections: Vec<Section>,
    max_bytes: usize,
) -> (String, Vec<String>) {
    let head = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><title>{}</title><style>{STYLE}</style></head><body><main>\n<h1>{}</h1>\n{intro}\n",
        escape(title),
        escape(title)
    );
    let tail = "</main></body></html>\n";
    let mut order: Vec<usize> = (0..sections.len()).collect();
    order.sort_by_key(|&i| (sections[i].priority, i));
    // Room for the navigation and the note, each at most a line per section.
    let overhead = head.len()
        + tail.len()
        + sections
            .iter()
            .map(|s| s.id.len() * 2 + s.title.len() + 64)
            .sum::<usize>()
        + 200;
    let mut used = overhead;
    let mut keep = vec![false; sections.len()];
    for i in order {
        let len = sections[i].body.len() + sections[i].title.len() + 64;
        if used + len <= max_bytes || sections[i].priority == 0 {
            used += len;
            keep[i] = true;
        }
    }
    let mut out = head;
    out.push_str("<nav>");
    for (s, _) in sections.iter().zip(&keep).filter(|(_, k)| **k) {
        let _ = write!(
            out,
            "<a href=\"#{}\">{}</a>",
            escape(&s.id),
            escape(&s.title)
        );
    }
    out.push_str("</nav>\n");
    let left_out: Vec<String> = sections
        .iter()
        .zip(&keep)
        .filter(|(_, k)| !**k)
        .map(|(s, _)| s.title.clone())
        .collect();
    if !left_out.is_empty() {
        let _ = writeln!(
            out,
            "<p class=\"note\" data-left-out=\"{}\">Left out to keep the page under {} bytes (--max-bytes): {}.</p>",
            left_out.len(),
            max_bytes,
            escape(&left_out.join(", "))
        );
    }
    for (s, _) in sections.iter().zip(&keep).filter(|(_, k)| **k) {
        let _ = writeln!(
            out,
            "<section id=\"{}\"><h2>{}</h2>\n{}</section>",
            escape(&s.id),
            escape(&s.title),
            s.body
        );
    }
    out.push_str(tail);
    (out, left_out)
}

/// A table in its own scrolling box: `head` cells, then rows of ready cells.
pub fn table(head: &[&str], rows: &[String]) -> String {
    let mut s = String::from("<div class=\"scroll\"><table><thead><tr>");
    for h in head {
        let _ = write!(s, "<th>{}</th>", escape(h));
    }
    s.push_str("</tr></thead><tbody>");
    for r in rows {
        let _ = write!(s, "<tr>{r}</tr>");
    }
    s.push_str("</tbody></table></div>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(id: &str, priority: u8, len: usize) -> Section {
        Section {
            id: id.into(),
            title: id.to_uppercase(),
            body: "x".repeat(len),
            priority,
        }
    }

    #[test]
    fn escapes_markup() {
        assert_eq!(
            escape(r#"<a href="x">&'"#),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }

    #[test]
    fn sections_beyond_the_cap_are_left_out_by_priority() {
        let sections = vec![
            section("totals", 0, 3000),
            section("domains", 2, 3000),
            section("charts", 1, 3000),
        ];
        // Room for two of the three sections besides the style.
        let cap = STYLE.len() + 7000;
        let (p, left) = page("t", "", sections, cap);
        assert_eq!(left, ["DOMAINS"]);
        assert!(p.contains("id=\"totals\"") && p.contains("id=\"charts\""));
        assert!(!p.contains("id=\"domains\""));
        assert!(p.contains("data-left-out=\"1\""));
        assert!(p.len() <= cap, "{}", p.len());
        // Priority 0 stays whatever the cap.
        let (p, left) = page("t", "", vec![section("totals", 0, 3000)], 100);
        assert!(left.is_empty() && p.contains("id=\"totals\""));
    }

    #[test]
    fn nothing_is_loaded_from_elsewhere() {
        let (p, _) = page("t", "", vec![section("a", 0, 10)], 1 << 20);
        assert!(!p.contains("http:") && !p.contains("https:") && !p.contains("<script"));
        assert!(p.contains("name=\"viewport\""));
    }
}
