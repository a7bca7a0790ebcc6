//! Settings of glibc's allocator for what each command does (elsewhere glibc's defaults
//! stand).

/// glibc gives each thread that allocates an arena of its own, a 64 MiB mapping set up
/// and first touched in the thread, whose freed memory the other threads do not reuse:
/// two arenas serve all threads. For a recording, whose threads allocate little, half a
/// millisecond less CPU a run and a smaller resident set; two, not one, so that the final
/// finalize's decoding thread has one to itself. For the daemon, whose request and task
/// threads come and go, a resident set that stays put: it grew from 8.4 to 15.4 MiB over
/// 300 tasks with an arena per thread (tests/e2e/daemon.rs).
pub fn share_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt sets a parameter of the allocator, under its own lock.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
}

/// For the commands that only finalize, and the daemon: allocations from 32 KiB (the reader's buffers, the
/// columns) get pages of their own, so that a growing column moves by mremap instead of
/// leaving its old copy in the heap. glibc's threshold, 128 KiB, rises to the size of each
/// such block freed; the copies left behind were 0.4 MB of the 8.6 MB that finalizing
/// 100,000 markers, each with its own text, peaked at. Not for a recording: its marker-file
/// thread then took 0.62 µs a marker instead of 0.54. For the daemon, whose profiles of an
/// hour hold tens of MB for a moment: the end of a 1-hour task at 0.1 s peaked at 30 MiB
/// instead of 66, and the daemon went back to 6.7 MiB after it instead of keeping 50 in
/// its heap (scripts/bench/daemon --task-end); its tasks' marker files are read a batch a
/// scan gap, not a marker at a time.
pub fn give_large_allocations_their_own_pages() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: sets a parameter of glibc's allocator, before any other thread runs.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 * 1024);
    }
}
