//! Open connections: which fetch each one carries, the keep-alive pool of idle ones, and the
//! count of open connections per server IP (`busy_servers`, the politeness bound).
//!
//! Idle connections come in two kinds. A *held* one belongs to a host its source still has
//! URLs for (the host is active: its next request comes after its politeness delay); a
//! *spare* one's host has nothing queued. When the socket budget is full and another host
//! needs a connection, spare ones are closed first (oldest first), so an active host keeps
//! its connection while it has work (ARCHITECTURE §3, "connection budgets").
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
    /// Open and idle, kept for reuse until `deadline`; `held` while its host has more work.
    Idle { deadline: Instant, held: bool },
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
    /// Idle connections by deadline, held ones (`[1]`) apart from spare ones (`[0]`).
    idle_order: [BTreeSet<(Instant, usize)>; 2],
}

impl ConnPool {
    pub fn new(capacity: usize) -> ConnPool {
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
        if let ConnState::Idle { deadline, held } = self.conns[conn].state {
            self.idle_order[usize::from(held)].remove(&(deadline, conn));
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
        let entry = &mut self.conns[conn];
        entry.state = ConnState::Idle { deadline, held };
        entry.reregister(poll, conn, Interest::READABLE, calls);
        self.idle.entry(entry.key.clone()).or_default().push(conn);
        self.idle_order[usize::from(held)].insert((deadline, conn));
    }

    /// Closes a connection and releases its server slot; unknown keys are ignored.
    pub fn close(&mut self, poll: &Poll, conn: usize) {
        if !self.conns.contains(conn) {
            return;
        }
        let mut entry = self.conns.remove(conn);
        if let ConnState::Idle { deadline, held } = entry.state {
            self.idle_order[usize::from(held)].remove(&(deadline, conn));
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
        let idle: Vec<usize> = self.idle_order.iter().flatten().map(|&(_, c)| c).collect();
        for c in idle {
            self.close(poll, c);
        }
    }

    /// When the next idle connection times out.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.idle_order
            .iter()
            .filter_map(|o| o.first())
            .map(|&(t, _)| t)
            .min()
    }

    /// Closes idle connections past their deadline; returns whether any was closed.
    pub fn expire(&mut self, poll: &Poll, now: Instant) -> bool {
        let mut closed = false;
        for class in 0..2 {
            while let Some(&(t, conn)) = self.idle_order[class].first() {
                if t > now {
                    break;
                }
                self.close(poll, conn);
                closed = true;
            }
        }
        closed
    }
}
