//! Forwarding tables: per (node, destination) a next-hop link or a set of equal-cost links, and
//! the choice of one link from a set (hash-threshold ECMP or per-packet spraying).
//!
//! Without the spec's `routing` the table is the spec's static `routes`, one link per entry. With
//! it, the table is computed from the graph: for each destination host `d`, a breadth-first
//! search by hop count from `d` backwards over the links that are up gives every node's distance
//! to `d`; a node's next-hop set is every up link (in link index order) to a neighbour one hop
//! closer. Hosts other than `d` are never expanded, so they never forward others' traffic (as
//! data-center and Mininet hosts do not). Every next hop strictly lowers the distance, so the
//! computed routes are loop-free; the spec's `routes` entries then replace the computed set of
//! their (node, dst), and [`Routes::check_flows`] rejects overrides that loop or dead-end.
//!
//! Storage: one `u32` per (forwarding node, destination host) — a link index, or a tagged index
//! into a table of deduplicated link sets — so the single-next-hop case on the per-packet path is
//! two array indexes. A *stub* host (one link out and one in, to and from the same router, no
//! static route of its own) has no row: it sends everything on its one link. As a destination it
//! shares the breadth-first search of its router: every node other than the router reaches it
//! through the router, so one search per distinct router serves all its stub hosts. A k = 16
//! fat-tree (1,024 hosts, 320 switches) takes 1.3 MB and 128 searches; a 10,000-pair dumbbell
//! 160 kB and 2.

use std::collections::HashMap;

use ccarena_rng::mix64;
use crate::spec::{err, FlowSpec, NodeKind, RoutingMode, Spec, SpecError};

/// Entry value: no route.
pub const NO_ROUTE: u32 = u32::MAX;
/// Entry tag: the low 31 bits index the set table.
pub const MULTI: u32 = 1 << 31;
/// [`NodeRoute::row`] of a stub host (no row: its entry is [`NodeRoute::stub`]).
const NO_ROW: u32 = u32::MAX;

/// What the forwarding table keeps per node. 16 bytes, aligned: one never straddles two lines.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(16))]
struct NodeRoute {
    /// The node's row in `entries`, or `NO_ROW` for a stub host.
    row: u32,
    /// The node's column (host ordinal); `u32::MAX` for routers (never a destination).
    col: u32,
    /// A stub host's entry for every other destination (its one link, or `NO_ROUTE` while that
    /// link is down).
    stub: u32,
}

/// The forwarding table of a run.
#[derive(Clone, Debug)]
pub struct Routes {
    n_nodes: usize,
    /// Destination hosts (columns).
    n_cols: usize,
    /// Per node: its row, column and stub entry ([`NodeRoute`]), side by side so that a stub
    /// host's lookup reads one cache line, not one in each of three arrays (issue 35: at 1,000
    /// flows every host's entries are cold when its next packet leaves).
    nodes: Vec<NodeRoute>,
    /// `entries[row * n_cols + col]`: a link index (bit 31 clear), `MULTI | set`, or `NO_ROUTE`.
    entries: Vec<u32>,
    /// Set `i` is `pool[sets[i].0 as usize..][..sets[i].1 as usize]`.
    sets: Vec<(u32, u32)>,
    pool: Vec<u32>,
    /// Static overrides (computed mode): (node, dst) → (links in entry order, first entry index).
    overrides: HashMap<(u32, u32), (Vec<u32>, usize)>,
}

/// The graph the routes are computed over, read once from the spec.
#[derive(Clone, Debug)]
pub struct Graph {
    is_host: Vec<bool>,
    from: Vec<u32>,
    to: Vec<u32>,
    /// Links leaving each node, in link index order.
    out_links: Vec<Vec<u32>>,
    /// Links entering each node.
    in_links: Vec<Vec<u32>>,
}

impl Graph {
    /// The spec's nodes and links (indices already validated).
    pub fn new(spec: &Spec) -> Graph {
        let n = spec.nodes.len();
        let mut out_links = vec![Vec::new(); n];
        let mut in_links = vec![Vec::new(); n];
        for (i, l) in spec.links.iter().enumerate() {
            out_links[l.from].push(i as u32);
            in_links[l.to].push(i as u32);
        }
        Graph {
            is_host: spec.nodes.iter().map(|v| v.kind == NodeKind::Host).collect(),
            from: spec.links.iter().map(|l| l.from as u32).collect(),
            to: spec.links.iter().map(|l| l.to as u32).collect(),
            out_links,
            in_links,
        }
    }

