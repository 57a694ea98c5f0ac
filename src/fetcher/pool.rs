//! Open connections: which fetch each one carries, the keep-alive pool of idle ones, and the
//! count of open connections per server IP (`busy_servers`, the politeness bound).
//!
//! Idle connections come in two kinds. A *held* one belongs to a host its source still has
//! URLs for (the host is active: its next request comes after its politeness delay); a
//! *spare* one's host has nothing queued. When the socket budget is full and another host
//! needs a connection, spare ones are closed first (oldest first), so an active host keeps
//! its connection while it has work (ARCHITECTURE §3, "connection budgets").
//!
//! Which connection a waiting fetch gets is decided here, in [`ConnPool::slot_for`], from the
//! books alone: reuse an idle one, open one (closing an idle one first to make room), or wait.
//! The event loop carries the decision out and decides when to park or close; this module
//! keeps the books so that every close releases its server slot and its idle deadline in one
//! place. Idle connections carry their own deadlines here ([`ConnPool::next_deadline`],
//! [`ConnPool::expire`]), so the loop's timer set holds only fetch deadlines.
//!
//! The books and the decisions are generic over what a connection is (`C`): the loop's are
//! [`Conn`]s, and only opening, parking and closing touch mio; the unit tests
//! (`pool_tests.rs`) run the same code on `()` with a clock they advance by hand.

use std::collections::{BTreeSet, HashMap};
use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

use mio::{Interest, Poll, Token};
use slab::Slab;

use super::conn::Conn;
use super::fetch::Origin;
use super::stats::SocketCalls;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnState {
    /// Carrying this fetch (connecting, sending or receiving).
    Active { fetch: usize },
    /// Open and idle, kept for reuse until `deadline`; `held` while its host has more work.
    Idle { deadline: Instant, held: bool },
}

/// Which connections may carry a request: same address, same TLS server name, and through a
/// proxy (`addr` is then the proxy's) the same site behind it: tunnels and absolute-form
/// connections are pooled per (proxy, site).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ConnKey {
    pub addr: SocketAddr,
    pub server_name: Option<String>,
    pub origin: Option<Origin>,
}

/// What politeness (`conns_per_server`) counts a connection against: the server's address,
/// or behind a proxy the site as far as the crawler knows it (its address, else its name),
/// never the proxy.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Server {
    Ip(IpAddr),
    Name(Box<str>),
}

impl ConnKey {
    pub fn server(&self) -> Server {
        match &self.origin {
            None => Server::Ip(self.addr.ip()),
            Some(Origin::Ip(a)) => Server::Ip(a.ip()),
            Some(Origin::Name(name, _)) => Server::Name(name.clone()),
        }
    }

    /// Whether this is a connection to `server` (as [`ConnKey::server`], without a copy).
    pub fn is_for(&self, server: &Server) -> bool {
        match (&self.origin, server) {
            (None, Server::Ip(ip)) => self.addr.ip() == *ip,
            (Some(Origin::Ip(a)), Server::Ip(ip)) => a.ip() == *ip,
            (Some(Origin::Name(name, _)), Server::Name(n)) => name == n,
            _ => false,
        }
    }
}

pub struct ConnEntry<C = Conn> {
    pub conn: C,
    pub key: ConnKey,
    pub state: ConnState,
    /// The interest mio currently has for this connection (re-registered only on change).
    pub registered: Interest,
}

impl ConnEntry {
    /// Re-registers the socket if `want` differs from what mio has (counted in `calls`).
    pub fn reregister(
        &mut self,
        poll: &Poll,
        token: usize,
        want: Interest,
        calls: &mut SocketCalls,
    ) {
        if self.registered != want {
            calls.reregistrations += 1;
            // A failed reregister leaves the old interest; the fetch deadline still bounds it.
            if poll
                .registry()
                .reregister(&mut self.conn.stream, Token(token), want)
                .is_ok()
            {
                self.registered = want;
            }
        }
    }
}

/// The budgets [`ConnPool::slot_for`] gives connections within (`CrawlerConfig`'s).
#[derive(Clone, Copy, Debug)]
pub struct Budgets {
    /// Connections carrying a fetch.
    pub max_conns: usize,
    /// Open sockets, idle ones included.
    pub max_sockets: usize,
    /// Open connections per server IP (politeness).
    pub conns_per_server: usize,
}

