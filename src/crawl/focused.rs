//! A focused crawl (`--focus FILE`, ARCHITECTURE §7a): each page the crawl scans is scored
//! against the topic (`focus::TopicModel`: cosine of TF-IDF vectors of its visible text), and
//! its links are queued with a priority from that score and their anchor's, so the crawl
//! explores the on-topic regions first. The frontier then ranks within hosts too.

use super::focus::{anchor_score, link_score, priority_level, TopicModel};

/// Front queues (and lanes within a host) of a focused crawl: eight levels of relevance, so
/// a link whose anchor is on the topic goes ahead of one on the same page whose anchor is not.
pub(super) const FOCUS_PRIORITIES: usize = 8;
use crate::discovery::visible_text::{self, VisibleText};

/// The topic and the buffers scoring reuses.
pub(super) struct Focus {
    model: TopicModel,
    text: VisibleText,
    /// (href hash, anchor score) of the page being scanned, sorted.
    anchors: Vec<(u64, f32)>,
    /// The page being scanned's score.
    page: f32,
}

impl Focus {
    /// `None` when the topic text has no usable term (the app refuses it before).
    pub(super) fn new(topic: &[u8]) -> Option<Focus> {
        Some(Focus {
            model: TopicModel::new(topic)?,
            text: VisibleText::new(),
            anchors: Vec::new(),
            page: 0.0,
        })
    }

    /// Scores an HTML page (learning its terms) and its anchors; returns its score.
    pub(super) fn score(&mut self, html: &[u8]) -> f32 {
        visible_text::extract(html, &mut self.text);
        self.page = self.model.score_page(self.text.text());
        self.model.score_anchors(&self.text, &mut self.anchors);
        self.page
    }

    /// The frontier priority of the scored page's link `href`. An anchor whose words are
    /// all off the topic says where the link goes better than the page around it does: such
    /// a link waits in the last level, whatever the page's score (the idf the model learns
    /// drifts as the crawl goes, so levels from scores alone mix old off-topic links with
    /// new on-topic ones).
    pub(super) fn priority(&self, href: &[u8]) -> u8 {
        match anchor_score(&self.anchors, href) {
            Some(a) if a <= 0.0 => (FOCUS_PRIORITIES - 1) as u8,
            anchor => priority_level(link_score(self.page, anchor), FOCUS_PRIORITIES) as u8,
        }
    }
}
