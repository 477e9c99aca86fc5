//! The pages of its binary a serving server keeps: it hands back those its
//! start-up read once serving begins, and again every 64 MB of requests.
//!
//! `webdedup` is one binary with every mode. A server's start-up (arguments,
//! logging, the map, a snapshot) runs code and reads data spread over the file,
//! and the kernel maps 64-256 KB of the page cache around each page touched
//! (fault-around, large folios; `MADV_RANDOM` does not stop it: measured on
//! Linux 6.18, the same 64-256 KB a touched page with it and without). At 1M
//! MinHash documents that was 7.1 MB of each server's resident set (text 3.3,
//! read-only data 1.7, libraries 2.1), 1.9 B a band key, most of it never run
//! again. Dropping the read-only segments' page-table
//! entries (`MADV_DONTNEED` on a private file mapping) frees nothing the process
//! needs: the pages stay in the page cache, and those the serving path runs fault
//! back in. Written segments (data, bss, the relocated RELRO: the process's own
//! copies) are left alone, as is the vDSO.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Request bytes between two sheddings after start-up: what the first
/// connections ran once (handshakes, the first growths) goes too, and the pages
/// of the serving path come back within a millisecond each time.
const SHED_EVERY_BYTES: usize = 64 << 20;
static REQUEST_BYTES: AtomicUsize = AtomicUsize::new(0);

/// Counts a request's `bytes`, shedding the read-only pages again at each
/// [`SHED_EVERY_BYTES`].
pub(crate) fn request_answered(bytes: usize) {
    let before = REQUEST_BYTES.fetch_add(bytes, Ordering::Relaxed);
    if before / SHED_EVERY_BYTES != (before + bytes) / SHED_EVERY_BYTES {
        shed_start_up_pages();
    }
}

/// Half-open address ranges.
type Range = (usize, usize);

/// `ro` without the pages of the `written` ranges.
fn minus(ro: Range, written: &[Range]) -> Vec<Range> {
    let mut out = vec![ro];
    for &(a, b) in written {
        out = out
            .into_iter()
            .flat_map(|(s, e)| {
                if b <= s || a >= e {
                    return vec![(s, e)];
                }
                [(s, a.max(s)), (b.min(e), e)]
                    .into_iter()
                    .filter(|&(s, e)| s < e)
                    .collect()
            })
            .collect();
    }
    out
}

/// One loaded object's read-only pages, given its segments (`(start, end,
/// written)` for each loaded segment and RELRO region, as addresses): whole pages
/// of read-only segments that no written one shares.
fn read_only_pages(segments: &[(usize, usize, bool)], page: usize) -> Vec<Range> {
    let outward = |&(s, e, _): &(usize, usize, bool)| (s / page * page, e.div_ceil(page) * page);
    let written: Vec<Range> = segments.iter().filter(|s| s.2).map(outward).collect();
    segments
        .iter()
        .filter(|s| !s.2)
        .flat_map(|s| minus(outward(s), &written))
        .collect()
}

/// Hands back the read-only pages of the binary and its libraries (see the
/// module docs); returns the bytes of address range advised.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub(crate) fn shed_start_up_pages() -> usize {
    use std::ffi::{c_int, c_void, CStr};

    unsafe extern "C" fn each(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        ranges: *mut c_void,
    ) -> c_int {
        // SAFETY: the loader passes a valid `dl_phdr_info` whose program headers
        // and name live through the call; `ranges` is the Vec passed below.
        let (info, ranges) = unsafe { (&*info, &mut *ranges.cast::<Vec<Range>>()) };
        let name = if info.dlpi_name.is_null() {
            c""
        } else {
            // SAFETY: a NUL-terminated name from the loader.
            unsafe { CStr::from_ptr(info.dlpi_name) }
        };
        // The program (no name) and libraries from files, not the vDSO.
        if !(name.is_empty() || name.to_bytes().starts_with(b"/")) {
            return 0;
        }
        // SAFETY: `dlpi_phnum` headers at `dlpi_phdr`, as the loader says.
        let headers = unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum.into()) };
        let segments: Vec<(usize, usize, bool)> = headers
            .iter()
            .filter(|h| h.p_type == libc::PT_LOAD || h.p_type == libc::PT_GNU_RELRO)
            .map(|h| {
                let start = (info.dlpi_addr + h.p_vaddr) as usize;
                let written = h.p_type == libc::PT_GNU_RELRO || h.p_flags & libc::PF_W != 0;
                (start, start + h.p_memsz as usize, written)
            })
            .collect();
        ranges.extend(read_only_pages(&segments, page_size()));
        0
    }

    let mut ranges: Vec<Range> = Vec::new();
    // SAFETY: `each` only reads what the loader passes and pushes to `ranges`.
    unsafe { libc::dl_iterate_phdr(Some(each), (&mut ranges as *mut Vec<Range>).cast()) };
    let mut bytes = 0;
    for (s, e) in ranges {
        // SAFETY: whole pages of read-only file mappings of loaded objects: only
        // this process's page-table entries go; a later access faults the same
        // file contents back in.
        if unsafe { libc::madvise(s as *mut c_void, e - s, libc::MADV_DONTNEED) } == 0 {
            bytes += e - s;
        }
    }
    bytes
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub(crate) fn shed_start_up_pages() -> usize {
    0
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn page_size() -> usize {
    // SAFETY: sysconf reads a constant of the system.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as usize
    } else {
        4096
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_pages_are_kept_and_read_only_ones_rounded_out() {
        let p = 4096;
        // Read-only headers and text, RELRO inside the data segment, data.
        let segs = [
            (0, 0x1800, false),
            (0x2100, 0x5f00, false),
            (0x6840, 0x8000, true),
            (0x6840, 0x7100, true),
        ];
        assert_eq!(
            read_only_pages(&segs, p),
            vec![(0, 0x2000), (0x2000, 0x6000)]
        );
        // Text sharing its last page with data: that page is kept.
        let segs = [(0x1000, 0x3800, false), (0x3900, 0x5000, true)];
        assert_eq!(read_only_pages(&segs, p), vec![(0x1000, 0x3000)]);
        // Written pages in the middle of a read-only range split it.
        assert_eq!(
            minus((0, 0x10000), &[(0x4000, 0x6000), (0xf000, 0x11000)]),
            vec![(0, 0x4000), (0x6000, 0xf000)]
        );
    }

    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn code_and_constants_work_after_their_pages_are_shed() {
        static TABLE: [u64; 4] = [3, 1, 4, 1];
        let file_kb = || {
            let status = std::fs::read_to_string("/proc/self/status").unwrap();
            let line = status.lines().find(|l| l.starts_with("RssFile:")).unwrap();
            line.split_whitespace()
                .nth(1)
                .unwrap()
                .parse::<u64>()
                .unwrap()
        };
        let before = file_kb();
        let shed = shed_start_up_pages();
        let after = file_kb();
        assert!(shed > 0, "nothing shed");
        assert!(
            after < before,
            "file-backed pages resident: {before} kB, then {after} kB"
        );
        // Code runs and read-only data reads the same: the pages fault back in.
        let text = format!("{:?}", TABLE.iter().rev().collect::<Vec<_>>());
        assert_eq!(text, "[1, 4, 1, 3]");
        assert!(shed_start_up_pages() > 0, "shedding twice");
    }
}