    /// The node link `l` leads to.
    pub fn to(&self, l: u32) -> u32 {
        self.to[l as usize]
    }
}

impl Routes {
    /// The spec's `routes` as the complete table (no `routing`): the last entry for a (node,
    /// dst) wins.
    pub fn from_static(spec: &Spec) -> Routes {
        let n = spec.nodes.len();
        let mut routes = Routes::empty(spec, &vec![false; n], &[]);
        for r in &spec.routes {
            let i = routes.index(r.node as u32, r.dst as u32);
            routes.entries[i] = r.link as u32;
        }
        routes
    }

    /// A table of `NO_ROUTE` entries with a row for every node but the stubs.
    fn empty(spec: &Spec, stub: &[bool], stub_entry: &[u32]) -> Routes {
        let n = spec.nodes.len();
        let mut col_of = vec![u32::MAX; n];
        let mut n_cols = 0usize;
        for (v, node) in spec.nodes.iter().enumerate() {
            if node.kind == NodeKind::Host {
                col_of[v] = n_cols as u32;
                n_cols += 1;
            }
        }
        let mut row_of = vec![NO_ROW; n];
        let mut rows = 0usize;
        for v in 0..n {
            if !stub[v] {
                row_of[v] = rows as u32;
                rows += 1;
            }
        }
        let nodes = (0..n)
            .map(|v| NodeRoute { row: row_of[v], col: col_of[v], stub: stub_entry.get(v).copied().unwrap_or(NO_ROUTE) })
            .collect();
        Routes {
            n_nodes: n,
            n_cols,
            nodes,
            entries: vec![NO_ROUTE; rows * n_cols],
            sets: Vec::new(),
            pool: Vec::new(),
            overrides: HashMap::new(),
        }
    }

    /// Index in `entries` of (node, dst); `node` must have a row and `dst` be a host.
    #[inline(always)]
    fn index(&self, node: u32, dst: u32) -> usize {
        self.nodes[node as usize].row as usize * self.n_cols + self.nodes[dst as usize].col as usize
    }

