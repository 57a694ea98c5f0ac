//! Finished fetches on their way to the driver, and their buffers on the way back: a
//! completion's content is made ready (content coding undone, a spilled body's first part
//! read back) when the driver takes it, and its decoder and buffers are pooled for later
//! fetches when the driver gives it back.

use super::{Crawler, POOLED_BUFFER_MAX, POOL_BUDGET};
use crate::fetcher::fetch::Completion;
use crate::fetcher::spool::read_prefix;
use crate::http::{self, DecodeOptions, Framing, ResponseDecoder};
use crate::ReturnCode;

impl Crawler {
    /// The next finished request, oldest first, with its content ready for scanning.
    pub fn poll_completion(&mut self) -> Option<Completion> {
        let mut c = self.completions.pop_front()?;
        self.prepare(&mut c);
        let pool = &self.receive_pool;
        c.share_raw(|raw| pool.share(raw));
        self.stats.outcomes.add(c.outcome);
        Some(c)
    }

    /// Takes back a completion's buffers for reuse by later fetches (its spool file goes
    /// when the last holder, perhaps the WARC writer, lets go of it).
    pub fn recycle(&mut self, c: Completion) {
        if let Some((spool, _)) = &c.spool {
            self.spooled = self.spooled.saturating_sub(spool.len());
        }
        self.buffered = self.buffered.saturating_sub(c.buffered());
        // A shared raw buffer goes to the receive pool when its last holder (perhaps the WARC
        // writer, later) drops it; the decoder takes one there when its next response begins.
        drop(c.raw);
        if let Some(mut d) = c.decoder {
            let size = d.capacity();
            if size <= POOLED_BUFFER_MAX && self.pooled + size <= POOL_BUDGET {
                d.reset(false);
                self.pooled += d.capacity();
                self.decoder_pool.push(d);
            }
        }
        for buf in [Some(c.request_bytes), c.decoded].into_iter().flatten() {
            self.pool_buffer(buf);
        }
    }

    pub(super) fn pool_buffer(&mut self, buf: Vec<u8>) {
        let size = buf.capacity();
        if size <= POOLED_BUFFER_MAX && self.pooled + size <= POOL_BUDGET {
            self.pooled += size;
            self.buffer_pool.push(buf);
        }
    }

    pub(super) fn take_buffer(&mut self) -> Vec<u8> {
        match self.buffer_pool.pop() {
            Some(mut b) => {
                self.pooled = self.pooled.saturating_sub(b.capacity());
                b.clear();
                b
            }
            None => Vec::new(),
        }
    }

    /// Makes a completion's content: the body with content coding undone, at most
    /// `max_scan_bytes` of it; for a spilled body, its first part read back from the spool.
    /// Done here, one completion at a time, so a bomb or a huge page costs the scan limit once.
    fn prepare(&mut self, c: &mut Completion) {
        let keep = self.config.max_scan_bytes;
        let limits = self.config.limits;
        let Some(d) = c.decoder.as_ref() else {
            return;
        };
        let Some(head) = d.head() else {
            return;
        };
        let success = c.outcome == ReturnCode::Success;
        if let Some((spool, _)) = &c.spool {
            c.content_complete = false;
            let mut raw = self.take_buffer();
            if read_prefix(&**spool, keep, &mut raw).is_err() {
                raw.clear();
            }
            // All of it read back: decoding can judge the whole body (a bomb is a bomb).
            let whole = raw.len() as u64 == spool.len();
            if head.framing == Framing::Chunked {
                // De-chunk the prefix with a scratch decoder fed the head again.
                let mut scratch = ResponseDecoder::new(limits);
                scratch.reset(false);
                let _ = scratch.process(&d.raw()[..d.head_len()]);
                let _ = scratch.process(&raw);
                raw.clear();
                raw.extend_from_slice(scratch.body());
            }
            let mut out = self.take_buffer();
            let opts = DecodeOptions {
                keep,
                input_complete: whole,
            };
            match http::decode_content_with(head, &raw, &limits, opts, &mut out) {
                Ok(Some(_)) if success => {
                    self.pool_buffer(raw);
                    c.decoded = Some(out);
                }
                Err(e) if success => {
                    self.pool_buffer(out);
                    c.outcome = e.return_code();
                    c.decoded = Some(raw);
                }
                _ => {
                    self.pool_buffer(out);
                    raw.truncate(keep);
                    c.decoded = Some(raw);
                }
            }
            return;
        }
        let body = d.body();
        if !success {
            // A failed fetch's content is its body as far as it came (robots.txt over the
            // size limit is still parsed that far).
            c.content_complete = body.len() <= keep;
            return;
        }
        let mut out = self.take_buffer();
        let opts = DecodeOptions {
            keep,
            input_complete: true,
        };
        match http::decode_content_with(head, body, &limits, opts, &mut out) {
            Ok(Some(total)) => {
                c.content_complete = total <= keep as u64;
                c.decoded = Some(out);
            }
            Ok(None) if body.len() > keep => {
                out.extend_from_slice(&body[..keep]);
                c.content_complete = false;
                c.decoded = Some(out);
            }
            Ok(None) => self.pool_buffer(out),
            Err(e) => {
                self.pool_buffer(out);
                c.outcome = e.return_code();
            }
        }
    }
}
