//! Zero-filled arrays for the tables (`u64` slots, `u32` location payloads). A
//! large one is an anonymous memory mapping of its own: the kernel hands its pages
//! over zeroed (no memset), and a table dropped when it grows goes back to the
//! system at once, so a growing store
//! leaves no holes in the C heap (left to glibc, grown-out tables stayed in the heap
//! and the process kept about 15% more memory than its tables held). Doing it here
//! rather than lowering glibc's mmap threshold for the whole process leaves every
//! other allocation to glibc's adaptive threshold: with a fixed 32 KiB threshold,
//! the buffers of each Parquet row group were mapped, faulted in page by page and
//! unmapped again, a third of that path's CPU time.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// From this size on, an array is a mapping of its own (the threshold glibc was
/// told to use before; below it, a page's rounding would cost too much).
const MAP_FROM_BYTES: usize = 32 * 1024;

/// Heap arrays freed (grown out of) and request buffers freed between two trims
/// of the C heap. A block's arrays grow on the heap by 1/8 until they pass
/// [`MAP_FROM_BYTES`], and the space they leave is rarely reused: measured on a
/// hash server holding 3.9M MinHash band keys in 666 blocks, 43 MB of its 127 MB
/// were such holes in glibc's arenas (11 B a key). Once its tables were mapped,
/// the frames of its requests left 13 MB of its 64 MB free in the arenas of its
/// connection threads (38 MB taken from the system, 2.7 MB in use).
/// `malloc_trim` hands their pages back; at this step it runs a few dozen times
/// in a run that sends a server 100 MB of requests.
const TRIM_EVERY_BYTES: usize = 4 << 20;
/// Request buffers freed between two trims: each of a server's connection
/// threads has its own arena, which keeps what a request's frame and answer
/// freed until a trim (4-10 MB a server at 1M MinHash documents with a 4 MB
/// step, 1.1-2.6 B of its RSS a band key).
const REQUEST_TRIM_EVERY_BYTES: usize = 1 << 20;
static REQUESTS_FREED: AtomicUsize = AtomicUsize::new(0);
/// Heap arrays smaller than this are not counted (an empty table's array).
const COUNT_FROM_BYTES: usize = 1024;
static HEAP_FREED: AtomicUsize = AtomicUsize::new(0);
static TRIM_HEAP: AtomicBool = AtomicBool::new(false);

/// Has the C heap trimmed as tables grow out of it (see [`TRIM_EVERY_BYTES`]): for
/// a process whose memory is mostly its store (a hash server). Off by default:
/// the trimmed pages fault in again when small tables reuse them, which cost the
/// embedded store's insert loop CPU time.
pub fn trim_heap_as_tables_grow(on: bool) {
    TRIM_HEAP.store(on, Ordering::Relaxed);
}

/// Counts `bytes` of request buffers freed by a hash server (a request's frame
/// and what it was decoded into), trimming the C heap as [`heap_array_freed`]
/// does.
pub fn request_buffers_freed(bytes: usize) {
    freed(&REQUESTS_FREED, REQUEST_TRIM_EVERY_BYTES, bytes)
}

/// Counts `bytes` of heap array freed, trimming the C heap at each
/// [`TRIM_EVERY_BYTES`].
fn heap_array_freed(bytes: usize) {
    freed(&HEAP_FREED, TRIM_EVERY_BYTES, bytes)
}

/// Adds `bytes` to `counter`, trimming the C heap each time it passes a multiple
/// of `every`.
fn freed(counter: &AtomicUsize, every: usize, bytes: usize) {
    if bytes < COUNT_FROM_BYTES || !TRIM_HEAP.load(Ordering::Relaxed) {
        return;
    }
    let before = counter.fetch_add(bytes, Ordering::Relaxed);
    if before / every != (before + bytes) / every {
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        // SAFETY: malloc_trim only returns free pages of the allocator's own
        // arenas to the system; no memory in use is touched.
        unsafe {
            libc::malloc_trim(0);
        }
    }
}

/// The bytes an array of `bytes` occupies: a mapped one (from
/// [`MAP_FROM_BYTES`]) takes whole pages, so a table may fill them.
pub(crate) fn occupied_bytes(bytes: usize) -> usize {
    if bytes >= MAP_FROM_BYTES {
        bytes.div_ceil(4096) * 4096
    } else {
        bytes
    }
}

/// An element of a [`Zeroed`] array: a plain integer whose all-zero bytes are 0.
pub(crate) trait Word: Copy + Default + 'static {}
impl Word for u64 {}
impl Word for u32 {}
impl Word for u8 {}

