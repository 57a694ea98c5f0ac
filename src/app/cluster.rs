//! One node of a crawl spread over machines (`--cluster redis://… --cluster-nodes N
//! --cluster-node K`): the node is partition K of N, and Redis Streams carry URL batches
//! between nodes. Redis I/O runs on its own thread with the sync client, so the event loop
//! never blocks outside mio; the loop talks to it through channels and is woken by its
//! `mio::Waker`.
//!
//! In Redis (all keys under `spinneret:`):
//! - `inbox:K`: node K's stream of batches, read with XREADGROUP (group `nodes`). An entry is
//!   acknowledged (XACK, then deleted) only once its URLs are in the node's committed journal,
//!   so a node killed before that gets the entry again (its pending entries are read first on
//!   restart): nothing is lost, and the node's URL-seen set drops what it already had.
//! - `inflight`: per node, batches added to its inbox and not acknowledged. Adding and
//!   counting are one transaction, acknowledging and uncounting one script.
//! - `idle`, `stopped`: per node. A node is idle when its frontier is empty, its outboxes are
//!   flushed and it has taken every batch handed to it; it is marked busy in Redis as soon as
//!   its thread reads a batch, before acknowledging it. So "every node idle or stopped, nothing
//!   in flight to a live node" (checked atomically by a script, then recorded as `done`)
//!   holds only when no work exists anywhere. A node that never started, or died, is not
//!   idle: the others wait for it (its restart is `spinneret resume`).
//! - `seeds`: every seed given to any node, so each node has the whole crawl's scope.
//! - `nodes`: N, so nodes started with different counts are refused; `node:K`: the node's
//!   counters for `spinneret cluster-status`.

use std::collections::VecDeque;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use redis::{Connection, Value};

use crate::app::config::ClusterConfig;
use crate::app::partition::{Exchange, NodeStats};
use crate::crawl::splitter::Batch;

/// Key prefix of everything a crawl keeps in Redis.
pub(crate) const PREFIX: &str = "spinneret";
/// The consumer group reading each inbox.
const GROUP: &str = "nodes";
/// Entries taken from the inbox per read.
const READ_COUNT: usize = 16;
/// How long one inbox read may block when the loop has nothing for Redis.
const READ_BLOCK_MS: u64 = 20;
/// How often an idle node asks whether the whole crawl is done.
const DONE_CHECK: Duration = Duration::from_millis(100);
/// How long to wait before reconnecting after a Redis error.
const RECONNECT_DELAY: Duration = Duration::from_secs(1);
/// Connect and command timeout.
const REDIS_TIMEOUT: Duration = Duration::from_secs(10);

/// Acknowledges entries of an inbox and counts them out of flight, once each (XACK says how
/// many were still pending), then deletes them: Redis memory stays bounded by what is in
/// flight. KEYS: inbox, inflight. ARGV: group, node, ids….
const ACK_SCRIPT: &str = r"
local n = redis.call('XACK', KEYS[1], ARGV[1], unpack(ARGV, 3))
if n > 0 then redis.call('HINCRBY', KEYS[2], ARGV[2], -n) end
redis.call('XDEL', KEYS[1], unpack(ARGV, 3))
return n";

/// Whether the whole crawl is done; records it once it is. KEYS: nodes, idle, stopped,
/// inflight, done.
const DONE_SCRIPT: &str = r"
if redis.call('GET', KEYS[5]) == '1' then return 1 end
local n = tonumber(redis.call('GET', KEYS[1]) or '0')
for k = 0, n - 1 do
  if redis.call('HGET', KEYS[3], k) ~= '1' then
    if redis.call('HGET', KEYS[2], k) ~= '1' then return 0 end
    if tonumber(redis.call('HGET', KEYS[4], k) or '0') > 0 then return 0 end
  end
end
redis.call('SET', KEYS[5], '1')
return 1";

pub(crate) fn key(name: &str) -> String {
    format!("{PREFIX}:{name}")
}

fn inbox(node: u32) -> String {
    format!("{PREFIX}:inbox:{node}")
}

/// What the loop asks of the Redis thread, in order.
enum ToRedis {
    Send(Batch),
    /// Entry IDs whose URLs are committed to the node's journal.
    Ack(Vec<String>),
    /// The node is idle (or busy again), having taken this many batches.
    Idle(bool, u64),
    Stop,
    Stats(NodeStats),
    Quit,
}

