//! What this process uses: CPU time and memory, as the kernel counts them (for the run's
//! summary, the bench and `--metrics`).

/// CPU time (user + system) used by this process so far, and its peak resident set in bytes.
pub fn process_usage() -> (std::time::Duration, u64) {
    // SAFETY: getrusage writes into the zeroed struct we own; RUSAGE_SELF is always valid.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    if rc != 0 {
        return (std::time::Duration::ZERO, 0);
    }
    let tv = |t: libc::timeval| {
        std::time::Duration::from_secs(t.tv_sec.max(0) as u64)
            + std::time::Duration::from_micros(t.tv_usec.max(0) as u64)
    };
    let cpu = tv(usage.ru_utime) + tv(usage.ru_stime);
    // The peak of this program's own memory (VmHWM), not ru_maxrss: Linux carries ru_maxrss
    // across execve, so a crawler spawned by a large process (posix_spawn runs the child in
    // the parent's memory until exec) reported the parent's peak, 400 MB under a test harness.
    let peak = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| vm_hwm(&status))
        // Linux reports ru_maxrss in KiB.
        .unwrap_or((usage.ru_maxrss.max(0) as u64) * 1024);
    (cpu, peak)
}

/// The `VmHWM:` line of `/proc/PID/status` (the peak resident set of the process's memory
/// since its last execve), in bytes.
fn vm_hwm(status: &str) -> Option<u64> {
    let line = status.lines().find_map(|l| l.strip_prefix("VmHWM:"))?;
    let kib: u64 = line.trim().strip_suffix("kB")?.trim().parse().ok()?;
    Some(kib * 1024)
}

/// The resident set now, from `/proc/self/statm` (Linux); `None` where there is none.
pub fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * page.max(0) as u64)
}

/// Bytes of free memory at the top of glibc's heap past which it is given back to the
/// kernel: glibc's default, fixed.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const TRIM_THRESHOLD: libc::c_int = 128 << 10;

/// Keeps glibc's heap from holding on to freed memory. By default glibc raises its trim
/// threshold (and its mmap threshold) each time a large block is freed, up to 64 MB, so a
/// long crawl that frees big buffers now and then keeps that much freed memory resident: the
/// 5-million-URL frontier test (tests/durable.rs) peaked 5 MB higher with it. A fixed
/// threshold turns that adjustment off. Large buffers on the crawl's path are pooled, so
/// they are not mapped and unmapped page after page.
pub fn keep_heap_small() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` sets one of the allocator's parameters; before any thread starts.
    unsafe {
        libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_usage_reports_something() {
        let (_cpu, rss) = process_usage();
        assert!(rss > 0);
    }

    #[test]
    fn the_peak_is_read_from_the_status_file() {
        let status = "Name:\tspinneret\nVmPeak:\t  123456 kB\nVmHWM:\t   46080 kB\nVmRSS:\t 1 kB\n";
        assert_eq!(vm_hwm(status), Some(46080 * 1024));
        assert_eq!(vm_hwm("Name:\tx\n"), None);
        assert_eq!(vm_hwm("VmHWM:\t lots kB\n"), None);
    }

    #[test]
    fn the_resident_set_is_at_most_the_peak() {
        let now = resident_bytes().expect("Linux has /proc/self/statm");
        let (_, peak) = process_usage();
        assert!(now > 0 && now <= peak + (1 << 20), "{now} vs peak {peak}");
    }
}
