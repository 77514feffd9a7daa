//! The remote brain over mutual TLS with access control, against real peers: the robot's router
//! (PyPI eclipse-zenoh, the access control of config/zenoh/robot_router_mtls.json5 with the
//! test's certificate paths), `neuroburst node` as a client with its certificate
//! (`zenoh.config_file`), the robot (tests/python/robot.py) with its own, and intruders
//! (tests/python/intruder.py). The robot also finds the brain in the ROS graph (rmw_zenoh's
//! liveliness tokens) through the router. The certificates are made here (rcgen): a fleet CA and another one.
//! Everything on 127.0.0.1.

use crate::common;

use std::path::{Path, PathBuf};

use common::certs::Ca;
use common::{free_port, repo, rover_node, venv, Proc, PY_PACKAGES};

/// The fleet's CA (written to `ca.pem`), a certificate it issues for each of `names` (the common
/// name), and a rogue: a certificate with the robot's common name from another CA.
fn certificates(d: &Path, names: &[&str]) -> (PathBuf, Vec<(PathBuf, PathBuf)>, (PathBuf, PathBuf)) {
    let (fleet, other) = (Ca::new("fleet CA"), Ca::new("another CA"));
    let here = ["127.0.0.1", "localhost"];
    let certs = names.iter().map(|n| fleet.issue(d, n, &here)).collect();
    let rogue_dir = d.join("rogue");
    std::fs::create_dir_all(&rogue_dir).unwrap();
    (fleet.write(&d.join("ca.pem")), certs, other.issue(&rogue_dir, "robot", &here))
}

/// A client's Zenoh configuration: the CA to trust and, if any, its own certificate.
fn client_config(dir: &Path, name: &str, ca: &Path, me: Option<&(PathBuf, PathBuf)>) -> PathBuf {
    let mine = me.map_or(String::new(), |(c, k)| {
        format!(r#", enable_mtls: true, connect_certificate: "{}", connect_private_key: "{}""#, c.display(), k.display())
    });
    let path = dir.join(format!("{name}.json5"));
    let text = format!(
        r#"{{ transport: {{ link: {{ tls: {{ root_ca_certificate: "{}", verify_name_on_connect: true{mine} }} }} }} }}"#,
        ca.display()
    );
    std::fs::write(&path, text).unwrap();
    path
}

/// The router's configuration: the shipped example with this test's certificate paths and endpoint.
fn router_config(dir: &Path, ca: &Path, server: &(PathBuf, PathBuf), endpoint: &str) -> PathBuf {
    let shipped = std::fs::read_to_string(repo().join("config/zenoh/robot_router_mtls.json5")).unwrap();
    let text = shipped
        .replace("/etc/neuroburst/ca.pem", &ca.display().to_string())
        .replace("/etc/neuroburst/router.pem", &server.0.display().to_string())
        .replace("/etc/neuroburst/router-key.pem", &server.1.display().to_string())
        .replace(r#"endpoints: ["quic/127.0.0.1:7448", "tcp/127.0.0.1:7447"]"#, &format!(r#"endpoints: ["{endpoint}"]"#));
    assert!(text.contains(endpoint), "the shipped router config changed: update this test");
    let path = dir.join("router.json5");
    std::fs::write(&path, text).unwrap();
    path
}

/// The brain's configuration as the server robots dial: the shipped example with this test's
/// certificate paths.
fn server_config(dir: &Path, ca: &Path, brain: &(PathBuf, PathBuf)) -> PathBuf {
    let shipped = std::fs::read_to_string(repo().join("config/zenoh/brain_server_mtls.json5")).unwrap();
    let text = shipped
        .replace("/etc/neuroburst/ca.pem", &ca.display().to_string())
        .replace("/etc/neuroburst/brain.pem", &brain.0.display().to_string())
        .replace("/etc/neuroburst/brain-key.pem", &brain.1.display().to_string());
    let path = dir.join("brain_server.json5");
    std::fs::write(&path, text).unwrap();
    path
}

/// The rover node (common::rover_node) with these `--set`s.
fn node(dir: &Path, sets: &[String]) -> Proc {
    let args: Vec<String> = sets.iter().flat_map(|s| ["--set".to_string(), s.clone()]).collect();
    rover_node(dir, &args)
}

/// Run a Python script of the test venv (at most 90 s): (success, stdout + stderr).
fn run(python: &Path, args: &[&str]) -> (bool, String) {
    eprintln!("running {}", args[..2].join(" "));
    let out = std::process::Command::new("timeout").arg("90").arg(python).args(args).output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr))
}

#[test]
fn the_shipped_zenoh_configurations_load() {
    for f in ["robot_router_mtls.json5", "brain_client_mtls.json5", "brain_server_mtls.json5", "cluster_mtls.json5"] {
        let path = repo().join("config/zenoh").join(f);
        if let Err(e) = zenoh::Config::from_file(&path) {
            panic!("{}: {e}", path.display());
        }
    }
}