/// What the Redis thread hands the loop.
#[derive(Default)]
struct Inbound {
    batches: VecDeque<(String, Batch)>,
    delivered: VecDeque<Batch>,
    seeds: VecDeque<String>,
    error: Option<String>,
}

/// The loop's side of a cluster node: an [`Exchange`] over Redis.
pub struct ClusterExchange {
    tx: Sender<ToRedis>,
    rx: Receiver<Inbound>,
    inbound: Inbound,
    waker_tx: Sender<Arc<mio::Waker>>,
    done: Arc<AtomicBool>,
    /// Batches taken from the inbox.
    taken: u64,
    /// IDs taken since the last journal mark, and those waiting for their mark's commit.
    unmarked: Vec<String>,
    marked: VecDeque<(u64, Vec<String>)>,
    /// When the figures were last published, and the pages then; the latest figures.
    last_stats: Option<(Instant, u64)>,
    latest: Option<NodeStats>,
    /// URLs a resumed node had ended before this run (its figures start from there).
    pub done_before: u64,
    thread: Option<JoinHandle<()>>,
}

/// A connection whose connect and every command are bounded by [`REDIS_TIMEOUT`].
fn connect(client: &redis::Client) -> redis::RedisResult<Connection> {
    let con = client.get_connection_with_timeout(REDIS_TIMEOUT)?;
    con.set_read_timeout(Some(REDIS_TIMEOUT))?;
    Ok(con)
}

/// The cluster's Redis at `url`, connected; errors name the URL.
pub(crate) fn open(url: &str) -> Result<(redis::Client, Connection), String> {
    let fail = |e: redis::RedisError| format!("Redis at {url}: {e}");
    let client = redis::Client::open(url).map_err(fail)?;
    let mut con = connect(&client).map_err(fail)?;
    redis::cmd("PING").query::<String>(&mut con).map_err(fail)?;
    Ok((client, con))
}

/// Connects to the cluster (checking that it runs `nodes` nodes), publishes `seeds` for every
/// node's scope and starts the Redis thread.
pub fn join(config: &ClusterConfig, seeds: &[String]) -> Result<ClusterExchange, String> {
    let fail = |e: redis::RedisError| format!("Redis at {}: {e}", config.url);
    let (client, mut con) = open(&config.url)?;
    let set: bool = redis::cmd("SET")
        .arg(key("nodes"))
        .arg(config.nodes)
        .arg("NX")
        .query(&mut con)
        .map_err(fail)?;
    if !set {
        let n: u32 = redis::cmd("GET")
            .arg(key("nodes"))
            .query(&mut con)
            .map_err(fail)?;
        if n != config.nodes {
            return Err(format!(
                "the crawl in Redis at {} runs {n} nodes, not {} (--cluster-nodes)",
                config.url, config.nodes
            ));
        }
    }
    // The group exists once; a node restarting keeps its position and pending entries.
    let created: redis::RedisResult<Value> = redis::cmd("XGROUP")
        .arg("CREATE")
        .arg(inbox(config.node))
        .arg(GROUP)
        .arg("0")
        .arg("MKSTREAM")
        .query(&mut con);
    if let Err(e) = created {
        if e.code() != Some("BUSYGROUP") {
            return Err(fail(e));
        }
    }
    let mut p = redis::pipe();
    p.atomic();
    p.cmd("HSET").arg(key("idle")).arg(config.node).arg(0);
    p.cmd("HSET").arg(key("stopped")).arg(config.node).arg(0);
    for s in seeds {
        p.cmd("XADD").arg(key("seeds")).arg("*").arg("u").arg(s);
    }
    p.query::<()>(&mut con).map_err(fail)?;

    let (tx, thread_rx) = mpsc::channel();
    let (thread_tx, rx) = mpsc::channel();
    let (waker_tx, waker_rx) = mpsc::channel();
    let done = Arc::new(AtomicBool::new(false));
    let mut side = RedisSide {
        config: config.clone(),
        client,
        con: Some(con),
        to_loop: thread_tx,
        waker: None,
        waker_rx,
        done: done.clone(),
        reading_pending: true,
        pending_from: "0".into(),
        seeds_from: "0".into(),
        outbox: VecDeque::new(),
        acks: Vec::new(),
        idle: false,
        taken_by_loop: 0,
        handed: 0,
        stopped: false,
        published: Some((false, false)),
        last_done_check: None,
        stats: None,
        stats_sent: true,
    };
    let thread = std::thread::Builder::new()
        .name("redis".into())
        .spawn(move || side.run(thread_rx))
        .map_err(|e| format!("cannot start the Redis thread: {e}"))?;
    Ok(ClusterExchange {
        tx,
        rx,
        inbound: Inbound::default(),
        waker_tx,
        done,
        taken: 0,
        unmarked: Vec::new(),
        marked: VecDeque::new(),
        last_stats: None,
        latest: None,
        done_before: 0,
        thread: Some(thread),
    })
}

