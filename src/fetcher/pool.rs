//! Open connections: which fetch each one carries, the keep-alive pool of idle ones, and the
//! count of open connections per server IP (`busy_servers`, the politeness bound).
//!
//! The event loop decides when to open, park, reuse or close a connection; this module keeps
//! the books so that every close releases its server slot and its idle deadline in one place.
//! Idle connections carry their own deadlines here ([`ConnPool::next_deadline`],
//! [`ConnPool::expire`]), so the loop's timer set holds only fetch deadlines.

use std::collections::{BTreeSet, HashMap};
use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

use mio::{Interest, Poll, Token};
use slab::Slab;

use super::conn::Conn;
use super::stats::SocketCalls;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnState {
    /// Carrying this fetch (connecting, sending or receiving).
    Active { fetch: usize },
    /// Open and idle, kept for reuse until `deadline`.
    Idle { deadline: Instant },
}

/// Which connections may carry a request: same address, same TLS server name.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ConnKey {
    pub addr: SocketAddr,
    pub server_name: Option<String>,
}

pub struct ConnEntry {
    pub conn: Conn,
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

/// Every open connection, keyed by its mio token (the slab key).
pub struct ConnPool {
    conns: Slab<ConnEntry>,
    /// Open connections per server IP.
    busy_servers: HashMap<IpAddr, usize>,
    idle: HashMap<ConnKey, Vec<usize>>,
    idle_order: BTreeSet<(Instant, usize)>,
}

impl ConnPool {
    pub fn new(capacity: usize) -> ConnPool {
        ConnPool {
            conns: Slab::with_capacity(capacity),
            busy_servers: HashMap::new(),
            idle: HashMap::new(),
            idle_order: BTreeSet::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.conns.len()
    }

    pub fn get(&self, conn: usize) -> Option<&ConnEntry> {
        self.conns.get(conn)
    }

    pub fn get_mut(&mut self, conn: usize) -> Option<&mut ConnEntry> {
        self.conns.get_mut(conn)
    }

    /// Open connections to this server IP.
    pub fn open_to(&self, ip: IpAddr) -> usize {
        self.busy_servers.get(&ip).copied().unwrap_or(0)
    }

    /// The token the next [`ConnPool::insert`] will use (to register the socket first).
    pub fn vacant_key(&self) -> usize {
        self.conns.vacant_key()
    }

    /// Adds a freshly opened connection and counts it against its server.
    pub fn insert(&mut self, entry: ConnEntry) -> usize {
        *self.busy_servers.entry(entry.key.addr.ip()).or_insert(0) += 1;
        self.conns.insert(entry)
    }

    /// An idle connection for `key`, taken out of the idle pool (the caller makes it active).
    pub fn take_idle(&mut self, key: &ConnKey) -> Option<usize> {
        let list = self.idle.get_mut(key)?;
        let conn = list.pop()?;
        if list.is_empty() {
            self.idle.remove(key);
        }
        if let ConnState::Idle { deadline } = self.conns[conn].state {
            self.idle_order.remove(&(deadline, conn));
        }
        Some(conn)
    }

    /// Some idle connection to this IP (of any TLS name).
    pub fn idle_for_ip(&self, ip: IpAddr) -> Option<usize> {
        self.idle
            .iter()
            .find(|(k, v)| k.addr.ip() == ip && !v.is_empty())
            .and_then(|(_, v)| v.last().copied())
    }

    /// The idle connection that has waited longest.
    pub fn oldest_idle(&self) -> Option<usize> {
        self.idle_order.first().map(|&(_, c)| c)
    }

    pub fn set_active(&mut self, conn: usize, fetch: usize) {
        self.conns[conn].state = ConnState::Active { fetch };
    }

    /// Keeps a connection whose response ended cleanly for the next URL to its server.
    pub fn park(&mut self, poll: &Poll, conn: usize, deadline: Instant, calls: &mut SocketCalls) {
        let entry = &mut self.conns[conn];
        entry.state = ConnState::Idle { deadline };
        entry.reregister(poll, conn, Interest::READABLE, calls);
        self.idle.entry(entry.key.clone()).or_default().push(conn);
        self.idle_order.insert((deadline, conn));
    }

    /// Closes a connection and releases its server slot; unknown keys are ignored.
    pub fn close(&mut self, poll: &Poll, conn: usize) {
        if !self.conns.contains(conn) {
            return;
        }
        let mut entry = self.conns.remove(conn);
        if let ConnState::Idle { deadline } = entry.state {
            self.idle_order.remove(&(deadline, conn));
            if let Some(list) = self.idle.get_mut(&entry.key) {
                list.retain(|&c| c != conn);
                if list.is_empty() {
                    self.idle.remove(&entry.key);
                }
            }
        }
        let _ = poll.registry().deregister(&mut entry.conn.stream);
        let ip = entry.key.addr.ip();
        if let Some(n) = self.busy_servers.get_mut(&ip) {
            *n -= 1;
            if *n == 0 {
                self.busy_servers.remove(&ip);
            }
        }
    }

    pub fn close_idle_all(&mut self, poll: &Poll) {
        let idle: Vec<usize> = self.idle_order.iter().map(|&(_, c)| c).collect();
        for c in idle {
            self.close(poll, c);
        }
    }

    /// When the next idle connection times out.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.idle_order.first().map(|&(t, _)| t)
    }

    /// Closes idle connections past their deadline; returns whether any was closed.
    pub fn expire(&mut self, poll: &Poll, now: Instant) -> bool {
        let mut closed = false;
        while let Some(&(t, conn)) = self.idle_order.first() {
            if t > now {
                break;
            }
            self.close(poll, conn);
            closed = true;
        }
        closed
    }
}
