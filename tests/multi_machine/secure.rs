//! Shards that trust only their peers.
//!
//! - Over mutual TLS with access control (config/zenoh/cluster_mtls.json5 as shipped, with the
//!   test's certificates: a cluster CA, each shard its own certificate "shard-K"): two rogues
//!   connect to shard 1 and publish well-formed forgeries and garbage on the brain's keys
//!   (tests/python/rogue_shard.py --mode all): one with a certificate of the same CA but no
//!   member's ("rogue"), one with shard 2's certificate publishing as shard 1 and as the io
//!   shard. None of it reaches a shard (nothing counted malformed, stray or forged), and the fired
//!   sets of 1,000 bursts equal one process's.
//! - Over plain TCP without access control, a rogue publishes what the shards themselves must
//!   refuse (--mode app): spikes of a shard that is not in the cluster, directives that are not
//!   the io shard's, bursts far ahead and far behind. Every shard counts them and drops them, none
//!   stops, and the fired sets equal one process's.

use super::common::certs::Ca;
use super::common::{repo, venv, PY_PACKAGES};
use super::harness::*;
use std::path::{Path, PathBuf};
use std::sync::mpsc::Receiver;
use std::time::Duration;

/// A rogue connected to `endpoint` (from host 0), publishing in `mode` for 15 s; its first line
/// (connected or not) is read before this returns.
fn rogue(c: &Cluster, endpoint: &str, mode: &str, config: Option<&Path>) -> (std::process::Child, Receiver<String>) {
    let python = venv("pyenv", PY_PACKAGES);
    let mut cmd = c.hosts.command(0, &python);
    cmd.arg(repo().join("tests/python/rogue_shard.py"))
        .args(["--connect", endpoint, "--name", &format!("w{}", c.tag), "--seconds", "15", "--mode", mode])
        .stdout(std::process::Stdio::piped());
    if let Some(config) = config {
        cmd.arg("--config").arg(config);
    }
    let mut child = cmd.spawn().unwrap();
    let (tx, said) = std::sync::mpsc::channel();
    let out = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    // a QUIC connect times out after 30 s: its first line comes by then
    let first = said.recv_timeout(Duration::from_secs(45)).unwrap_or_else(|e| format!("(nothing: {e})"));
    println!("rogue ({mode}, {}): {first}", config.map_or("plain".into(), |p| p.display().to_string()));
    assert!(first.contains("\"connected\": true"), "the rogue did not connect: the test would prove nothing\n{first}\n{}", c.logs());
    (child, said)
}

/// The rogue's last line, once it is done; it must have sent something.
fn finished(mut child: std::process::Child, said: Receiver<String>) -> String {
    let last = said.recv_timeout(Duration::from_secs(60)).unwrap_or_default();
    let _ = child.wait();
    assert!(last.contains("\"done\": true") && !last.contains("\"sent\": 0"), "the rogue sent nothing: {last}");
    last
}

/// Each shard's count of `field` in its summary line.
fn counts(logs: &str, field: &str) -> Vec<u64> {
    logs.split(&format!("\"{field}\":")).skip(1).map(|t| t.split([',', '}']).next().unwrap_or("").trim().parse().unwrap()).collect()
}

/// Run shards 1 and 2, then `rogues` against shard 1, then the io shard; all must finish and fire
/// as one process.
fn run_with_rogues(c: &mut Cluster, args: &dyn Fn(usize) -> Vec<String>, rogues: &[(&str, Option<PathBuf>)]) -> String {
    // Shards 1 and 2 first: they listen and wait for the io shard, so the rogues are connected and
    // publishing before the brain's first burst, however slowly it starts on a loaded machine.
    for k in 1..SHARDS {
        c.spawn_run(k, &args(k));
    }
    c.time_to(1, "listening on", std::time::Instant::now(), Duration::from_secs(120));
    let endpoint = c.endpoints()[1].clone();
    let started: Vec<_> = rogues.iter().map(|(mode, config)| rogue(c, &endpoint, mode, config.as_deref())).collect();
    c.spawn_run(0, &args(0));
    for k in 0..SHARDS {
        let s = c.wait(k, Duration::from_secs(240));
        assert!(s.success(), "shard {k}: {s}\n{}", c.logs());
    }
    assert_matches_reference(&read_record(&c.record(0)), &c.logs());
    for (child, said) in started {
        println!("rogue: {}", finished(child, said));
    }
    c.logs()
}

