//! The shards of one brain over mutual TLS with access control (config/zenoh/cluster_mtls.json5
//! with the test's certificates: a cluster CA, one "shard" certificate for every host's address),
//! while a rogue with a certificate of the same CA but not a member's (tests/python/rogue_shard.py)
//! connects to a shard and publishes garbage and forged spikes on the brain's keys: none of them
//! reaches a shard, and the fired sets equal one process's.

use super::common::certs::Ca;
use super::common::{repo, venv, PY_PACKAGES};
use super::harness::*;
use std::time::Duration;

#[test]
fn three_hosts_over_mutual_tls_fire_as_one_process_and_a_rogue_changes_nothing() {
    let hosts = hosts("t");
    let names: Vec<String> = (0..SHARDS).map(|i| hosts.addr(i).to_string()).collect();
    let mut c = Cluster::with(hosts, "t", None, "");
    let d = c.dir.path().to_path_buf();
    let ca = Ca::new("cluster CA");
    let ca_pem = ca.write(&d.join("cluster-ca.pem"));
    let mut sans: Vec<&str> = names.iter().map(String::as_str).collect();
    sans.push("127.0.0.1");
    let (cert, key) = ca.issue(&d, "shard", &sans);
    let (rcert, rkey) = ca.issue(&d, "rogue", &sans);
    let shipped = std::fs::read_to_string(repo().join("config/zenoh/cluster_mtls.json5")).unwrap();
    let zconf = d.join("cluster_mtls.json5");
    std::fs::write(
        &zconf,
        shipped
            .replace("/etc/neuroburst/cluster-ca.pem", &ca_pem.display().to_string())
            .replace("/etc/neuroburst/shard.pem", &cert.display().to_string())
            .replace("/etc/neuroburst/shard-key.pem", &key.display().to_string()),
    )
    .unwrap();
    // the cluster's endpoints as TLS ones, and the Zenoh configuration
    let mut yaml: serde_yaml::Mapping = serde_yaml::from_str(&std::fs::read_to_string(&c.config).unwrap()).unwrap();
    let cluster = yaml.get_mut("cluster").and_then(|v| v.as_mapping_mut()).unwrap();
    let eps: Vec<String> =
        cluster["endpoints"].as_sequence().unwrap().iter().map(|e| e.as_str().unwrap().replacen("tcp/", "quic/", 1)).collect();
    cluster.insert("endpoints".into(), serde_yaml::to_value(&eps).unwrap());
    cluster.insert("zenoh_config_file".into(), zconf.display().to_string().into());
    std::fs::write(&c.config, serde_yaml::to_string(&yaml).unwrap()).unwrap();
    let rogue_conf = d.join("rogue.json5");
    std::fs::write(
        &rogue_conf,
        format!(
            r#"{{ transport: {{ link: {{ tls: {{ root_ca_certificate: "{}", enable_mtls: true, verify_name_on_connect: true, connect_certificate: "{}", connect_private_key: "{}" }} }} }} }}"#,
            ca_pem.display(),
            rcert.display(),
            rkey.display()
        ),
    )
    .unwrap();

    // Zenoh's access control says, once per link, when a peer matches no member
    c.log = format!("{},zenoh::net::routing::interceptor::access_control=info", c.log);
    // Shards 1 and 2 first: they listen and wait for the io shard, so the rogue is connected and
    // publishing before the brain's first burst, however slowly it starts on a loaded machine.
    for k in 1..SHARDS {
        c.spawn(k, false, 0);
    }
    let python = venv("pyenv", PY_PACKAGES);
    c.time_to(1, "listening on", std::time::Instant::now(), Duration::from_secs(120));
    let mut rogue = c
        .hosts
        .command(0, &python)
        .arg(repo().join("tests/python/rogue_shard.py"))
        .args(["--connect", &eps[1], "--name", "wt", "--seconds", "15"])
        .arg("--config")
        .arg(&rogue_conf)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, said) = std::sync::mpsc::channel();
    let out = rogue.stdout.take().unwrap();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    // the rogue's QUIC connect times out after 30 s: its first line comes by then
    let first = said.recv_timeout(Duration::from_secs(45)).unwrap_or_else(|e| format!("(nothing: {e})"));
    println!("rogue: {first}");
    assert!(first.contains("\"connected\": true"), "the rogue did not connect: the test would prove nothing\n{first}\n{}", c.logs());
    c.spawn(0, false, 0);
    for k in 0..SHARDS {
        let s = c.wait(k, Duration::from_secs(240));
        assert!(s.success(), "shard {k}: {s}\n{}", c.logs());
    }
    let lines = read_record(&c.record(0));
    assert_matches_reference(&lines, &c.logs());
    let last = said.recv_timeout(Duration::from_secs(60)).unwrap_or_default();
    let _ = rogue.wait();
    assert!(last.contains("\"done\": true") && !last.contains("\"sent\": 0"), "the rogue sent nothing: {last}");
    // Without the access control the same rogue's messages reach the shards: each counts 87
    // malformed messages and logs "dropped a malformed directive" (measured once with
    // `enabled: false`). With it, none arrives.
    let logs = c.logs();
    assert!(!logs.contains("malformed directive"), "a rogue message reached a shard:\n{logs}");
    // the rogue's link (to shard 1) is logged once: it matches no member, so nothing it sends passes
    let refused = c.proc(1).log().matches("did not match any configured ACL subject").count();
    assert_eq!(refused, 1, "shard 1 should log the rogue's link once:\n{logs}");
    let counted: Vec<&str> = logs.split("\"malformed_messages\":").skip(1).map(|t| t.split(',').next().unwrap_or("")).collect();
    assert!(counted.iter().all(|n| *n == "0"), "the shards counted malformed messages {counted:?}:\n{logs}");
}