/// What a fetch waiting for a connection gets.
#[derive(Debug, PartialEq, Eq)]
pub enum Slot {
    /// This idle kept-alive connection to the same address and TLS name, now out of the
    /// idle pool (the caller makes it active).
    Reuse(usize),
    /// A new connection for `key`, once the idle connection `close` (if any) is closed to
    /// make room.
    Open { key: ConnKey, close: Option<usize> },
    /// Nothing yet: the in-flight budget is spent, or the server or the socket budget is
    /// full of busy connections.
    Wait,
}

/// Every open connection, keyed by its mio token (the slab key).
pub struct ConnPool<C = Conn> {
    conns: Slab<ConnEntry<C>>,
    /// Open connections per server.
    busy_servers: HashMap<Server, usize>,
    idle: HashMap<ConnKey, Vec<usize>>,
    /// Idle connections by deadline, held ones (`[1]`) apart from spare ones (`[0]`).
    idle_order: [BTreeSet<(Instant, usize)>; 2],
}

impl<C> ConnPool<C> {
    pub fn new(capacity: usize) -> ConnPool<C> {
        ConnPool {
            conns: Slab::with_capacity(capacity),
            busy_servers: HashMap::new(),
            idle: HashMap::new(),
            idle_order: [BTreeSet::new(), BTreeSet::new()],
        }
    }

    /// Open connections (sockets), idle ones included.
    pub fn len(&self) -> usize {
        self.conns.len()
    }

    /// Connections carrying a fetch (the in-flight budget's count).
    pub fn active(&self) -> usize {
        self.conns.len() - self.idle_order[0].len() - self.idle_order[1].len()
    }

    pub fn get(&self, conn: usize) -> Option<&ConnEntry<C>> {
        self.conns.get(conn)
    }

    pub fn get_mut(&mut self, conn: usize) -> Option<&mut ConnEntry<C>> {
        self.conns.get_mut(conn)
    }

    /// Open connections to this server.
    pub fn open_to(&self, server: &Server) -> usize {
        self.busy_servers.get(server).copied().unwrap_or(0)
    }

    /// The token the next [`ConnPool::insert`] will use (to register the socket first).
    pub fn vacant_key(&self) -> usize {
        self.conns.vacant_key()
    }

    /// Adds a freshly opened connection and counts it against its server.
    pub fn insert(&mut self, entry: ConnEntry<C>) -> usize {
        *self.busy_servers.entry(entry.key.server()).or_insert(0) += 1;
        self.conns.insert(entry)
    }

    /// An idle connection for `key`, taken out of the idle pool (the caller makes it active).
    pub fn take_idle(&mut self, key: &ConnKey) -> Option<usize> {
        let list = self.idle.get_mut(key)?;
        let conn = list.pop()?;
        if list.is_empty() {
            self.idle.remove(key);
        }
        if let ConnState::Idle { deadline, held } = self.conns[conn].state {
            self.idle_order[usize::from(held)].remove(&(deadline, conn));
        }
        Some(conn)
    }

    /// The connection a fetch waiting for one gets, within `budgets`: an idle one for its
    /// address and TLS name first, else a new one if its server and the socket budget have
    /// room, closing an idle connection to make it if not (one to the same server of another
    /// TLS name; for the socket budget, [`ConnPool::oldest_idle`]). `key` is built only when
    /// the in-flight budget has room, so a fetch kept waiting by it costs nothing.
    pub fn slot_for(&mut self, budgets: &Budgets, key: impl FnOnce() -> ConnKey) -> Slot {
        if self.active() >= budgets.max_conns {
            return Slot::Wait;
        }
        let key = key();
        if let Some(conn) = self.take_idle(&key) {
            return Slot::Reuse(conn);
        }
        let server = key.server();
        // Closing one makes room in both budgets: the sockets are never over theirs.
        let close = if self.open_to(&server) >= budgets.conns_per_server {
            match self.idle_for(&server) {
                Some(c) => Some(c),
                None => return Slot::Wait,
            }
        } else if self.len() >= budgets.max_sockets {
            match self.oldest_idle() {
                Some(c) => Some(c),
                None => return Slot::Wait,
            }
        } else {
            None
        };
        Slot::Open { key, close }
    }