#[test]
fn shards_over_mutual_tls_each_its_own_identity_and_rogues_change_nothing() {
    let mut c = Cluster::with(hosts("t"), "t", None, "");
    c.use_quic();
    let names: Vec<String> = (0..SHARDS).map(|i| c.hosts.addr(i).to_string()).collect();
    let d = c.dir.path().to_path_buf();
    let ca = Ca::new("cluster CA");
    let ca_pem = ca.write(&d.join("cluster-ca.pem"));
    let mut sans: Vec<&str> = names.iter().map(String::as_str).collect();
    sans.push("127.0.0.1");
    let shipped = std::fs::read_to_string(repo().join("config/zenoh/cluster_mtls.json5")).unwrap();
    // each shard's own certificate, in its own copy of the shipped file
    let mut configs = Vec::new();
    for k in 0..SHARDS {
        let (cert, key) = ca.issue(&d, &format!("shard-{k}"), &sans);
        let file = d.join(format!("cluster_mtls-{k}.json5"));
        std::fs::write(
            &file,
            shipped
                .replace("/etc/neuroburst/cluster-ca.pem", &ca_pem.display().to_string())
                .replace("/etc/neuroburst/shard.pem", &cert.display().to_string())
                .replace("/etc/neuroburst/shard-key.pem", &key.display().to_string()),
        )
        .unwrap();
        configs.push(file);
    }
    let client = |cn: &str| {
        let (cert, key) =
            if cn == "rogue" { ca.issue(&d, cn, &sans) } else { (d.join(format!("{cn}.pem")), d.join(format!("{cn}-key.pem"))) };
        let file = d.join(format!("{cn}-client.json5"));
        std::fs::write(
            &file,
            format!(
                r#"{{ transport: {{ link: {{ tls: {{ root_ca_certificate: "{}", enable_mtls: true, verify_name_on_connect: true, connect_certificate: "{}", connect_private_key: "{}" }} }} }} }}"#,
                ca_pem.display(),
                cert.display(),
                key.display()
            ),
        )
        .unwrap();
        file
    };
    let rogues = [("all", Some(client("rogue"))), ("all", Some(client("shard-2")))];
    // Zenoh's access control says, once per link, when a peer matches no member
    c.log = format!("{},zenoh::net::routing::interceptor::access_control=info", c.log);
    let args = |k: usize| vec!["--set".to_string(), format!("cluster.zenoh_config_file={}", configs[k].display())];
    let logs = run_with_rogues(&mut c, &args, &rogues);
    // Without the access control these messages reach the shards (the plain test below counts
    // them); with it, none arrives: nothing is counted, nothing logged.
    assert!(!logs.contains("malformed directive") && !logs.contains("not the io shard's"), "a rogue message reached a shard:\n{logs}");
    for field in ["malformed_messages", "stray_messages", "forged_directives"] {
        let n = counts(&logs, field);
        assert!(n.len() == SHARDS && n.iter().all(|&x| x == 0), "the shards counted {field} {n:?}:\n{logs}");
    }
    // the rogue without a member's certificate is logged once by shard 1: it matches no subject
    let refused = c.proc(1).log().matches("did not match any configured ACL subject").count();
    assert_eq!(refused, 1, "shard 1 should log the non-member's link once:\n{logs}");
}

#[test]
fn forged_well_formed_messages_are_counted_and_dropped_without_access_control() {
    let mut c = Cluster::with(hosts("f"), "f", None, "");
    let logs = run_with_rogues(&mut c, &|_| vec![], &[("app", None)]);
    // every shard saw the forgeries (spikes and directives reach all), counted them, went on
    let (forged, stray, malformed) =
        (counts(&logs, "forged_directives"), counts(&logs, "stray_messages"), counts(&logs, "malformed_messages"));
    println!("forged directives {forged:?}, stray {stray:?}, malformed {malformed:?}");
    assert!(forged.len() == SHARDS && forged.iter().all(|&x| x > 0), "directives not the io shard's, uncounted: {forged:?}\n{logs}");
    assert!(stray.iter().all(|&x| x > 0), "bursts far ahead and behind, uncounted: {stray:?}\n{logs}");
    assert!(malformed.iter().all(|&x| x > 0), "spikes of a shard beyond the cluster, uncounted: {malformed:?}\n{logs}");
    assert!(!logs.contains("left behind"), "a forged burst far ahead stopped a shard:\n{logs}");
}
