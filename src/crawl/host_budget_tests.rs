use super::*;
use crate::crawl::recent_visits::RECENT_VISITS;

const T0: u64 = 1_800_000_000;

fn schedule() -> ScheduleConfig {
    ScheduleConfig {
        min_interval: 10,
        max_interval: 86_400,
        initial_interval: 930,
        ..ScheduleConfig::default()
    }
}

/// A page seen `visits` times `every` seconds apart, `changes` of them changed.
fn seen(visits: u32, changes: u32, every: u64) -> PageHistory {
    PageHistory {
        visits,
        changes,
        observed_secs: u64::from(visits) * every,
        ..PageHistory::default()
    }
}

/// A hub whose `visits` visits, `every` seconds apart, found `new_urls` new links.
fn hub(visits: u32, new_urls: u32, every: u64) -> PageHistory {
    PageHistory {
        new_urls,
        ..seen(visits, visits, every)
    }
}

/// Prices `pages` on one host fetched once a `period`, thrice over (the last time at the
/// multiplier their counts give), and returns the verdicts of the last round.
fn price_all(b: &mut HostBudgets, pages: &[PageHistory], period: f64) -> Vec<Priced> {
    for p in pages {
        b.price("h.test", None, p, period, T0);
    }
    // Each page is priced with the multiplier found before it: the second round's all are.
    let mut priced = Vec::new();
    for round in 1..=2 {
        let at = T0 + round * SOLVE_EVERY_SECS;
        priced = pages
            .iter()
            .map(|p| b.price("h.test", Some(p), p, period, at).expect("a budget"))
            .collect();
    }
    priced
}

#[test]
fn the_multiplier_spends_what_politeness_allows() {
    // 200 pages changing about every 135 s and 200 about every 1,000 s, a fetch a second:
    // the revisits add up to the budget.
    let mut pages = vec![seen(32, 17, 100); 200];
    pages.extend(vec![seen(32, 3, 100); 200]);
    let mut b = HostBudgets::new(&schedule());
    let priced = price_all(&mut b, &pages, 1.0);
    let rate: f64 = priced.iter().map(|p| 1.0 / p.interval as f64).sum();
    assert!((rate - 1.0).abs() < 0.1, "{rate} fetches a second");
    // The slower pages are visited less often, but not in proportion to their rates.
    let (fast, slow) = (priced[0].interval, priced[399].interval);
    assert!(slow > fast && slow < 10 * fast, "{fast} s and {slow} s");
    assert!(priced.iter().all(|p| p.class == ValueClass::Freshness));
    // A looser budget (two fetches a second): shorter intervals for all.
    let mut loose = HostBudgets::new(&schedule());
    let more = price_all(&mut loose, &pages, 0.5);
    assert!(more[0].interval < fast && more[399].interval < slow);
}

/// A page changed at each of 32 visits 100 s apart, then at each of 12 probes 10 s apart.
fn too_fast() -> PageHistory {
    let mut h = seen(32, 32, 100);
    for _ in 0..RECENT_VISITS {
        h.visits += 1;
        h.changes += 1;
        h.observed_secs += 10;
        h.recent.push(10, true);
    }
    h
}

#[test]
fn pages_too_fast_to_keep_fresh_and_unchanging_ones_get_the_floor() {
    let mut pages = vec![too_fast(); 100]; // changed at every visit, probes too
    pages.extend(vec![seen(32, 10, 100); 100]);
    pages.extend(vec![seen(32, 0, 100); 100]); // never seen changing
    let mut b = HostBudgets::new(&schedule());
    let priced = price_all(&mut b, &pages, 2.0);
    let (fast, medium, still) = (priced[0], priced[100], priced[299]);
    assert_eq!(fast.class, ValueClass::Floor, "{fast:?}");
    assert_eq!(still.class, ValueClass::Floor, "{still:?}");
    assert_eq!(medium.class, ValueClass::Freshness, "{medium:?}");
    // The 100 unchanging pages take at most their share of the budget (half a fetch a
    // second), priced as changing half a time over the 3,200 s they were seen unchanged.
    let spent = 100.0 / still.interval as f64;
    assert!(spent <= UNCHANGING_SHARE * 0.5 * 1.01, "{still:?}");
    assert!(fast.interval > 50 * medium.interval, "{fast:?} {medium:?}");
    assert!(fast.freshness < 0.05 && still.freshness == 1.0);
}

#[test]
fn a_host_that_cannot_afford_its_floor_looks_at_unchanging_pages_less_often() {
    // 100,000 unchanging pages and a fetch a second: every --revisit-max would be more than
    // the whole budget. The floor takes a tenth of it, and the changing pages the rest.
    let mut pages = vec![seen(8, 0, 100); 100_000];
    pages.push(seen(32, 10, 100));
    let mut b = HostBudgets::new(&schedule());
    let priced = price_all(&mut b, &pages, 1.0);
    let floor = priced[0].interval as f64;
    let expected = 100_001.0 / (FLOOR_SHARE * 1.0);
    assert!((floor / expected - 1.0).abs() < 0.01, "{floor} s");
    assert!(priced[100_000].interval <= 60, "{:?}", priced[100_000]);
}

#[test]
fn a_hub_is_visited_by_its_yield_and_its_new_urls_are_set_aside() {
    let mut b = HostBudgets::new(&schedule());
    let pages = vec![seen(32, 17, 100); 100];
    let mut with_hubs = pages.clone();
    with_hubs.push(hub(32, 320, 100)); // a new URL every 10 s
    let plain = price_all(&mut HostBudgets::new(&schedule()), &pages, 2.0);
    let priced = price_all(&mut b, &with_hubs, 2.0);
    let feed = priced[100];
    assert_eq!(feed.class, ValueClass::Discovery);
    // λₕ/(2f²) = μ: the feed is looked at far more often than a page.
    assert!(
        feed.interval * 3 < priced[0].interval,
        "{feed:?} {:?}",
        priced[0]
    );
    // Its new URLs (a tenth of a fetch a second) come out of the revisits' budget.
    assert!(priced[0].interval > plain[0].interval, "{priced:?}");
    // A richer feed is looked at more often.
    let mut rich = with_hubs.clone();
    rich[100] = hub(32, 640, 100);
    let richer = price_all(&mut HostBudgets::new(&schedule()), &rich, 2.0);
    assert!(richer[100].interval < feed.interval);
}

#[test]
fn a_page_not_yet_revisited_is_learning_and_a_host_past_the_bound_is_unpriced() {
    let mut b = HostBudgets::new(&schedule());
    let first = b
        .price("h.test", None, &PageHistory::default(), 1.0, T0)
        .expect("a budget");
    assert_eq!(first.class, ValueClass::Learning);
    // Alone on its host, with a fetch a second: as often as --revisit-min allows.
    assert_eq!(first.interval, 10);
    for i in 1..MAX_HOSTS {
        b.price(
            &format!("h{i}.test"),
            None,
            &PageHistory::default(),
            1.0,
            T0,
        );
    }
    assert_eq!(b.hosts(), MAX_HOSTS);
    let past = b.price("one-more.test", None, &PageHistory::default(), 1.0, T0);
    assert!(past.is_none());
    assert!(b
        .price("h.test", None, &PageHistory::default(), 1.0, T0)
        .is_some());
}
