//! SURT url keys, a port of the Python `surt` package's default (`surt.surt(url)`,
//! Google + IA canonicalizers, no scheme, reversed host), which cdxj-indexer, pywb
//! and warcio use for CDX keys.
//!
//! Known differences: non-ASCII host names are not IDNA-encoded (Python turns them
//! into `xn--` labels; here they are percent-escaped), and numeric hosts are
//! resolved with `inet_aton` rules without asking DNS.

use std::sync::OnceLock;

use regex::bytes::Regex;

struct Res {
    path_session: [Regex; 2],
    query_session: [Regex; 5],
    www: Regex,
    scheme: Regex,
    multi_proto: Regex,
    rfc2396: Regex,
}

fn res() -> &'static Res {
    static RES: OnceLock<Res> = OnceLock::new();
    RES.get_or_init(|| {
        let r = |s: &str| Regex::new(s).expect("static regex");
        Res {
            path_session: [
                r(r"(?i-u)^(.*/)(\((?:[a-z]\([0-9a-z]{24}\))+\)/)([^\?]+\.aspx.*)$"),
                r(r"(?i-u)^(.*/)(\([0-9a-z]{24}\)/)([^\?]+\.aspx.*)$"),
            ],
            query_session: [
                r(r"(?i-u)^(.*)(?:jsessionid=[0-9a-zA-Z]{32})(?:&(.*))?$"),
                r(r"(?i-u)^(.*)(?:phpsessid=[0-9a-zA-Z]{32})(?:&(.*))?$"),
                r(r"(?i-u)^(.*)(?:sid=[0-9a-zA-Z]{32})(?:&(.*))?$"),
                r(r"(?i-u)^(.*)(?:ASPSESSIONID[a-zA-Z]{8}=[a-zA-Z]{24})(?:&(.*))?$"),
                r(r"(?i-u)^(.*)(?:cfid=[^&]+&cftoken=[^&]+)(?:&(.*))?$"),
            ],
            www: r(r"(?-u)^www[0-9]*\."),
            scheme: r(r"(?-u)^[a-zA-Z][a-zA-Z0-9+\-.]*:"),
            multi_proto: r(r"(?-u)^(https?://)+"),
            rfc2396: r(r"(?s-u)^(([a-zA-Z][a-zA-Z0-9+.-]*):)?((//([^/?#]*))?([^?#]*)(\?([^#]*))?)?(#(.*))?$"),
        }
    })
}

struct Url {
    scheme: Vec<u8>,
    host: Option<Vec<u8>>,
    port: Option<u32>,
    path: Option<Vec<u8>>,
    query: Option<Vec<u8>>,
    last_delimiter: bool,
}

/// The SURT key of `url`, or `None` where Python's `surt` raises (cdxj-indexer then
/// uses the URL itself).
pub fn surt(url: &str) -> Option<String> {
    if url.is_empty() {
        return Some("-".into());
    }
    if url.starts_with("filedesc") {
        return Some(url.into());
    }
    let mut u = parse(url.as_bytes())?;
    google(&mut u);
    ia(&mut u);
    Some(String::from_utf8_lossy(&geturl(&u)).into_owned())
}

/// The key cdxj-indexer writes: the SURT, or the URL when SURT fails.
pub fn url_key(url: &str) -> String {
    surt(url).unwrap_or_else(|| url.to_string())
}