    /// Shortest-path routes with equal-cost sets over the links with `up[l]`, then the spec's
    /// `routes` as overrides (their links that are down left out; none left = no route).
    pub fn compute(spec: &Spec, graph: &Graph, up: &[bool]) -> Routes {
        let n = spec.nodes.len();
        let mut overrides: HashMap<(u32, u32), (Vec<u32>, usize)> = HashMap::new();
        for (i, r) in spec.routes.iter().enumerate() {
            let o = overrides.entry((r.node as u32, r.dst as u32)).or_insert_with(|| (Vec::new(), i));
            if !o.0.contains(&(r.link as u32)) {
                o.0.push(r.link as u32);
            }
        }
        // Stub hosts: one link out, one in, to and from the same router, no override at them.
        let mut router_of = vec![u32::MAX; n];
        let mut stub_entry = vec![NO_ROUTE; n];
        for v in (0..n).filter(|&v| graph.is_host[v]) {
            if let ([o], [i]) = (graph.out_links[v].as_slice(), graph.in_links[v].as_slice()) {
                let s = graph.to[*o as usize];
                if graph.from[*i as usize] == s && !graph.is_host[s as usize] {
                    router_of[v] = s;
                    stub_entry[v] = if up[*o as usize] { *o } else { NO_ROUTE };
                }
            }
        }
        for &(node, _) in overrides.keys() {
            router_of[node as usize] = u32::MAX;
            stub_entry[node as usize] = NO_ROUTE;
        }
        let stub: Vec<bool> = router_of.iter().map(|&s| s != u32::MAX).collect();
        let mut routes = Routes::empty(spec, &stub, &stub_entry);
        routes.overrides = overrides;
        let mut interned: HashMap<Vec<u32>, u32> = HashMap::new();
        let mut dist = vec![u32::MAX; n];
        let mut queue = Vec::with_capacity(n);
        let mut set = Vec::new();
        // Stub destinations grouped by their router: one search from the router serves them all.
        let mut stubs_at: HashMap<u32, Vec<u32>> = HashMap::new();
        for d in (0..n).filter(|&d| stub[d]) {
            stubs_at.entry(router_of[d]).or_default().push(d as u32);
        }
        let mut targets: Vec<(u32, Vec<u32>)> = stubs_at.into_iter().collect();
        targets.sort_unstable();
        // A non-stub destination is its own search target.
        targets.extend((0..n).filter(|&d| graph.is_host[d] && !stub[d]).map(|d| (d as u32, vec![d as u32])));
        let mut row_entries: Vec<(u32, u32)> = Vec::new();
        for (target, dsts) in &targets {
            let t = *target as usize;
            dist.fill(u32::MAX);
            dist[t] = 0;
            queue.clear();
            queue.push(t as u32);
            let mut head = 0;
            while head < queue.len() {
                let x = queue[head] as usize;
                head += 1;
                if x != t && graph.is_host[x] {
                    continue; // hosts do not forward
                }
                for &l in &graph.in_links[x] {
                    let u = graph.from[l as usize] as usize;
                    if up[l as usize] && dist[u] == u32::MAX {
                        dist[u] = dist[x] + 1;
                        queue.push(u as u32);
                    }
                }
            }
            row_entries.clear();
            for &v in &queue[1..] {
                let v = v as usize;
                if stub[v] {
                    continue; // a stub sends on its one link
                }
                set.clear();
                for &l in &graph.out_links[v] {
                    let u = graph.to[l as usize] as usize;
                    // An unreachable neighbour (u32::MAX) is no next hop (checked add: no wrap in release).
                    if up[l as usize] && dist[u].checked_add(1) == Some(dist[v]) && (u == t || !graph.is_host[u]) {
                        set.push(l);
                    }
                }
                let entry = routes.intern(&mut interned, &set);
                row_entries.push((v as u32, entry));
            }
            if graph.is_host[t] {
                for &(v, entry) in &row_entries {
                    let i = routes.index(v, t as u32);
                    routes.entries[i] = entry;
                }
                continue;
            }
            // The router of stubs: it delivers on the stub's link; every other node goes towards it.
            for &d in dsts {
                let down = graph.in_links[d as usize][0];
                if !up[down as usize] {
                    continue; // cut off: no route to d anywhere
                }
                let i = routes.index(*target, d);
                routes.entries[i] = down;
                for &(v, entry) in &row_entries {
                    let i = routes.index(v, d);
                    routes.entries[i] = entry;
                }
            }
        }
        let overrides = std::mem::take(&mut routes.overrides);
        for (&(node, dst), (links, _)) in &overrides {
            set.clear();
            set.extend(links.iter().copied().filter(|&l| up[l as usize]));
            let entry = routes.intern(&mut interned, &set);
            let i = routes.index(node, dst);
            routes.entries[i] = entry;
        }
        routes.overrides = overrides;
        routes
    }

    /// The entry for `set`: a plain link index for one link, a shared set for more.
    fn intern(&mut self, interned: &mut HashMap<Vec<u32>, u32>, set: &[u32]) -> u32 {
        match set {
            [] => NO_ROUTE,
            [l] => *l,
            _ => {
                if let Some(&i) = interned.get(set) {
                    return MULTI | i;
                }
                let i = self.sets.len() as u32;
                self.sets.push((self.pool.len() as u32, set.len() as u32));
                self.pool.extend_from_slice(set);
                interned.insert(set.to_vec(), i);
                MULTI | i
            }
        }
    }

    /// The raw entry at `node` for `dst`: a link index when bit 31 is clear, otherwise
    /// [`NO_ROUTE`] or a set for [`Routes::links`].
    #[inline(always)]
    pub fn entry(&self, node: u32, dst: u32) -> u32 {
        let at = &self.nodes[node as usize];
        if at.row == NO_ROW {
            return if node == dst { NO_ROUTE } else { at.stub };
        }
        self.entries[at.row as usize * self.n_cols + self.nodes[dst as usize].col as usize]
    }

    /// The links of a tagged entry (`MULTI | set`); empty for [`NO_ROUTE`], the link itself for a
    /// plain link entry.
    pub fn links<'a>(&'a self, entry: &'a u32) -> &'a [u32] {
        if entry & MULTI == 0 {
            return std::slice::from_ref(entry);
        }
        if *entry == NO_ROUTE {
            return &[];
        }
        let (off, len) = self.sets[(entry & !MULTI) as usize];
        &self.pool[off as usize..][..len as usize]
    }

    /// Approximate heap bytes of the table (entries, set pool), for benchmarks.
    pub fn heap_bytes(&self) -> usize {
        self.entries.len() * 4 + self.sets.len() * 8 + self.pool.len() * 4
            + self.nodes.len() * size_of::<NodeRoute>()
    }