pub(crate) enum Zeroed<T: Word = u64> {
    Heap(Box<[T]>),
    Mapped {
        ptr: NonNull<T>,
        len: usize,
    },
    /// Whole pages of the huge-page arena ([`arena`]).
    Arena {
        ptr: NonNull<T>,
        len: usize,
    },
}

// SAFETY: a `Mapped` array is owned by its `Zeroed` alone, as a `Box<[T]>` is.
unsafe impl<T: Word + Send> Send for Zeroed<T> {}
// SAFETY: shared access only reads through `&[T]`.
unsafe impl<T: Word + Sync> Sync for Zeroed<T> {}

impl<T: Word> Zeroed<T> {
    const SIZE: usize = std::mem::size_of::<T>();

    /// `len` zeros.
    pub(crate) fn new(len: usize) -> Self {
        #[cfg(target_os = "linux")]
        if len * Self::SIZE >= MAP_FROM_BYTES {
            if let Some(ptr) = arena::take(len * Self::SIZE) {
                return Zeroed::Arena {
                    ptr: ptr.cast(),
                    len,
                };
            }
        }
        #[cfg(unix)]
        if len * Self::SIZE >= MAP_FROM_BYTES {
            // SAFETY: asks for a fresh private anonymous mapping, which aliases
            // nothing; failure is checked below.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len * Self::SIZE,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            if p != libc::MAP_FAILED {
                if let Some(ptr) = NonNull::new(p.cast::<T>()) {
                    return Zeroed::Mapped { ptr, len };
                }
            }
            // No mapping (address space or map count exhausted): the heap's
            // allocation error, if any, is the one to report.
        }
        Zeroed::Heap(vec![T::default(); len].into_boxed_slice())
    }

    pub(crate) fn empty() -> Self {
        Zeroed::Heap(Box::new([]))
    }

    /// The bytes the array occupies (a mapping in whole pages).
    pub(crate) fn bytes(&self) -> usize {
        match self {
            Zeroed::Heap(b) => b.len() * Self::SIZE,
            Zeroed::Mapped { len, .. } | Zeroed::Arena { len, .. } => {
                (len * Self::SIZE).div_ceil(4096) * 4096
            }
        }
    }
}

impl<T: Word> Deref for Zeroed<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match self {
            Zeroed::Heap(b) => b,
            // SAFETY: the mapping holds `len` elements, readable and writable, for as
            // long as `self` lives.
            Zeroed::Mapped { ptr, len } | Zeroed::Arena { ptr, len } => unsafe {
                std::slice::from_raw_parts(ptr.as_ptr(), *len)
            },
        }
    }
}

impl<T: Word> DerefMut for Zeroed<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        match self {
            Zeroed::Heap(b) => b,
            // SAFETY: as in `deref`; `&mut self` makes the access exclusive.
            Zeroed::Mapped { ptr, len } | Zeroed::Arena { ptr, len } => unsafe {
                std::slice::from_raw_parts_mut(ptr.as_ptr(), *len)
            },
        }
    }
}

impl<T: Word> Drop for Zeroed<T> {
    fn drop(&mut self) {
        if let Zeroed::Heap(b) = self {
            heap_array_freed(b.len() * Self::SIZE);
        }
        #[cfg(unix)]
        if let Zeroed::Mapped { ptr, len } = self {
            // SAFETY: unmaps exactly the mapping made in `new`, used by no one else.
            unsafe {
                libc::munmap(ptr.as_ptr().cast(), *len * Self::SIZE);
            }
        }
        #[cfg(target_os = "linux")]
        if let Zeroed::Arena { ptr, len } = self {
            arena::give_back(ptr.cast(), *len * Self::SIZE);
        }
    }
}

impl<T: Word> fmt::Debug for Zeroed<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self {
            Zeroed::Heap(_) => "heap",
            Zeroed::Mapped { .. } => "mapped",
            Zeroed::Arena { .. } => "arena",
        };
        write!(f, "Zeroed({kind}, {} slots)", self.len())
    }
}

/// One reserved range of address space, advised to the kernel for huge pages,
/// from which the large arrays are cut in whole pages, never reused: a freed
/// array's pages go back to the system at once (`MADV_DONTNEED`), and new arrays
/// are cut further on, from fresh huge pages. A block's table (about 230 KB at
/// 50M keys in 1999 blocks) is far smaller than a huge page: mapped one by one,
/// no table got one, and a random slot cost a page-table walk.
#[cfg(target_os = "linux")]
mod arena {
    use std::ptr::NonNull;
    use std::sync::Mutex;

    /// Address space reserved (not memory): what the arrays of a run ever take,
    /// freed ones included, about nine times the largest store's tables.
    const RESERVE_BYTES: usize = 1 << 40;
    const PAGE: usize = 4096;