    /// Some idle connection to this server (of any TLS name or route).
    pub fn idle_for(&self, server: &Server) -> Option<usize> {
        self.idle
            .iter()
            .find(|(k, v)| k.is_for(server) && !v.is_empty())
            .and_then(|(_, v)| v.last().copied())
    }

    /// The idle connection to close for another host: the spare one that expires first,
    /// else the held one that expires first (an active host's, only when every idle
    /// connection is one: its host reconnects later).
    pub fn oldest_idle(&self) -> Option<usize> {
        self.idle_order[0]
            .first()
            .or_else(|| self.idle_order[1].first())
            .map(|&(_, c)| c)
    }

    pub fn set_active(&mut self, conn: usize, fetch: usize) {
        self.conns[conn].state = ConnState::Active { fetch };
    }

    /// Books a connection whose response ended cleanly as idle until `deadline`, `held` if its
    /// host has more URLs queued.
    pub fn park_idle(&mut self, conn: usize, deadline: Instant, held: bool) {
        let entry = &mut self.conns[conn];
        entry.state = ConnState::Idle { deadline, held };
        self.idle.entry(entry.key.clone()).or_default().push(conn);
        self.idle_order[usize::from(held)].insert((deadline, conn));
    }

    /// Takes a connection out of the books, releasing its server slot; `None` for an unknown
    /// key.
    pub fn remove(&mut self, conn: usize) -> Option<ConnEntry<C>> {
        if !self.conns.contains(conn) {
            return None;
        }
        let entry = self.conns.remove(conn);
        if let ConnState::Idle { deadline, held } = entry.state {
            self.idle_order[usize::from(held)].remove(&(deadline, conn));
            if let Some(list) = self.idle.get_mut(&entry.key) {
                list.retain(|&c| c != conn);
                if list.is_empty() {
                    self.idle.remove(&entry.key);
                }
            }
        }
        let server = entry.key.server();
        if let Some(n) = self.busy_servers.get_mut(&server) {
            *n -= 1;
            if *n == 0 {
                self.busy_servers.remove(&server);
            }
        }
        Some(entry)
    }

    /// When the next idle connection times out.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.idle_order
            .iter()
            .filter_map(|o| o.first())
            .map(|&(t, _)| t)
            .min()
    }

    /// An idle connection whose deadline is `now` or past (a spare one first), if any.
    pub fn expired(&self, now: Instant) -> Option<usize> {
        self.idle_order
            .iter()
            .filter_map(|o| o.first())
            .find(|&&(t, _)| t <= now)
            .map(|&(_, c)| c)
    }
}

impl ConnPool<Conn> {
    /// Keeps a connection whose response ended cleanly for the next URL to its server;
    /// `held` if that server's host has more URLs queued.
    pub fn park(
        &mut self,
        poll: &Poll,
        conn: usize,
        deadline: Instant,
        held: bool,
        calls: &mut SocketCalls,
    ) {
        self.park_idle(conn, deadline, held);
        self.conns[conn].reregister(poll, conn, Interest::READABLE, calls);
    }

    /// Closes a connection and releases its server slot; unknown keys are ignored.
    pub fn close(&mut self, poll: &Poll, conn: usize) {
        if let Some(mut entry) = self.remove(conn) {
            let _ = poll.registry().deregister(&mut entry.conn.stream);
        }
    }

    pub fn close_idle_all(&mut self, poll: &Poll) {
        let idle: Vec<usize> = self.idle_order.iter().flatten().map(|&(_, c)| c).collect();
        for c in idle {
            self.close(poll, c);
        }
    }

    /// Closes idle connections past their deadline; returns whether any was closed.
    pub fn expire(&mut self, poll: &Poll, now: Instant) -> bool {
        let mut closed = false;
        // Bounded: each pass closes one of the open connections.
        while let Some(conn) = self.expired(now) {
            self.close(poll, conn);
            closed = true;
        }
        closed
    }
}