    /// Check that every flow's data and ACK paths reach their destination along every next hop
    /// the table allows.
    ///
    /// # Errors
    /// `routes[i]` when a static override makes a path loop or dead-end (`i` its first entry for
    /// that node and destination); `flows[i].dst` ("no route from 'a' to 'b'") when the
    /// destination is unreachable without any override involved.
    pub fn check_flows(&self, spec: &Spec, graph: &Graph) -> Result<(), SpecError> {
        let n = self.n_nodes;
        // Pairs grouped by destination so node colours carry over between flows to one host;
        // the error reported is that of the first flow in spec order (data direction first).
        let mut pairs: Vec<(usize, usize, u8, usize)> = Vec::with_capacity(2 * spec.flows.len());
        for (i, f) in spec.flows.iter().enumerate() {
            let (s, d) = f.endpoints();
            pairs.push((d, i, 0, s));
            pairs.push((s, i, 1, d));
        }
        pairs.sort_unstable();
        // 0 unvisited, 1 on the current search stack, 2 every path from it reaches the dst.
        let mut colour = vec![0u8; n];
        let mut stack: Vec<(u32, usize)> = Vec::new();
        let mut current = usize::MAX;
        let mut first: Option<((usize, u8), SpecError)> = None;
        for &(dst, flow, dir, src) in &pairs {
            if dst != current {
                colour.fill(0);
                current = dst;
            }
            if let Err(e) = self.check_pair(spec, graph, &mut colour, &mut stack, src, dst, flow) {
                if first.as_ref().is_none_or(|(at, _)| (flow, dir) < *at) {
                    first = Some(((flow, dir), e));
                }
                colour.fill(0);
                current = usize::MAX;
            }
        }
        first.map_or(Ok(()), |(_, e)| Err(e))
    }

    /// Depth-first search of every path the table allows from `src` to `dst`.
    #[allow(clippy::too_many_arguments)]
    fn check_pair(
        &self,
        spec: &Spec,
        graph: &Graph,
        colour: &mut [u8],
        stack: &mut Vec<(u32, usize)>,
        src: usize,
        dst: usize,
        flow: usize,
    ) -> Result<(), SpecError> {
        let name = |v: usize| spec.nodes[v].name.as_str();
        if colour[src] == 2 {
            return Ok(());
        }
        stack.clear();
        stack.push((src as u32, 0));
        colour[src] = 1;
        while let Some(&mut (v, ref mut next)) = stack.last_mut() {
            let entry = self.entry(v, dst as u32);
            let links = self.links(&entry);
            if links.is_empty() {
                return Err(self.blame(spec, stack, dst, flow, src, || format!("dead-end at node '{}'", name(v as usize))));
            }
            if *next == links.len() {
                colour[v as usize] = 2;
                stack.pop();
                continue;
            }
            let u = graph.to(links[*next]) as usize;
            *next += 1;
            if u == dst || colour[u] == 2 {
                continue;
            }
            if graph.is_host[u] {
                let host = name(u);
                return Err(self.blame(spec, stack, dst, flow, src, || format!("dead-end at host '{host}' (hosts do not forward)")));
            }
            if colour[u] == 1 {
                let at = stack.iter().position(|&(w, _)| w as usize == u).expect("grey nodes are on the stack");
                let cycle: Vec<&str> = stack[at..].iter().map(|&(w, _)| name(w as usize)).chain([name(u)]).collect();
                return Err(self.blame(spec, &stack[at..], dst, flow, src, || format!("loop ({})", cycle.join(" → "))));
            }
            colour[u] = 1;
            stack.push((u as u32, 0));
        }
        Ok(())
    }

    /// The error for a bad path: the deepest override on `stack` if there is one, else the flow.
    fn blame(
        &self,
        spec: &Spec,
        stack: &[(u32, usize)],
        dst: usize,
        flow: usize,
        src: usize,
        what: impl FnOnce() -> String,
    ) -> SpecError {
        let (a, b) = (spec.nodes[src].name.as_str(), spec.nodes[dst].name.as_str());
        for &(v, _) in stack.iter().rev() {
            if let Some((_, i)) = self.overrides.get(&(v, dst as u32)) {
                let at = spec.nodes[v as usize].name.as_str();
                return err(
                    format!("routes[{i}]"),
                    format!("the static route at '{at}' for '{b}' makes the path from '{a}' to '{b}' {}", what()),
                );
            }
        }
        err(format!("flows[{flow}].dst"), format!("no route from '{a}' to '{b}'"))
    }
}