impl ClusterExchange {
    /// Takes what the Redis thread handed over since the last look.
    fn gather(&mut self) {
        loop {
            match self.rx.try_recv() {
                Ok(mut i) => {
                    self.inbound.batches.append(&mut i.batches);
                    self.inbound.delivered.append(&mut i.delivered);
                    self.inbound.seeds.append(&mut i.seeds);
                    if i.error.is_some() {
                        self.inbound.error = i.error;
                    }
                }
                Err(_) => return,
            }
        }
    }

    /// Stops the Redis thread once what the loop sent is written, with the final figures.
    pub fn close(&mut self) {
        if let Some(s) = self.latest.take() {
            let _ = self.tx.send(ToRedis::Stats(s));
        }
        let _ = self.tx.send(ToRedis::Quit);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for ClusterExchange {
    fn drop(&mut self) {
        self.close();
    }
}

impl Exchange for ClusterExchange {
    fn set_waker(&mut self, waker: Arc<mio::Waker>) {
        let _ = self.waker_tx.send(waker);
    }

    fn send(&mut self, batch: Batch) -> io::Result<()> {
        self.tx
            .send(ToRedis::Send(batch))
            .map_err(|_| io::Error::other("the Redis thread stopped"))
    }

    fn receive(&mut self) -> Option<Batch> {
        if self.inbound.batches.is_empty() {
            self.gather();
        }
        let (id, batch) = self.inbound.batches.pop_front()?;
        self.taken += 1;
        self.unmarked.push(id);
        Some(batch)
    }

    fn journals_received(&self) -> bool {
        true
    }

    fn received_through(&mut self, mark: u64) {
        if !self.unmarked.is_empty() {
            self.marked
                .push_back((mark, std::mem::take(&mut self.unmarked)));
        }
    }

    fn committed(&mut self, committed: u64) {
        let mut ids = Vec::new();
        while self.marked.front().is_some_and(|(m, _)| *m <= committed) {
            if let Some((_, mut batch_ids)) = self.marked.pop_front() {
                ids.append(&mut batch_ids);
            }
        }
        if !ids.is_empty() {
            let _ = self.tx.send(ToRedis::Ack(ids));
        }
    }

    fn delivered(&mut self) -> Option<Batch> {
        if self.inbound.delivered.is_empty() {
            self.gather();
        }
        self.inbound.delivered.pop_front()
    }

    fn scope_seed(&mut self) -> Option<String> {
        if self.inbound.seeds.is_empty() {
            self.gather();
        }
        self.inbound.seeds.pop_front()
    }

    fn set_idle(&mut self, idle: bool) -> bool {
        // Acknowledgements wait for a commit: not idle in Redis until they are sent.
        let idle = idle && self.marked.is_empty() && self.unmarked.is_empty();
        let _ = self.tx.send(ToRedis::Idle(idle, self.taken));
        self.done.load(Ordering::Acquire)
    }

    fn stop(&mut self) {
        let _ = self.tx.send(ToRedis::Stop);
    }

    /// Ctrl-C stops a node as a crash does: the others wait for its resume.
    fn interrupted(&mut self) {}

    /// A Redis error (the thread retries on its own).
    fn take_notice(&mut self) -> Option<String> {
        self.gather();
        self.inbound.error.take()
    }

    fn progress(&mut self, now: Instant, mut stats: NodeStats) {
        stats.pages += self.done_before;
        self.latest = Some(stats);
        let since = self.last_stats.map(|(t, p)| (now.duration_since(t), p));
        if since.is_some_and(|(d, _)| d < Duration::from_secs(1)) {
            return;
        }
        if let Some((d, p)) = since {
            stats.pages_per_sec = stats.pages.saturating_sub(p) as f64 / d.as_secs_f64();
        }
        self.last_stats = Some((now, stats.pages));
        let _ = self.tx.send(ToRedis::Stats(stats));
    }

    fn has_news(&mut self) -> bool {
        self.gather();
        !self.inbound.batches.is_empty()
            || !self.inbound.delivered.is_empty()
            || !self.inbound.seeds.is_empty()
            || self.done.load(Ordering::Acquire)
    }
}

/// The Redis thread's state.
struct RedisSide {
    config: ClusterConfig,
    client: redis::Client,
    con: Option<Connection>,
    to_loop: Sender<Inbound>,
    waker: Option<Arc<mio::Waker>>,
    waker_rx: Receiver<Arc<mio::Waker>>,
    done: Arc<AtomicBool>,
    /// Reading this node's pending entries (from before a restart) before new ones.
    reading_pending: bool,
    /// The last pending entry read.
    pending_from: String,
    /// The last seed entry read.
    seeds_from: String,
    /// Batches not yet written to their owner's inbox.
    outbox: VecDeque<Batch>,
    /// Entry IDs to acknowledge (kept until Redis has taken them).
    acks: Vec<String>,
    /// What the loop last said, and how many batches it had taken then.
    idle: bool,
    taken_by_loop: u64,
    /// Batches handed to the loop.
    handed: u64,
    stopped: bool,
    /// The (idle, stopped) flags Redis has; `None` when unknown (start, reconnect).
    published: Option<(bool, bool)>,
    last_done_check: Option<Instant>,
    /// The latest figures, and whether Redis has them.
    stats: Option<NodeStats>,
    stats_sent: bool,
}

impl RedisSide {
    fn run(&mut self, rx: Receiver<ToRedis>) {
        // Ends when the loop says so (or is gone), once what it said is in Redis (or Redis
        // is unreachable then: undelivered URLs stay in the journal, unacknowledged entries
        // in the inbox, both for a resume).
        loop {
            let mut quit = false;
            let mut got_message = false;
            loop {
                match rx.try_recv() {
                    Ok(ToRedis::Quit) | Err(TryRecvError::Disconnected) => {
                        quit = true;
                        break;
                    }
                    Ok(m) => {
                        got_message = true;
                        self.handle(m);
                    }
                    Err(TryRecvError::Empty) => break,
                }
            }
            if let Ok(w) = self.waker_rx.try_recv() {
                self.waker = Some(w);
            }
            let turn = self.sync().and_then(|()| {
                if quit {
                    return Ok(());
                }
                self.read_inbox(!got_message)?;
                self.check_done()
            });
            if let Err(e) = turn {
                self.failed(e);
                if quit {
                    return;
                }
                std::thread::sleep(RECONNECT_DELAY);
            } else if quit {
                return;
            }
        }
    }

    /// Drops the connection; the loop hears of the first failure, not of every retry.
    fn failed(&mut self, e: redis::RedisError) {
        if self.con.take().is_some() {
            self.hand(Inbound {
                error: Some(format!(
                    "Redis at {}: {e} (retrying every second)",
                    self.config.url
                )),
                ..Inbound::default()
            });
        }
    }

    fn con(&mut self) -> redis::RedisResult<&mut Connection> {
        if self.con.is_none() {
            self.con = Some(connect(&self.client)?);
            // After a reconnect, the flags and figures are written again.
            self.published = None;
            self.stats_sent = false;
        }
        self.con
            .as_mut()
            .ok_or_else(|| redis::RedisError::from(io::Error::other("not connected")))
    }

    fn hand(&mut self, inbound: Inbound) {
        let _ = self.to_loop.send(inbound);
        if let Some(w) = &self.waker {
            let _ = w.wake();
        }
    }

    /// Takes in what the loop said; [`RedisSide::sync`] writes it.
    fn handle(&mut self, msg: ToRedis) {
        match msg {
            ToRedis::Send(batch) => self.outbox.push_back(batch),
            ToRedis::Ack(ids) => self.acks.extend(ids),
            ToRedis::Idle(idle, taken) => {
                self.idle = idle;
                self.taken_by_loop = taken;
            }
            ToRedis::Stop => self.stopped = true,
            ToRedis::Stats(s) => {
                self.stats = Some(s);
                self.stats_sent = false;
            }
            ToRedis::Quit => {}
        }
    }

    /// Brings Redis up to what the loop said, in the order the done test needs: the loop's
    /// batches are in flight (counted) before its idle flag can say so, or another node could
    /// find the crawl done while they wait here. What fails stays to be written next turn.
    fn sync(&mut self) -> redis::RedisResult<()> {
        self.flush_outbox()?;
        if !self.acks.is_empty() {
            let node = self.config.node;
            let mut cmd = redis::cmd("EVAL");
            cmd.arg(ACK_SCRIPT)
                .arg(2)
                .arg(inbox(node))
                .arg(key("inflight"))
                .arg(GROUP)
                .arg(node)
                .arg(&self.acks);
            cmd.query::<i64>(self.con()?)?;
            self.acks.clear();
        }
        self.publish_flags()?;
        if !self.stats_sent {
            let (node, stats) = (self.config.node, self.stats);
            publish_stats(self.con()?, node, stats)?;
            self.stats_sent = true;
        }
        Ok(())
    }

    /// The node's flags, when they changed. It is idle only when the loop said so having
    /// taken every batch handed to it (a batch on its way to the loop is work), with none of
    /// its own waiting to go.
    fn publish_flags(&mut self) -> redis::RedisResult<()> {
        let idle = self.idle && self.taken_by_loop == self.handed && self.outbox.is_empty();
        let flags = (idle, self.stopped);
        if self.published == Some(flags) {
            return Ok(());
        }
        let node = self.config.node;
        let mut p = redis::pipe();
        p.cmd("HSET")
            .arg(key("idle"))
            .arg(node)
            .arg(u8::from(idle))
            .cmd("HSET")
            .arg(key("stopped"))
            .arg(node)
            .arg(u8::from(self.stopped));
        p.query::<()>(self.con()?)?;
        self.published = Some(flags);
        Ok(())
    }

    /// Writes waiting batches to their owners' inboxes, each with its in-flight count in one
    /// transaction, and tells the loop they are delivered.
    fn flush_outbox(&mut self) -> redis::RedisResult<()> {
        if self.outbox.is_empty() {
            return Ok(());
        }
        let mut delivered = VecDeque::new();
        let node = self.config.node;
        self.con()?;
        let Some(con) = self.con.as_mut() else {
            return Ok(());
        };
        let mut written = Ok(());
        while let Some(batch) = self.outbox.front() {
            let mut p = redis::pipe();
            p.atomic();
            p.cmd("XADD")
                .arg(inbox(batch.to))
                .arg("*")
                .arg("from")
                .arg(node)
                .arg("b")
                .arg(&batch.bytes)
                .ignore();
            p.cmd("HINCRBY")
                .arg(key("inflight"))
                .arg(batch.to)
                .arg(1)
                .ignore();
            written = p.query::<()>(con);
            if written.is_err() {
                break;
            }
            if let Some(b) = self.outbox.pop_front() {
                delivered.push_back(b);
            }
        }
        // What went out is released even if a later batch failed.
        if !delivered.is_empty() {
            self.hand(Inbound {
                delivered,
                ..Inbound::default()
            });
        }
        written
    }

    /// New seeds (for the scope) and inbox entries. The node is marked busy before the
    /// batches go to the loop; seeds are read again after a batch, so a seed published before
    /// a batch was sent is known before the batch is crawled.
    fn read_inbox(&mut self, may_block: bool) -> redis::RedisResult<()> {
        let mut seeds = self.read_seeds()?;
        let node = self.config.node;
        let from = if self.reading_pending {
            self.pending_from.clone()
        } else {
            ">".to_string()
        };
        let block = may_block && !self.reading_pending;
        let con = self.con()?;
        let mut cmd = redis::cmd("XREADGROUP");
        cmd.arg("GROUP")
            .arg(GROUP)
            .arg(node)
            .arg("COUNT")
            .arg(READ_COUNT);
        if block {
            cmd.arg("BLOCK").arg(READ_BLOCK_MS);
        }
        cmd.arg("STREAMS").arg(inbox(node)).arg(from);
        let reply: Value = cmd.query(con)?;
        let entries = stream_entries(&reply);
        if entries.is_empty() {
            // Past the pending entries: read new ones from now on.
            self.reading_pending = false;
            if !seeds.is_empty() {
                self.hand(Inbound {
                    seeds,
                    ..Inbound::default()
                });
            }
            return Ok(());
        }
        let mut batches = VecDeque::new();
        for (id, fields) in entries {
            if self.reading_pending {
                self.pending_from.clone_from(&id);
            }
            let bytes = field(&fields, b"b").unwrap_or_default();
            batches.push_back((id, Batch { to: node, bytes }));
        }
        self.idle = false;
        self.handed += batches.len() as u64;
        // Busy in Redis before the loop can acknowledge the batches.
        self.publish_flags()?;
        seeds.extend(self.read_seeds()?);
        self.hand(Inbound {
            batches,
            seeds,
            ..Inbound::default()
        });
        Ok(())
    }

    fn read_seeds(&mut self) -> redis::RedisResult<VecDeque<String>> {
        let from = self.seeds_from.clone();
        let con = self.con()?;
        let reply: Value = redis::cmd("XRANGE")
            .arg(key("seeds"))
            .arg(format!("({from}"))
            .arg("+")
            .query(con)
            .or_else(|e| {
                // "(" ranges need Redis 6.2; the first read is from the start anyway.
                if from == "0" {
                    redis::cmd("XRANGE")
                        .arg(key("seeds"))
                        .arg("-")
                        .arg("+")
                        .query(con)
                } else {
                    Err(e)
                }
            })?;
        let mut seeds = VecDeque::new();
        if let Value::Array(entries) = &reply {
            for e in entries {
                if let Some((id, fields)) = entry(e) {
                    if let Some(u) = field(&fields, b"u").and_then(|b| String::from_utf8(b).ok()) {
                        seeds.push_back(u);
                    }
                    self.seeds_from = id;
                }
            }
        }
        Ok(seeds)
    }

    /// While the loop is idle, asks (at most every [`DONE_CHECK`]) whether the whole crawl is
    /// done, and tells the loop when it is.
    fn check_done(&mut self) -> redis::RedisResult<()> {
        if self.done.load(Ordering::Acquire) || !self.idle || self.stopped {
            return Ok(());
        }
        if self
            .last_done_check
            .is_some_and(|t| t.elapsed() < DONE_CHECK)
        {
            return Ok(());
        }
        self.last_done_check = Some(Instant::now());
        let con = self.con()?;
        let done: i64 = redis::cmd("EVAL")
            .arg(DONE_SCRIPT)
            .arg(5)
            .arg(key("nodes"))
            .arg(key("idle"))
            .arg(key("stopped"))
            .arg(key("inflight"))
            .arg(key("done"))
            .query(con)?;
        if done == 1 {
            self.done.store(true, Ordering::Release);
            self.hand(Inbound::default());
        }
        Ok(())
    }
}

/// Writes the node's figures to its hash.
fn publish_stats(
    con: &mut Connection,
    node: u32,
    stats: Option<NodeStats>,
) -> redis::RedisResult<()> {
    let Some(s) = stats else {
        return Ok(());
    };
    let at = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    redis::cmd("HSET")
        .arg(format!("{PREFIX}:node:{}", node))
        .arg("pages")
        .arg(s.pages)
        .arg("pages_per_sec")
        .arg(format!("{:.1}", s.pages_per_sec))
        .arg("queued")
        .arg(s.queued)
        .arg("urls_sent")
        .arg(s.urls_sent)
        .arg("urls_received")
        .arg(s.urls_received)
        .arg("updated")
        .arg(format!("{at:.3}"))
        .query(con)
}

/// The entries of an XREADGROUP reply (one stream): IDs and field lists.
fn stream_entries(reply: &Value) -> Vec<(String, Vec<Value>)> {
    let Value::Array(streams) = reply else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for s in streams {
        if let Value::Array(pair) = s {
            if let Some(Value::Array(entries)) = pair.get(1) {
                out.extend(entries.iter().filter_map(entry));
            }
        }
    }
    out
}

/// One stream entry: its ID and fields (a deleted pending entry has none).
fn entry(v: &Value) -> Option<(String, Vec<Value>)> {
    let Value::Array(parts) = v else {
        return None;
    };
    let id = match parts.first()? {
        Value::BulkString(b) => String::from_utf8(b.clone()).ok()?,
        Value::SimpleString(s) => s.clone(),
        _ => return None,
    };
    let fields = match parts.get(1) {
        Some(Value::Array(f)) => f.clone(),
        _ => Vec::new(),
    };
    Some((id, fields))
}

/// The value of field `name` in a field list.
fn field(fields: &[Value], name: &[u8]) -> Option<Vec<u8>> {
    fields.chunks(2).find_map(|kv| match kv {
        [Value::BulkString(k), Value::BulkString(v)] if k == name => Some(v.clone()),
        _ => None,
    })
}
