//! The process's file-descriptor budget: the socket budget must fit in it. As servers do, the
//! soft `RLIMIT_NOFILE` is raised to the hard one at start (Debian's default soft limit of
//! 1024 would otherwise cap a broad crawl at ~1000 hosts worked on at once).

use crate::fetcher::DEFAULT_MAX_SOCKETS;

/// Descriptors kept for everything but HTTP sockets: WARC and index files, crawl.log, the
/// journal and checkpoints, spool files of large bodies, frontier segments, DNS sockets,
/// stdio, the test web's pipes.
const RESERVED_FDS: u64 = 256;

/// Raises the soft open-files limit to the hard one; returns the soft limit in force after
/// (`None` where it cannot be read, or is unlimited).
pub fn raise_nofile() -> Option<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `getrlimit`/`setrlimit` read or write only the struct passed.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return None;
    }
    if lim.rlim_cur < lim.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: lim.rlim_max,
            rlim_max: lim.rlim_max,
        };
        // SAFETY: as above.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            lim.rlim_cur = lim.rlim_max;
        }
    }
    (lim.rlim_cur != libc::RLIM_INFINITY).then_some(lim.rlim_cur)
}

/// The socket budget: `asked` (`--max-sockets`) or the default, within what the descriptor
/// limit leaves, and never below the in-flight budget `max_conns` (which needs a socket each).
pub fn socket_budget(asked: Option<usize>, max_conns: usize, nofile: Option<u64>) -> usize {
    let want = asked.unwrap_or(DEFAULT_MAX_SOCKETS);
    let fits = nofile.map_or(usize::MAX, |n| {
        usize::try_from(n.saturating_sub(RESERVED_FDS)).unwrap_or(usize::MAX)
    });
    want.min(fits).max(max_conns).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_fits_the_limit_and_holds_the_in_flight_connections() {
        assert_eq!(socket_budget(None, 128, None), DEFAULT_MAX_SOCKETS);
        assert_eq!(
            socket_budget(None, 128, Some(1024)),
            1024 - RESERVED_FDS as usize
        );
        assert_eq!(socket_budget(Some(300), 128, Some(1 << 20)), 300);
        // Too low a limit or flag never starves the in-flight budget.
        assert_eq!(socket_budget(Some(10), 128, Some(100)), 128);
    }

    #[test]
    fn raising_leaves_the_soft_limit_at_the_hard_one() {
        let soft = raise_nofile();
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: reads into the struct passed.
        assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) }, 0);
        assert_eq!(lim.rlim_cur, lim.rlim_max);
        if lim.rlim_cur != libc::RLIM_INFINITY {
            assert_eq!(soft, Some(lim.rlim_cur));
        }
    }
}