/// The 5-tuple hash of each flow's two directions: what a switch hashes, seeded by the run.
///
/// The simulator has no addresses or ports, so the tuple is (source node, destination node, IP
/// protocol — 6 for TCP, 17 for UDP and UDT —, source port 49152 + flow index, destination port
/// 5201); the ACK direction hashes the reversed tuple, as a switch sees it. An MPTCP flow whose
/// spec gives `source_ports` hashes each subflow on its own tuple with that source port instead
/// ([`FlowKeys::for_subflow`]).
#[derive(Clone, Debug)]
pub struct FlowKeys {
    /// The data direction's destination host (to tell a packet's direction).
    pub data_dst: u32,
    /// Hash of the data direction's tuple.
    pub data: u64,
    /// Hash of the ACK direction's tuple.
    pub ack: u64,
    /// Per subflow, the (data, ACK) hashes of its tuple with its explicit source port
    /// (`MptcpSpec::source_ports`); None when the flow gives no ports.
    pub subflow_keys: Option<Box<[(u64, u64)]>>,
}

impl FlowKeys {
    /// Keys of flow `index` of a run with `seed`.
    pub fn new(seed: u64, index: usize, flow: &FlowSpec) -> FlowKeys {
        let (src, dst) = flow.endpoints();
        let proto = if matches!(flow, FlowSpec::Tcp(_)) { 6 } else { 17 };
        let (sport, dport) = (49_152 + index as u64, u64::from(crate::pcap::frame::DESTINATION_PORT));
        let hash = |a: usize, b: usize, sp: u64, dp: u64| {
            [a as u64, b as u64, proto, sp, dp].iter().fold(mix64(seed ^ 0x5eed_ecb0), |h, &w| mix64(h ^ w))
        };
        let subflow_keys = match flow {
            FlowSpec::Tcp(t) => t.mptcp.as_ref().and_then(|m| m.source_ports.as_ref()).map(|ports| {
                ports.iter().map(|&p| (hash(src, dst, u64::from(p), dport), hash(dst, src, dport, u64::from(p)))).collect()
            }),
            _ => None,
        };
        FlowKeys { data_dst: dst as u32, data: hash(src, dst, sport, dport), ack: hash(dst, src, dport, sport), subflow_keys }
    }

    /// The key of a packet of this flow headed to `dst`.
    #[inline]
    pub fn for_dst(&self, dst: u32) -> u64 {
        if dst == self.data_dst {
            self.data
        } else {
            self.ack
        }
    }

    /// The key of a packet of MPTCP subflow `subflow` of this flow headed to `dst`. With the
    /// spec's `source_ports`, the hash of the subflow's own tuple with its given source port.
    /// Otherwise subflow 0 is the flow's own tuple and every other subflow has its own source
    /// port (RFC 8684 §3.2: an MP_JOIN opens a new TCP connection), hence its own hash, so ECMP
    /// places each subflow independently. Panics if `subflow` is not below the flow's given
    /// ports (the spec's validation makes them one per subflow).
    #[inline]
    pub fn for_subflow(&self, dst: u32, subflow: u8) -> u64 {
        if let Some(keys) = &self.subflow_keys {
            let (data, ack) = keys[usize::from(subflow)];
            return if dst == self.data_dst { data } else { ack };
        }
        let key = self.for_dst(dst);
        if subflow == 0 {
            key
        } else {
            mix64(key ^ (u64::from(subflow) << 16 | 0x5f10))
        }
    }
}

/// Hash-threshold choice (RFC 2992 §2.2): the 64-bit hash space is cut into `n` equal regions
/// and the key's region is the next hop, so adding or removing a next hop moves few flows.
/// `salt` is the node's own hash seed (as switches use per-switch seeds, avoiding polarization:
/// the same choice at every tier).
#[inline]
pub fn hash_threshold(key: u64, salt: u64, n: usize) -> usize {
    ((mix64(key ^ salt) as u128 * n as u128) >> 64) as usize
}

/// A uniform index in `0..n` from 64 random bits (multiply-shift).
#[inline]
pub fn uniform_index(bits: u64, n: usize) -> usize {
    ((bits as u128 * n as u128) >> 64) as usize
}

/// The mode of a run's routing, for the engine: static table, hash or spray.
pub fn mode(spec: &Spec) -> Option<RoutingMode> {
    spec.routing.as_ref().map(|r| r.mode)
}
