//! The harness of the multi-machine tests: the hosts (network namespaces or loopback), a cluster of
//! `neuroburst shard` processes, and the reference run of the same brain in this process.

use super::*;

pub const W: Workload = Workload { neurons: 20_000, fanout: 100, rate: 0.01, seed: 1 };
pub const WORKLOAD: &str = "20000,100,0.01,1";
pub const BURSTS: u64 = 1000;
pub const SHARDS: usize = 3;

/// Per burst (index t - 1): hash of the fired ids, fired count, fired per shard, motor fired.
pub type Reference = Vec<(u64, u64, Vec<u64>, u64)>;

pub fn reference() -> &'static Reference {
    static R: OnceLock<Reference> = OnceLock::new();
    R.get_or_init(|| {
        let brain = Brain::build(&W.genome(), 2, false);
        let mut b = CpuBackend::new(brain, Readback::All);
        let ranges = even_ranges(W.neurons, SHARDS);
        let mut inj = Injections::new();
        (1..=BURSTS)
            .map(|t| {
                W.injection(t, &mut inj);
                let out = b.burst(inj.as_slice()).unwrap();
                let per = ranges
                    .iter()
                    .map(|r| (out.fired.partition_point(|&x| x < r.end) - out.fired.partition_point(|&x| x < r.start)) as u64)
                    .collect();
                let motor = out.fired.partition_point(|&x| x < W.motor().end) as u64;
                (record::fired_hash(out.fired), out.fired.len() as u64, per, motor)
            })
            .collect()
    })
}

pub fn hosts(tag: &str) -> Hosts {
    if std::env::var_os("NEUROBURST_TEST_LOOPBACK").is_some() {
        println!("hosts: loopback (NEUROBURST_TEST_LOOPBACK is set)");
        return Hosts::loopback(SHARDS);
    }
    let (h, why) = Hosts::netns_or_loopback(SHARDS, tag);
    match why {
        Some(e) => println!("hosts: network namespaces cannot be made here ({e}); running on loopback instead"),
        None => println!("hosts: {}", h.describe()),
    }
    h
}

pub struct Cluster {
    // Fields drop in order: the processes before the namespaces they run in.
    pub procs: Vec<Option<Proc>>,
    pub hosts: Hosts,
    pub dir: tempfile::TempDir,
    pub config: PathBuf,
    pub starts: usize,
    /// RUST_LOG of the shards (NEUROBURST_TEST_LOG, else info with Zenoh's warnings).
    pub log: String,
    /// The brain's name is `w<tag>`.
    pub tag: String,
}

impl Cluster {
    pub fn new(tag: &str, settings: &str) -> Cluster {
        Cluster::with(hosts(tag), tag, None, settings)
    }

