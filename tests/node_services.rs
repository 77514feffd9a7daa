//! The node's services over the rmw_zenoh format, against an rmw_zenoh client played by a Python
//! eclipse-zenoh peer (tests/python/lifecycle_client.py): a managed node's lifecycle walk
//! (configure, activate and Twists, a parameter set that limits them at the next burst and one
//! refused with its reason, deactivate with a zero Twist and no more, ~/save_checkpoint, activate
//! again, cleanup, shutdown), each call with rmw_zenoh's key and attachment and the reply matched
//! by them. The same walk on real rcl is tests/ros2_rcl.rs's.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::{repo, venv, Proc, PY_PACKAGES};

#[test]
fn a_managed_node_walks_its_lifecycle_for_an_rmw_zenoh_client() {
    walk("rmw");
}

/// The zenoh-bridge-ros2dds format: the queries the bridge makes of a DDS client's calls (plain
/// service name, plain CDR). A DDS robot's clients reach them through the bridge when they run on
/// Cyclone DDS (the bridge reads the request's id from the payload, where rmw_cyclonedds puts it;
/// Fast DDS sends it beside the payload, and the bridge drops such calls).
#[test]
fn a_managed_node_walks_its_lifecycle_for_the_dds_bridges_queries() {
    walk("ros2dds");
}

/// The rover's managed node, a Zenoh peer listening on a free loopback port (its own connect
/// endpoint leads nowhere), unconfigured; returns it and the endpoint to connect to.
fn managed_node(dir: &Path, extra: &[&str]) -> (Proc, String) {
    let config = repo().join("config/node.yaml");
    let mut args = vec!["--config", config.to_str().unwrap(), "--set", "node.rate_hz=200", "--set", "node.lifecycle=true"];
    args.extend_from_slice(extra);
    common::loopback_node(dir, &repo().join("examples/genomes/rover.yaml"), &args, "a managed node, unconfigured")
}

fn walk(format: &str) {
    let python = venv("pyenv", PY_PACKAGES);
    let dir = tempfile::tempdir().unwrap();
    let checkpoint = dir.path().join("ckpt");
    let (mut node, listen) =
        managed_node(dir.path(), &["--zenoh-format", format, "--set", &format!("checkpoint.path={}", checkpoint.display())]);
    let out = Command::new(&python)
        .arg(repo().join("tests/python/lifecycle_client.py"))
        .args(["--connect", &listen, "--format", format])
        .arg("--checkpoint")
        .arg(&checkpoint)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "client failed:\n{stdout}\n{}\nnode log:\n{}", String::from_utf8_lossy(&out.stderr), node.log());
    println!("{stdout}");
    // shutdown ends the process, cleanly
    let status = (0..100).find_map(|_| {
        std::thread::sleep(std::time::Duration::from_millis(50));
        node.child.try_wait().ok().flatten()
    });
    assert!(status.is_some_and(|s| s.success()), "the node did not end after shutdown: {status:?}\n{}", node.log());
    let log = node.log();
    for line in ["lifecycle: configure -> inactive", "lifecycle: deactivate -> inactive", "lifecycle: shutdown -> finalized"] {
        assert!(log.contains(line), "{line:?} not in the node's log:\n{log}");
    }
    assert!(log.contains("node.rate_hz is read at configure"), "{log}");
}

/// A Zenoh session playing an rmw_zenoh client of a node's services (the Python client above
/// checks the wire against an independent peer).
struct Client {
    session: zenoh::Session,
    seq: i64,
}

impl Client {
    fn connect(listen: &str) -> Client {
        use zenoh::Wait;
        let mut conf = zenoh::Config::default();
        for (k, v) in [
            ("mode", "\"peer\"".to_string()),
            ("scouting/multicast/enabled", "false".into()),
            ("connect/endpoints", format!("[\"{listen}\"]")),
        ] {
            conf.insert_json5(k, &v).unwrap();
        }
        let session = zenoh::open(conf).wait().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(500));
        Client { session, seq: 0 }
    }

    /// Call `/neuroburst/<service>` with rmw_zenoh's key and attachment; its answer.
    fn call<S: neuroburst::ros::RosService>(&mut self, service: &str, request: &S::Request) -> S::Response {
        use neuroburst::transport::zenoh::{keys, KeyFormat};
        use neuroburst::transport::{Qos, TopicSpec};
        use zenoh::Wait;
        let spec = TopicSpec::new(format!("/neuroburst/{service}"), S::TYPE, neuroburst::ros::type_hash::<S>(), Qos::COMMAND);
        let key = keys::data_key(KeyFormat::Rmw, 0, &spec);
        self.seq += 1;
        let att = neuroburst::transport::zenoh::attachment::encode(self.seq, 0, &[7u8; 16]).to_vec();
        let payload = neuroburst::ros::encode(request);
        let replies = self.session.get(&key).payload(payload).attachment(att).timeout(std::time::Duration::from_secs(60)).wait().unwrap();
        let reply = replies.recv().unwrap_or_else(|_| panic!("no answer from {key}"));
        let sample = reply.result().expect("a reply, not an error");
        neuroburst::ros::decode(&sample.payload().to_bytes()).unwrap()
    }

    /// A lifecycle transition (its id); whether it succeeded.
    fn change(&mut self, id: u8) -> bool {
        use neuroburst::ros::lifecycle_msgs::{ChangeState, ChangeStateRequest, Transition};
        self.call::<ChangeState>("change_state", &ChangeStateRequest { transition: Transition { id, label: String::new() } }).success
    }
}