fn parse(url: &[u8]) -> Option<Url> {
    let r = res();
    let trimmed = url.trim_ascii();
    let mut url: Vec<u8> = trimmed
        .iter()
        .copied()
        .filter(|b| !matches!(b, b'\n' | b'\r' | b'\t'))
        .collect();
    if !url.is_empty() && !r.scheme.is_match(&url) {
        url.splice(0..0, b"http://".iter().copied());
    }
    if let Some(c) = r.multi_proto.captures(&url) {
        let whole = c.get(0).expect("match").end();
        let last = c.get(1).expect("group").as_bytes().to_vec();
        url.splice(0..whole, last);
    }
    let c = r.rfc2396.captures(&url)?;
    let g = |i: usize| c.get(i).map(|m| m.as_bytes().to_vec()).unwrap_or_default();
    let scheme = g(2);
    let mut netloc = g(5);
    let path = g(6);
    let query = g(8);
    while netloc.last() == Some(&b':') {
        netloc.pop();
    }
    // urllib's hostname / port.
    let hostinfo = match netloc.iter().rposition(|&b| b == b'@') {
        Some(i) => netloc[i + 1..].to_vec(),
        None => netloc.clone(),
    };
    let (hostname, port) = match hostinfo.iter().position(|&b| b == b'[') {
        Some(i) => {
            let rest = &hostinfo[i + 1..];
            let close = rest.iter().position(|&b| b == b']');
            let (h, after) = match close {
                Some(j) => (&rest[..j], &rest[j + 1..]),
                None => (rest, &b""[..]),
            };
            let port = after
                .iter()
                .position(|&b| b == b':')
                .map(|k| after[k + 1..].to_vec());
            (h.to_vec(), port)
        }
        None => match hostinfo.iter().position(|&b| b == b':') {
            Some(i) => (hostinfo[..i].to_vec(), Some(hostinfo[i + 1..].to_vec())),
            None => (hostinfo.clone(), None),
        },
    };
    let port = match port {
        None => None,
        Some(p) if p.is_empty() => None,
        Some(p) => {
            if !p.iter().all(u8::is_ascii_digit) || p.len() > 10 {
                return None;
            }
            let n: u64 = std::str::from_utf8(&p).ok()?.parse().ok()?;
            if n > 65535 {
                return None;
            }
            if n == 0 {
                None
            } else {
                Some(n as u32)
            }
        }
    };
    let mut host = if hostname.is_empty() {
        None
    } else {
        Some(hostname.to_ascii_lowercase())
    };
    let mut path = if path.is_empty() { None } else { Some(path) };
    if scheme.starts_with(b"http") && host.is_none() {
        if let Some(p) = &path {
            let stripped: &[u8] = {
                let n = p.iter().take_while(|&&b| b == b'/').count();
                &p[n..]
            };
            let (h, rest) = match stripped.iter().position(|&b| b == b'/') {
                Some(i) => (&stripped[..i], &stripped[i + 1..]),
                None => (stripped, &b""[..]),
            };
            host = Some(h.to_vec());
            let mut np = b"/".to_vec();
            np.extend_from_slice(rest);
            path = Some(np);
        }
    }
    let query = if query.is_empty() { None } else { Some(query) };
    let last_delimiter = url.ends_with(b"?") && query.is_none();
    if scheme.is_empty() {
        // Python: `None.startswith` raises.
        return None;
    }
    Some(Url {
        scheme,
        host,
        port,
        path,
        query,
        last_delimiter,
    })
}

fn google(u: &mut Url) {
    if let Some(q) = u.query.take() {
        u.query = Some(escape_once(&unescape_repeatedly(&q)));
    }
    if let Some(h) = u.host.take() {
        let mut host = unescape_repeatedly(&h);
        while let Some(i) = memchr::memmem::find(&host, b"..") {
            host.remove(i);
        }
        let start = host.iter().take_while(|&&b| b == b'.').count();
        let end = host.len() - host.iter().rev().take_while(|&&b| b == b'.').count();
        let host = if start < end {
            host[start..end].to_vec()
        } else {
            Vec::new()
        };
        u.host = Some(match attempt_ip(&host) {
            Some(ip) => ip.into_bytes(),
            None => escape_once(&host.to_ascii_lowercase()),
        });
    }
    let path = u.path.take().map(|p| unescape_repeatedly(&p));
    let path = if u.host.is_some() {
        Some(normalize_path(path.as_deref()))
    } else {
        path
    };
    u.path = path.map(|p| escape_once(&p));
}

fn normalize_path(path: Option<&[u8]>) -> Vec<u8> {
    let Some(path) = path.filter(|p| !p.is_empty()) else {
        return b"/".to_vec();
    };
    let mut kept: Vec<&[u8]> = Vec::new();
    for p in path.split(|&b| b == b'/').skip(1) {
        if p == b"." {
            continue;
        } else if p == b".." {
            if kept.pop().is_none() {
                kept.push(p);
            }
        } else {
            kept.push(p);
        }
    }
    let mut out = b"/".to_vec();
    if let Some((last, rest)) = kept.split_last() {
        for p in rest {
            if !p.is_empty() {
                out.extend_from_slice(p);
                out.push(b'/');
            }
        }
        out.extend_from_slice(last);
    }
    out
}