#[test]
fn mutual_tls_and_access_control_let_only_the_robot_drive_the_brain() {
    let python = venv("pyenv", PY_PACKAGES);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (ca_pem, certs, rogue) = certificates(d, &["router", "brain", "robot", "observer"]);
    let [router_cert, brain, robot, observer] = certs.try_into().unwrap();

    let endpoint = format!("quic/127.0.0.1:{}", free_port());
    let mut rcmd = std::process::Command::new(&python);
    rcmd.arg(repo().join("tests/python/router.py")).arg(&endpoint).arg(router_config(d, &ca_pem, &router_cert, &endpoint));
    let router = Proc::spawn(&mut rcmd, d.join("router.log"));
    assert!(router.wait_for("router up"), "the router did not start: {}", router.log());

    let brain_conf = client_config(d, "brain", &ca_pem, Some(&brain));
    let mut node = node(d, &[format!("zenoh.connect=[{endpoint}]"), format!("zenoh.config_file={}", brain_conf.display())]);
    let intruder = repo().join("tests/python/intruder.py");
    let intruder = intruder.to_str().unwrap();
    let msg = repo().join("msg");
    let msg = msg.to_str().unwrap();
    // Without a certificate, or with one of another CA: no session at all.
    for (name, me) in [("nocert", None), ("rogue", Some(&rogue))] {
        let conf = client_config(d, name, &ca_pem, me);
        let (ok, out) = run(&python, &[intruder, "outsider", "--connect", &endpoint, "--config", conf.to_str().unwrap()]);
        assert!(ok && out.contains("\"connected\": false"), "{name} got through:\n{out}\nrouter:\n{}", router.log());
    }
    // The fleet's CA but not the robot's rights: reads the stats, its scans never reach the brain.
    let conf = client_config(d, "observer", &ca_pem, Some(&observer));
    let (ok, out) = run(&python, &[intruder, "observer", "--connect", &endpoint, "--config", conf.to_str().unwrap(), "--msg-dir", msg]);
    assert!(ok, "the observer:\n{out}\nnode:\n{}", node.log());
    println!("{out}");
    // The robot: LaserScan in, Twist out.
    let conf = client_config(d, "robot", &ca_pem, Some(&robot));
    let robot_py = repo().join("tests/python/robot.py");
    let (ok, out) = run(
        &python,
        &[
            robot_py.to_str().unwrap(),
            "--connect",
            &endpoint,
            "--config",
            conf.to_str().unwrap(),
            "--scenario",
            "basic",
            "--rate",
            "200",
            "--msg-dir",
            msg,
        ],
    );
    assert!(ok && out.contains("\"ok\": true"), "the robot over mTLS:\n{out}\nnode:\n{}\nrouter:\n{}", node.log(), router.log());
    println!("{out}");
    let status = node.stop();
    assert!(status.is_some_and(|s| s.success()), "the node did not stop cleanly: {status:?}\n{}", node.log());
    assert!(node.log().contains("zenoh.config_file"), "the node did not say which Zenoh configuration it used:\n{}", node.log());
}

#[test]
fn a_brain_that_robots_dial_refuses_links_without_the_fleets_certificate_and_says_so_once() {
    let python = venv("pyenv", PY_PACKAGES);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (ca_pem, certs, rogue) = certificates(d, &["brain", "robot"]);
    let [brain, robot] = certs.try_into().unwrap();

    let endpoint = format!("quic/127.0.0.1:{}", free_port());
    let sets = [
        "zenoh.mode=peer".to_string(),
        "zenoh.connect=[]".into(),
        format!("zenoh.listen=[{endpoint}]"),
        format!("zenoh.config_file={}", server_config(d, &ca_pem, &brain).display()),
    ];
    let mut node = node(d, &sets);

    let intruder = repo().join("tests/python/intruder.py");
    let intruder = intruder.to_str().unwrap();
    // Each outsider knocks twice: refused both times, logged once per reason.
    for (name, me) in [("nocert", None), ("rogue", Some(&rogue))] {
        let conf = client_config(d, name, &ca_pem, me);
        for _ in 0..2 {
            let (ok, out) = run(&python, &[intruder, "outsider", "--connect", &endpoint, "--config", conf.to_str().unwrap()]);
            assert!(ok && out.contains("\"connected\": false"), "{name} got through:\n{out}\nnode:\n{}", node.log());
        }
    }
    // The robot dials the brain with the fleet's certificate: LaserScan in, Twist out.
    let conf = client_config(d, "robot", &ca_pem, Some(&robot));
    let msg = repo().join("msg");
    let robot_py = repo().join("tests/python/robot.py");
    let args = ["--connect", &endpoint, "--config", conf.to_str().unwrap(), "--mode", "client", "--scenario", "basic"];
    let (ok, out) =
        run(&python, &[&[robot_py.to_str().unwrap()][..], &args, &["--rate", "200", "--msg-dir", msg.to_str().unwrap()]].concat());
    assert!(ok && out.contains("\"ok\": true"), "the robot over mTLS:\n{out}\nnode:\n{}", node.log());
    let status = node.stop();
    assert!(status.is_some_and(|s| s.success()), "the node did not stop cleanly: {status:?}\n{}", node.log());

    let log = node.log();
    let refusals: Vec<&str> = log.lines().filter(|l| l.contains("refused an incoming link")).collect();
    println!("{}", refusals.join("\n"));
    assert_eq!(refusals.len(), 2, "one line per reason (no certificate, another CA):\n{log}");
    assert!(refusals.iter().any(|l| l.contains("UnknownIssuer")), "the other CA's refusal is not named:\n{log}");
    assert!(!log.contains("open file limit"), "Zenoh's own accept-loop warning leaked into the log:\n{log}");
}
