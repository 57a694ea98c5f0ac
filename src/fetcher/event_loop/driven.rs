//! The crawler as the driver sees it: [`Loop`] for [`Crawler`], each call its inherent method
//! of the same name (monomorphized and inlined: the driver's path costs what it did).

use std::io;
use std::time::Instant;

use super::Crawler;
use crate::fetcher::driver::Loop;
use crate::fetcher::fetch::{Completion, FetchRequest};

impl Loop for Crawler {
    #[inline]
    fn now(&self) -> Instant {
        Crawler::now(self)
    }

    #[inline]
    fn has_room(&self) -> bool {
        Crawler::has_room(self)
    }

    #[inline]
    fn fetch_push(&mut self, req: FetchRequest) {
        Crawler::fetch_push(self, req);
    }

    #[inline]
    fn prefetch(&mut self, host: &str) -> bool {
        Crawler::prefetch(self, host)
    }

    #[inline]
    fn is_idle(&self) -> bool {
        Crawler::is_idle(self)
    }

    #[inline]
    fn close_idle(&mut self) {
        Crawler::close_idle(self);
    }

    #[inline]
    fn turn(&mut self, wake_at: Option<Instant>) -> io::Result<()> {
        Crawler::turn(self, wake_at)
    }

    #[inline]
    fn interrupt(&mut self) {
        Crawler::interrupt(self);
    }

    #[inline]
    fn poll_completion(&mut self) -> Option<Completion> {
        Crawler::poll_completion(self)
    }

    #[inline]
    fn recycle(&mut self, c: Completion) {
        Crawler::recycle(self, c);
    }
}