/// `inet_aton` rules (1 to 4 parts, decimal / octal / hex), as `gethostbyname` on a
/// numeric host; an all-digit host is masked to 32 bits.
fn attempt_ip(host: &[u8]) -> Option<String> {
    if host.is_empty() {
        return None;
    }
    let fmt = |n: u32| {
        format!(
            "{}.{}.{}.{}",
            n >> 24,
            (n >> 16) & 255,
            (n >> 8) & 255,
            n & 255
        )
    };
    if host.iter().all(u8::is_ascii_digit) {
        // Python masks the exact integer to 32 bits: arithmetic modulo 2^32 is exact.
        let n = host.iter().fold(0u32, |acc, &d| {
            acc.wrapping_mul(10).wrapping_add((d - b'0') as u32)
        });
        return Some(fmt(n));
    }
    let text = std::str::from_utf8(host).ok()?;
    let decimal = text.as_bytes()[0] != b'0'
        && text
            .split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    let octal = text.as_bytes()[0] == b'0'
        && text
            .split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| (b'0'..=b'7').contains(&b)));
    if !(decimal || octal) || text.split('.').count() > 4 {
        return None;
    }
    let parts: Vec<u64> = text
        .split('.')
        .map(|p| {
            if p.len() > 1 && p.starts_with('0') {
                u64::from_str_radix(&p[1..], 8).ok()
            } else {
                p.parse::<u64>().ok()
            }
        })
        .collect::<Option<Vec<u64>>>()?;
    let n: u64 = match parts.as_slice() {
        [a] => *a,
        [a, b] if *a < 256 && *b < (1 << 24) => (a << 24) | b,
        [a, b, c] if *a < 256 && *b < 256 && *c < (1 << 16) => (a << 24) | (b << 16) | c,
        [a, b, c, d] if *a < 256 && *b < 256 && *c < 256 && *d < 256 => {
            (a << 24) | (b << 16) | (c << 8) | d
        }
        _ => return None,
    };
    if n > 0xffff_ffff {
        return None;
    }
    Some(fmt(n as u32))
}

fn ia(u: &mut Url) {
    if let Some(h) = &mut u.host {
        h.make_ascii_lowercase();
        if u.scheme != b"dns" {
            if let Some(m) = res().www.find(h) {
                h.drain(..m.end());
            }
        }
    }
    let default_port = match u.scheme.to_ascii_lowercase().as_slice() {
        b"http" => Some(80),
        b"https" => Some(443),
        _ => Some(0),
    };
    if u.port == default_port {
        u.port = None;
    }
    if let Some(mut p) = u.path.take() {
        if !p.is_empty() {
            p.make_ascii_lowercase();
            for re in &res().path_session {
                if let Some(c) = re.captures(&p) {
                    let mut np = c.get(1).map(|m| m.as_bytes().to_vec()).unwrap_or_default();
                    np.extend_from_slice(c.get(3).map(|m| m.as_bytes()).unwrap_or_default());
                    p = np;
                }
            }
            if p.len() > 1 && p.ends_with(b"/") {
                p.pop();
            }
        }
        u.path = Some(p);
    }
    match u.query.take() {
        Some(mut q) if !q.is_empty() => {
            for re in &res().query_session {
                if let Some(c) = re.captures(&q) {
                    let mut nq = c.get(1).map(|m| m.as_bytes().to_vec()).unwrap_or_default();
                    if let Some(g2) = c.get(2).filter(|m| !m.as_bytes().is_empty()) {
                        nq.extend_from_slice(g2.as_bytes());
                    }
                    q = nq;
                }
            }
            q.make_ascii_lowercase();
            let q = alpha_reorder(&q);
            u.query = if q.is_empty() { None } else { Some(q) };
        }
        _ => u.last_delimiter = false,
    }
}

fn alpha_reorder(q: &[u8]) -> Vec<u8> {
    if q.len() <= 1 {
        return q.to_vec();
    }
    let mut args: Vec<(&[u8], Option<&[u8]>)> = q
        .split(|&b| b == b'&')
        .map(|a| match a.iter().position(|&b| b == b'=') {
            Some(i) => (&a[..i], Some(&a[i + 1..])),
            None => (a, None),
        })
        .collect();
    args.sort();
    let mut out = Vec::with_capacity(q.len());
    for (i, (k, v)) in args.iter().enumerate() {
        if i > 0 {
            out.push(b'&');
        }
        out.extend_from_slice(k);
        if let Some(v) = v {
            out.push(b'=');
            out.extend_from_slice(v);
        }
    }
    out
}