    struct Arena {
        base: usize,
        next: usize,
    }

    static ARENA: Mutex<Option<Option<Arena>>> = Mutex::new(None);

    fn reserve() -> Option<Arena> {
        // SAFETY: a fresh private anonymous mapping, aliasing nothing; failure
        // (address space limits, strict overcommit) leaves the arena off.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                RESERVE_BYTES,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return None;
        }
        // SAFETY: advice on the range just mapped; a refusal only costs huge pages.
        unsafe { libc::madvise(p, RESERVE_BYTES, libc::MADV_HUGEPAGE) };
        let base = p as usize;
        Some(Arena { base, next: base })
    }

    /// `bytes` of zeros in whole pages, or None once the range is used up.
    pub(super) fn take(bytes: usize) -> Option<NonNull<u8>> {
        let mut arena = ARENA.lock().unwrap_or_else(|e| e.into_inner());
        let a = arena.get_or_insert_with(reserve).as_mut()?;
        let bytes = bytes.div_ceil(PAGE) * PAGE;
        if a.next + bytes > a.base + RESERVE_BYTES {
            return None;
        }
        let p = a.next;
        a.next += bytes;
        NonNull::new(p as *mut u8)
    }

    /// Hands the pages of an array cut by [`take`] back to the system.
    pub(super) fn give_back(p: NonNull<u8>, bytes: usize) {
        // SAFETY: the whole pages of an array only its owner used; reading them
        // again would give zeros, and no one does.
        unsafe {
            libc::madvise(
                p.as_ptr().cast(),
                bytes.div_ceil(PAGE) * PAGE,
                libc::MADV_DONTNEED,
            )
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_and_large_arrays_start_zeroed_and_keep_what_is_written() {
        for len in [
            0,
            1,
            100,
            MAP_FROM_BYTES / 8 - 1,
            MAP_FROM_BYTES / 8,
            100_000,
        ] {
            let mut z = Zeroed::<u64>::new(len);
            assert_eq!(z.len(), len);
            assert!(z.iter().all(|&v| v == 0), "{len}");
            for (i, v) in z.iter_mut().enumerate() {
                *v = i as u64 * 3 + 1;
            }
            let half = len / 2;
            z.copy_within(0..half, half);
            // The second half repeats the first; an odd length's last slot stays.
            let want: Vec<u64> = (0..len)
                .map(|i| {
                    if i >= half && i < 2 * half {
                        i - half
                    } else {
                        i
                    }
                })
                .map(|i| i as u64 * 3 + 1)
                .collect();
            assert_eq!(&z[..], &want[..], "{len}");
            assert!(z.bytes() >= len * 8);
        }
        #[cfg(unix)]
        assert!(matches!(
            Zeroed::<u64>::new(MAP_FROM_BYTES / 8),
            Zeroed::Mapped { .. } | Zeroed::Arena { .. }
        ));
        // Half-width payloads map from the same byte size.
        let mut z = Zeroed::<u32>::new(MAP_FROM_BYTES / 4);
        #[cfg(unix)]
        assert!(matches!(z, Zeroed::Mapped { .. } | Zeroed::Arena { .. }));
        assert!(z.iter().all(|&v| v == 0));
        z[7] = u32::MAX;
        z.copy_within(7..8, 8);
        assert_eq!((z[8], z.bytes()), (u32::MAX, MAP_FROM_BYTES));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn arena_arrays_are_whole_pages_of_zeros_apart_and_freed_ones_stay_apart() {
        let big = MAP_FROM_BYTES / 8 + 3;
        let mut a = Zeroed::<u64>::new(big);
        let mut b = Zeroed::<u64>::new(big);
        assert!(matches!(a, Zeroed::Arena { .. }) && matches!(b, Zeroed::Arena { .. }));
        let (pa, pb) = (a.as_ptr() as usize, b.as_ptr() as usize);
        assert_eq!((pa % 4096, pb % 4096), (0, 0), "arrays start on a page");
        assert!(pa.abs_diff(pb) >= a.bytes(), "arrays do not overlap");
        a.iter_mut().for_each(|v| *v = u64::MAX);
        b[big - 1] = 7;
        drop(a);
        // b keeps its values when its neighbour's pages go back.
        assert_eq!((b[0], b[big - 1]), (0, 7));
        let c = Zeroed::<u64>::new(big);
        assert!(c.iter().all(|&v| v == 0), "a new array is zeros");
        assert_ne!(
            c.as_ptr() as usize,
            pa,
            "a freed array's pages are not cut again"
        );
    }
}
