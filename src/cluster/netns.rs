//! Hosts for tests and benchmarks of a brain over several machines, on one machine: each host a
//! Linux network namespace with one interface `eth0` (10.77.0.`i + 1`/24) on a bridge that lives
//! in a namespace of its own, so nothing touches the machine's own interfaces and no packet
//! leaves it. Where namespaces cannot be made (no root, a container without CAP_SYS_ADMIN), the
//! same hosts are processes on 127.0.0.1 ([`Hosts::loopback`]).
//!
//! Namespace names carry the creating process's id (`nbt<pid>...`); they are removed on drop,
//! and leftovers of processes that no longer exist are removed at the next creation.

use std::process::Command;

pub struct Hosts {
    /// Namespace of each host (empty: loopback).
    names: Vec<String>,
    switch: Option<String>,
    addrs: Vec<String>,
    ports: Vec<u16>,
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip").args(args).output().map_err(|e| format!("cannot run `ip`: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("`ip {}` failed: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()))
    }
}

/// Remove namespaces named `nbt<pid>...` whose process is gone.
fn remove_leftovers() {
    let Ok(out) = Command::new("ip").args(["netns", "list"]).output() else { return };
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let name = line.split_whitespace().next().unwrap_or("");
        let Some(rest) = name.strip_prefix("nbt") else { continue };
        let pid: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if !pid.is_empty() && !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            let _ = ip(&["netns", "del", name]);
        }
    }
}

/// A port on 127.0.0.1 that nobody holds now, neither TCP nor UDP, for a process of ours to
/// listen on (tests, benchmarks). It lies below the kernel's ephemeral range
/// (`/proc/sys/net/ipv4/ip_local_port_range`), so no `bind(0)` and no outgoing connection of a
/// process running beside it can take it before its owner listens, and this process never hands
/// it out twice; processes start their search at different places (their id). Falls back to an
/// ephemeral port where the range leaves no room below it.
pub fn loopback_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    const LOWEST: u32 = 20_000;
    static TAKEN: AtomicU32 = AtomicU32::new(0);
    let ephemeral = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u32>().ok())
        .unwrap_or(32_768);
    let free =
        |port: u16| std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() && std::net::UdpSocket::bind(("127.0.0.1", port)).is_ok();
    if ephemeral > LOWEST + 1000 {
        let span = ephemeral - LOWEST;
        let first = std::process::id().wrapping_mul(7919);
        for _ in 0..span {
            let port = (LOWEST + first.wrapping_add(TAKEN.fetch_add(1, Ordering::Relaxed)) % span) as u16;
            if free(port) {
                return port;
            }
        }
    }
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).unwrap_or(0)
}

impl Hosts {
    /// `n` processes on 127.0.0.1, each with a free port.
    pub fn loopback(n: usize) -> Hosts {
        Hosts { names: vec![], switch: None, addrs: vec!["127.0.0.1".into(); n], ports: (0..n).map(|_| loopback_port()).collect() }
    }

    /// `n` hosts in network namespaces on a private bridge; `tag` (a few letters or digits) tells
    /// several sets of one process apart.
    pub fn netns(n: usize, tag: &str) -> Result<Hosts, String> {
        if n == 0 || n > 250 {
            return Err(format!("{n} hosts: between 1 and 250"));
        }
        remove_leftovers();
        let base = format!("nbt{}{tag}", std::process::id());
        let mut h = Hosts { names: vec![], switch: None, addrs: vec![], ports: vec![7600; n] };
        let sw = format!("{base}sw");
        ip(&["netns", "add", &sw])?;
        h.switch = Some(sw.clone());
        ip(&["-n", &sw, "link", "add", "br0", "type", "bridge"])?;
        ip(&["-n", &sw, "link", "set", "br0", "up"])?;
        for i in 0..n {
            let name = format!("{base}h{i}");
            ip(&["netns", "add", &name])?;
            h.names.push(name.clone());
            let port = format!("p{i}");
            ip(&["-n", &sw, "link", "add", &port, "type", "veth", "peer", "name", "eth0", "netns", &name])?;
            ip(&["-n", &sw, "link", "set", &port, "master", "br0", "up"])?;
            let addr = format!("10.77.0.{}", i + 1);
            ip(&["-n", &name, "addr", "add", &format!("{addr}/24"), "dev", "eth0"])?;
            ip(&["-n", &name, "link", "set", "eth0", "up"])?;
            ip(&["-n", &name, "link", "set", "lo", "up"])?;
            h.addrs.push(addr);
        }
        // A namespace that can be made but not entered (some containers) is no use either.
        ip(&["netns", "exec", &h.names[0], "true"])?;
        Ok(h)
    }

    /// Namespaces when they can be made, else loopback; the second value says why not.
    pub fn netns_or_loopback(n: usize, tag: &str) -> (Hosts, Option<String>) {
        match Hosts::netns(n, tag) {
            Ok(h) => (h, None),
            Err(e) => (Hosts::loopback(n), Some(e)),
        }
    }

    pub fn is_netns(&self) -> bool {
        !self.names.is_empty()
    }

    pub fn len(&self) -> usize {
        self.addrs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.addrs.is_empty()
    }

    /// Host `i`'s address.
    pub fn addr(&self, i: usize) -> &str {
        &self.addrs[i]
    }

    /// A TCP Zenoh endpoint on host `i` (a free port on loopback, `port` in a namespace).
    pub fn endpoint(&self, i: usize) -> String {
        format!("tcp/{}:{}", self.addrs[i], self.ports[i])
    }

    /// `program` to run on host `i` (`ip netns exec <ns> program` in a namespace).
    pub fn command(&self, i: usize, program: impl AsRef<std::ffi::OsStr>) -> Command {
        match self.names.get(i) {
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns]).arg(program);
                c
            }
            None => Command::new(program),
        }
    }

    /// Cut (`up` false) or restore host `i`'s cable: its port on the bridge goes down or up (the
    /// host keeps its interface and address; its peers' packets to it go nowhere). Namespaces only.
    pub fn set_link(&self, i: usize, up: bool) -> Result<(), String> {
        let (Some(sw), true) = (&self.switch, i < self.names.len()) else {
            return Err(format!("host {i}: no cable to cut on {}", if self.is_netns() { "this bridge" } else { "127.0.0.1" }));
        };
        ip(&["-n", sw, "link", "set", &format!("p{i}"), if up { "up" } else { "down" }])
    }

    /// `loopback` or `netns (10.77.0.1..10.77.0.n)`.
    pub fn describe(&self) -> String {
        if self.is_netns() {
            format!("{} network namespaces on a private bridge, 10.77.0.1..10.77.0.{}", self.len(), self.len())
        } else {
            format!("{} processes on 127.0.0.1", self.len())
        }
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        for ns in self.names.iter().chain(self.switch.iter()) {
            if let Err(e) = ip(&["netns", "del", ns]) {
                eprintln!("cleanup: {e}");
            }
        }
    }
}
