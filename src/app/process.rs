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
    // ru_maxrss (KiB on Linux) survives exec: a process started by a larger one (a test
    // binary, a script) would report its parent's peak. VmHWM is this image's own.
    let peak = peak_resident_bytes().unwrap_or((usage.ru_maxrss.max(0) as u64) * 1024);
    (cpu, peak)
}

/// The peak resident set of this process image, from `/proc/self/status`'s `VmHWM` (Linux);
/// `None` where there is none.
fn peak_resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line["VmHWM:".len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_usage_reports_something() {
        let (_cpu, rss) = process_usage();
        assert!(rss > 0);
    }

    #[test]
    fn the_resident_set_is_at_most_the_peak() {
        let now = resident_bytes().expect("Linux has /proc/self/statm");
        let (_, peak) = process_usage();
        assert!(now > 0 && now <= peak + (1 << 20), "{now} vs peak {peak}");
    }

    /// The peak is this image's (VmHWM), not getrusage's, which a child inherits from the
    /// process that started it: one test binary running many crawls made each child report
    /// hundreds of MB.
    #[test]
    fn the_peak_is_read_from_this_image() {
        // The peak only grows: read before and after, process_usage's lies between.
        let before = peak_resident_bytes().expect("Linux has VmHWM");
        let (_, peak) = process_usage();
        let after = peak_resident_bytes().unwrap();
        assert!(before <= peak && peak <= after, "{before} {peak} {after}");
    }
}