/// A managed node on the GPU: configure builds the brain there, cleanup releases it, and a second
/// configure builds it again; Twists flow while active, none after deactivate. Driven in-process
/// over rmw_zenoh keys; skips without a GPU.
#[test]
fn a_managed_node_builds_and_releases_its_brain_on_the_gpu() {
    if common::gpus(1) {
        managed_node_on("cuda");
    }
}

/// [`a_managed_node_builds_and_releases_its_brain_on_the_gpu`] on the wgpu device (lavapipe in CI).
#[test]
fn a_managed_node_builds_and_releases_its_brain_on_wgpu() {
    if common::wgpu_device().is_some() {
        managed_node_on("wgpu");
    }
}

fn managed_node_on(kind: &str) {
    use zenoh::Wait;
    let dir = tempfile::tempdir().unwrap();
    let (mut node, listen) = managed_node(dir.path(), &["--set", &format!("backend.kind={kind}")]);
    let mut client = Client::connect(&listen);
    let twists = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let t = twists.clone();
    let _sub = client
        .session
        .declare_subscriber("0/cmd_vel/**")
        .callback(move |_| {
            t.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        })
        .wait()
        .unwrap();
    let count = || twists.load(std::sync::atomic::Ordering::Relaxed);
    let mut step = |id: u8| assert!(client.change(id), "transition {id} failed:\n{}", node.log());
    for round in 0..2 {
        step(1); // configure: the brain built on the GPU
        step(3); // activate
        std::thread::sleep(std::time::Duration::from_millis(500));
        let active = count();
        assert!(active > 20, "round {round}: {active} Twists in 0.5 s of activity");
        step(4); // deactivate
        std::thread::sleep(std::time::Duration::from_millis(300));
        let stopped = count();
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert_eq!(count(), stopped, "Twists after deactivate");
        step(2); // cleanup: the GPU's brain released
    }
    step(5); // shutdown: the process ends
    let status = (0..100).find_map(|_| {
        std::thread::sleep(std::time::Duration::from_millis(50));
        node.child.try_wait().ok().flatten()
    });
    assert!(status.is_some_and(|s| s.success()), "{status:?}\n{}", node.log());
    let log = node.log();
    assert!(log.matches("lifecycle: configure -> inactive").count() == 2 && log.to_lowercase().contains(kind), "{log}");
}

/// `backend.learning`, a parameter set while the brain bursts: off from the start, every weight
/// stays the genome's; switched on, the weights move; switched off again, they stay where they
/// are. Seen in the checkpoints `~/save_checkpoint` writes. On the GPU too, where there is one
/// (CUDA, wgpu).
#[test]
fn a_running_node_switches_its_learning_with_a_parameter() {
    use neuroburst::checkpoint::Checkpoint;
    use neuroburst::model::plasticity::LearnedSynapse;
    use neuroburst::ros::rcl_interfaces::{Parameter, ParameterValue, SetParameters, SetParametersRequest};
    use neuroburst::ros::std_srvs::{Trigger, TriggerRequest};
    let genome_path = repo().join("tests/fixtures/learning.yaml");
    let genome = neuroburst::genome::Genome::load(&genome_path).unwrap();
    let mut kinds = vec!["cpu"];
    if common::gpus(1) {
        kinds.push("cuda");
    }
    if common::wgpu_device().is_some() {
        kinds.push("wgpu");
    }
    for kind in kinds {
        let dir = tempfile::tempdir().unwrap();
        let ckpt = dir.path().join("ckpt");
        let (kind_set, ckpt_set) = (format!("backend.kind={kind}"), format!("checkpoint.path={}", ckpt.display()));
        let args = ["--set", "node.rate_hz=500", "--set", "backend.learning=false", "--set", &kind_set, "--set", &ckpt_set];
        let (node, listen) = common::loopback_node(dir.path(), &genome_path, &args, "bursting at");
        let mut client = Client::connect(&listen);
        let weights = |client: &mut Client| -> Vec<LearnedSynapse> {
            let saved = client.call::<Trigger>("save_checkpoint", &TriggerRequest::default());
            assert!(saved.success, "{kind}: {saved:?}\n{}", node.log());
            Checkpoint::load(std::path::Path::new(&saved.message), &genome).unwrap().state.learned.synapses
        };
        let learning = |client: &mut Client, on: bool| {
            let value = ParameterValue { r#type: 1, bool_value: on, ..Default::default() };
            let request = SetParametersRequest { parameters: vec![Parameter { name: "backend.learning".into(), value }] };
            let r = client.call::<SetParameters>("set_parameters", &request);
            assert!(r.results.iter().all(|r| r.successful), "{kind}: {r:?}");
        };
        let pause = || std::thread::sleep(std::time::Duration::from_millis(400));
        pause();
        let initial = weights(&mut client);
        assert!(!initial.is_empty(), "{kind}: the brain has plastic synapses");
        let genome_weight = |s: &LearnedSynapse| if s.mapping == 1 { 90 } else { 40 };
        assert!(initial.iter().all(|s| s.weight == genome_weight(s)), "{kind}: learning off from the start, weights moved");
        learning(&mut client, true);
        pause();
        let learned = weights(&mut client);
        let moved = learned.iter().filter(|s| s.weight != genome_weight(s)).count();
        assert!(moved > 100, "{kind}: learning on, {moved} weights moved");
        learning(&mut client, false);
        std::thread::sleep(std::time::Duration::from_millis(50));
        let frozen = weights(&mut client);
        pause();
        assert_eq!(weights(&mut client), frozen, "{kind}: learning off again, weights moved");
        let log = node.log();
        assert!(log.contains("learning on") && log.contains("learning off"), "{log}");
    }
}