fn geturl(u: &Url) -> Vec<u8> {
    let mut s = Vec::with_capacity(64);
    match &u.host {
        Some(h) if !h.is_empty() => {
            let parts: Vec<&[u8]> = h.split(|&b| b == b'.').rev().collect();
            s.extend_from_slice(&parts.join(&b','));
            if let Some(p) = u.port {
                s.extend_from_slice(format!(":{p}").as_bytes());
            }
            s.push(b')');
        }
        _ => {
            s.extend_from_slice(&u.scheme);
            s.push(b':');
        }
    }
    match &u.path {
        Some(p) if !p.is_empty() => s.extend_from_slice(p),
        _ => {
            if u.query.is_some() {
                s.push(b'/');
            }
        }
    }
    if let Some(q) = &u.query {
        s.push(b'?');
        s.extend_from_slice(q);
    }
    if u.last_delimiter {
        s.push(b'?');
    }
    s
}

fn unescape_once(input: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(input.len());
    let mut i = 0;
    while i < input.len() {
        if input[i] == b'%' && i + 2 < input.len() {
            if let (Some(a), Some(b)) = (hex(input[i + 1]), hex(input[i + 2])) {
                out.push(a * 16 + b);
                i += 3;
                continue;
            }
        }
        out.push(input[i]);
        i += 1;
    }
    out
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

fn unescape_repeatedly(input: &[u8]) -> Vec<u8> {
    let mut cur = input.to_vec();
    loop {
        let next = unescape_once(&cur);
        if next == cur {
            return cur;
        }
        cur = next;
    }
}

/// Python's `quote_from_bytes` with surt's safe set: escapes all but ASCII letters,
/// digits, `_.-~` and ``!"$&'()*+,-./:;<=>?@[\]^_`{|}~``.
fn escape_once(input: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(input.len());
    for &b in input {
        let safe = b.is_ascii_alphanumeric() || b"_.-~!\"$&'()*+,/:;<=>?@[\\]^`{|}".contains(&b);
        if safe {
            out.push(b);
        } else {
            out.extend_from_slice(format!("%{b:02X}").as_bytes());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_keys() {
        // Values from pywb's sample CDX files and the surt package's tests.
        let cases = [
            ("http://example.com?example=1", "com,example)/?example=1"),
            ("http://www.iana.org/_css/2013.1/fonts/Inconsolata.otf", "org,iana)/_css/2013.1/fonts/inconsolata.otf"),
            ("metadata://gnu.org/software/wget/warc/MANIFEST.txt", "org,gnu)/software/wget/warc/manifest.txt"),
            ("http://test@example.com/", "com,example)/"),
            ("http://www.archive.org/", "org,archive)/"),
            ("http://archive.org/goo/?a=2&b&a=1", "org,archive)/goo?a=1&a=2&b"),
            ("http://archive.org:8080/", "org,archive:8080)/"),
            ("http://archive.org:80/", "org,archive)/"),
            ("https://www2.example.com:443/A/B/../C/", "com,example)/a/c"),
            ("dns:www.example.com", "dns:www.example.com"),
            ("http://192.168.1.254/info/", "254,1,168,192)/info"),
            ("http://example.com/a%20b%2541?x=%7e#frag", "com,example)/a%20ba?x=~"),
            ("example.com/path?", "com,example)/path"),
            ("filedesc://foo.arc.gz", "filedesc://foo.arc.gz"),
            ("", "-"),
            ("http://www.example.com/foo;jsessionid=x?JSESSIONID=0123456789abcdefghijklmnopqrstuv&b=1", "com,example)/foo;jsessionid=x?b=1"),
        ];
        for (url, want) in cases {
            assert_eq!(surt(url).as_deref(), Some(want), "{url}");
        }
        assert_eq!(surt("http://example.com:abc/"), None);
        assert_eq!(
            url_key("http://example.com:abc/"),
            "http://example.com:abc/"
        );
    }
}
