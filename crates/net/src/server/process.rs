//! The server process's own settings, taken once before it serves: open-file
//! limit, huge pages, the C heap's arenas.

/// Keeps the server's memory off transparent huge pages. The tables' arena asks
/// for them for the embedded store's insert loop (a random slot then costs no
/// page-table walk); a server's time goes to its requests, and there a huge page
/// was memory held ahead of need: the arena's last one is faulted in whole, and
/// khugepaged fills the freed ranges of grown tables back into huge pages. At 1M
/// MinHash documents a server's arena held 34.4-36.2 MB for 34.6-34.7 MB of
/// tables with them, 34.3-34.4 MB without.
pub(super) fn no_huge_pages() {
    #[cfg(target_os = "linux")]
    // SAFETY: sets a flag of this process (inherited by no one: the server
    // starts no programs); no memory is touched.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

/// Has every thread of the server allocate from the C heap's one arena. glibc
/// gives each thread that allocates an arena of its own (up to 8 a core), and
/// each kept the pages its requests' buffers and its small tables left free
/// between two trims: at 1M MinHash documents a server held 2.2-3.5 MB in its
/// arenas and heap, 2.2-2.9 MB in one arena. The server's threads allocate a few
/// buffers a request, so sharing one costs them little; on a many-core machine
/// the spread grew with the cores.
pub(super) fn one_malloc_arena() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: a setting of the allocator, taken before the runtime's threads
    // start; it changes no memory in use.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

/// Raises the soft limit of open files to the hard one (as Go's runtime does):
/// each connection is a file descriptor, and the default soft limit (often 1024)
/// is below what `--max-connections` allows (a room of connections in handshake
/// plus the slots).
pub(super) fn raise_fd_limit(wanted: usize) {
    // SAFETY: getrlimit/setrlimit only read and write the struct passed.
    unsafe {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return;
        }
        if lim.rlim_cur < lim.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: lim.rlim_max,
                rlim_max: lim.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                lim.rlim_cur = lim.rlim_max;
            }
        }
        if (lim.rlim_cur as u128) < wanted as u128 {
            tracing::warn!(
                "open files are limited to {}; --max-connections wants about {wanted} (raise `ulimit -n`)",
                lim.rlim_cur
            );
        }
    }
}