    /// A cluster on `hosts`; its configuration is `base` (a configuration file) with the test's
    /// `backend`, `log` and `cluster` settings (`settings`: more lines of the cluster section).
    pub fn with(hosts: Hosts, tag: &str, base: Option<&Path>, settings: &str) -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        let eps: Vec<String> = (0..SHARDS).map(|i| hosts.endpoint(i)).collect();
        let config = dir.path().join("cluster.yaml");
        let yaml = format!(
            "backend:\n  kind: cpu\n  cpu_threads: 1\nlog:\n  progress: false\ncluster:\n  name: w{tag}\n  endpoints: [{}]\n  io_shard: 0\n  checkpoint_dir: {}\n  startup_timeout_s: 60\n{settings}",
            eps.join(", "),
            dir.path().join("ckpt").display()
        );
        let mut merged: serde_yaml::Mapping = match base {
            Some(p) => serde_yaml::from_str(&std::fs::read_to_string(p).unwrap()).unwrap(),
            None => Default::default(),
        };
        let ours: serde_yaml::Mapping = serde_yaml::from_str(&yaml).unwrap();
        for (k, v) in ours {
            match (merged.get_mut(&k), v) {
                (Some(serde_yaml::Value::Mapping(old)), serde_yaml::Value::Mapping(new)) => old.extend(new),
                (_, v) => {
                    merged.insert(k, v);
                }
            }
        }
        std::fs::write(&config, serde_yaml::to_string(&merged).unwrap()).unwrap();
        let log = std::env::var("NEUROBURST_TEST_LOG").unwrap_or_else(|_| "info,zenoh=warn".into());
        Cluster { procs: (0..SHARDS).map(|_| None).collect(), hosts, dir, config, starts: 0, log, tag: tag.to_string() }
    }

    /// The cluster's endpoints (`cluster.endpoints` of its configuration).
    pub fn endpoints(&self) -> Vec<String> {
        let yaml: serde_yaml::Mapping = serde_yaml::from_str(&std::fs::read_to_string(&self.config).unwrap()).unwrap();
        yaml["cluster"]["endpoints"].as_sequence().unwrap().iter().map(|e| e.as_str().unwrap().to_string()).collect()
    }

    /// The endpoints as QUIC ones (TLS 1.3) on the same addresses and ports.
    pub fn use_quic(&mut self) {
        let mut yaml: serde_yaml::Mapping = serde_yaml::from_str(&std::fs::read_to_string(&self.config).unwrap()).unwrap();
        let eps: Vec<String> = self.endpoints().iter().map(|e| e.replacen("tcp/", "quic/", 1)).collect();
        yaml.get_mut("cluster").and_then(|v| v.as_mapping_mut()).unwrap().insert("endpoints".into(), serde_yaml::to_value(&eps).unwrap());
        std::fs::write(&self.config, serde_yaml::to_string(&yaml).unwrap()).unwrap();
    }

    /// Shard `k` of W recording to record 0, with `extra` arguments.
    pub fn spawn_run(&mut self, k: usize, extra: &[String]) {
        let (record, bursts) = (self.record(0), BURSTS.to_string());
        let mut args: Vec<std::ffi::OsString> =
            vec!["--workload".into(), WORKLOAD.into(), "--bursts".into(), bursts.into(), "--record".into(), record.into()];
        args.extend(extra.iter().map(Into::into));
        self.spawn_with(k, &args, false);
    }

    pub fn record(&self, run: usize) -> PathBuf {
        self.dir.path().join(format!("record{run}.txt"))
    }

    /// Shard `k` of W, recording to record `run`.
    pub fn spawn(&mut self, k: usize, resume: bool, run: usize) {
        let (record, bursts) = (self.record(run), BURSTS.to_string());
        let args: [&OsStr; 6] =
            ["--workload".as_ref(), WORKLOAD.as_ref(), "--bursts".as_ref(), bursts.as_ref(), "--record".as_ref(), record.as_ref()];
        self.spawn_with(k, &args, resume);
    }

    /// Shard `k` with these arguments after `shard --index k --config ...`.
    pub fn spawn_with(&mut self, k: usize, args: &[impl AsRef<OsStr>], resume: bool) {
        // NEUROBURST_BIN: the binary to run (e.g. a copy on another machine), else cargo's
        let bin = std::env::var_os("NEUROBURST_BIN").map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_neuroburst")), PathBuf::from);
        let mut cmd = self.hosts.command(k, bin);
        cmd.args(["shard", "--index", &k.to_string()])
            .arg("--config")
            .arg(&self.config)
            .args(args.iter().map(AsRef::as_ref))
            .env("RUST_LOG", &self.log);
        if resume {
            cmd.arg("--resume");
        }
        self.starts += 1;
        let log = self.dir.path().join(format!("shard{k}-{}.log", self.starts));
        self.procs[k] = Some(Proc::spawn(&mut cmd, log));
    }

    pub fn proc(&self, k: usize) -> &Proc {
        self.procs[k].as_ref().unwrap()
    }

    /// Wait for shard `k` to exit.
    pub fn wait(&mut self, k: usize, timeout: Duration) -> ExitStatus {
        let end = Instant::now() + timeout;
        let p = self.procs[k].as_mut().unwrap();
        loop {
            if let Some(s) = p.child.try_wait().unwrap() {
                return s;
            }
            assert!(Instant::now() < end, "shard {k} did not finish within {timeout:?}:\n{}", self.logs());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn logs(&self) -> String {
        let mut s = String::new();
        for (k, p) in self.procs.iter().enumerate() {
            if let Some(p) = p {
                s += &format!("--- shard {k} ({}) ---\n{}\n", p.stderr.display(), p.log());
            }
        }
        s
    }

    /// The latest checkpoint burst of shard `k`.
    pub fn checkpoint(&self, k: usize) -> u64 {
        let prefix = format!("shard{k}-");
        std::fs::read_dir(self.dir.path().join("ckpt"))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let rest = &name[name.find(&prefix)? + prefix.len()..];
                rest.strip_suffix(".ckpt")?.parse().ok()
            })
            .max()
            .unwrap_or(0)
    }

    pub fn wait_checkpoint(&self, k: usize, at_least: u64) {
        let end = Instant::now() + Duration::from_secs(60);
        while self.checkpoint(k) < at_least {
            assert!(Instant::now() < end, "no checkpoint {at_least} of shard {k}:\n{}", self.logs());
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Time until `text` shows in shard `k`'s log.
    pub fn time_to(&self, k: usize, text: &str, from: Instant, timeout: Duration) -> Duration {
        loop {
            if self.proc(k).log().contains(text) {
                return from.elapsed();
            }
            assert!(from.elapsed() < timeout, "shard {k} did not log {text:?} within {timeout:?}:\n{}", self.logs());
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// The complete lines of a record (the io shard may be writing the next one).
pub fn read_record(p: &Path) -> Vec<Line> {
    let text = std::fs::read_to_string(p).unwrap_or_default();
    let complete = &text[..text.rfind('\n').map_or(0, |i| i + 1)];
    record::parse(complete).unwrap()
}

/// Every burst 1..=BURSTS of `lines` (the line that counts) equals one process.
pub fn assert_matches_reference(lines: &[Line], logs: &str) {
    let reference = reference();
    let finals = record::final_lines(lines);
    assert_eq!(finals.len() as u64, BURSTS, "record has {} bursts, expected {BURSTS}\n{logs}", finals.len());
    for (t, l) in &finals {
        let (hash, fired, per, motor) = &reference[*t as usize - 1];
        assert_eq!(
            (l.hash, l.fired, &l.per_shard, l.motor),
            (*hash, *fired, per, *motor),
            "burst {t} (epoch {}) differs from one process\n{logs}",
            l.epoch
        );
    }
    // A brain that neither falls silent nor fires everything: every burst tells shards apart.
    let active: u64 = finals.values().map(|l| l.fired).sum();
    assert!(active > BURSTS * 100 && active < BURSTS * W.neurons as u64 / 10, "{active} spikes in {BURSTS} bursts");
}
