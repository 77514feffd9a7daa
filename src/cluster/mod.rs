//! One brain over several processes or hosts (`neuroburst shard`): each shard is a process with
//! its own engine over a range of a [`crate::partition::ShardPlan`] (the CPU's
//! [`crate::backend::cpu::CpuEngine`], or `cluster.gpus`' [`crate::backend::cuda::CudaShardEngine`]),
//! and a Zenoh peer session to every other shard. docs/distributed.md is the user's guide.
//!
//! # The protocol
//! - **Membership** is static ([`ClusterConfig`]): shard `k` listens on `endpoints[k]`; the plan is
//!   the same in every process (same genome, shard count and strategy). Each shard declares the
//!   liveliness token `member/<k>/<c>/<zid>` (`c`: its latest checkpoint's burst; `zid`: its Zenoh
//!   session) after its subscribers.
//! - **Start**: the io shard waits for every token, then publishes the directive *epoch 1, resume
//!   from `c` = the smallest checkpoint burst advertised* (0: the initial state). Every shard
//!   restores that state and starts.
//! - **A burst** (burst `t` of epoch `e`; the run loop's, [`crate::run::bursts`], the shard its
//!   [`crate::run::Stepper`]): the io shard takes burst `t`'s injection from its [`crate::run::Io`]
//!   and sends every member its share; every other shard waits for its share; each runs burst `t`
//!   on the whole brain's fired list of `t - 1`, publishes its own fired ids of `t`, and waits for
//!   every member's; the whole brain's fired list of `t` is their concatenation in shard order
//!   (= id order), which the io shard's `Io` decodes and hands over before the next burst is due.
//!   Where the bursts run back to back (nothing to wait for, W's input) the io shard takes burst
//!   `t + 1`'s injection ahead and sends it while the spikes of `t` travel. After an epoch's start
//!   (`c`), the state's own fired ids of `c` are exchanged first. Fired sets are bit-identical to
//!   one process (sums are exact integers).
//! - **Checkpoints**: every `checkpoint_interval` bursts, while no shard is missing, every shard
//!   saves its own state after that burst (keeping the last two).
//! - **Loss**: a member whose token goes (the process died, or its host is unreachable) or whose
//!   spikes of a burst do not come within `burst_timeout_ms` (it stalled) is lost. `stop`: every
//!   shard names it and exits (status 3); restart them all with `--resume` (the start picks the
//!   smallest latest checkpoint). `degraded`: the others go on without it, its spikes count as
//!   none, no checkpoints are written. The loss of the io shard always stops the others.
//! - **Resends**: Zenoh does not send a message again, and a put before a link is up reaches
//!   nobody: while a wait is overdue (spikes or input), a shard sends its last two bursts' spikes (the io shard also
//!   its last two inputs per shard) again every 100 ms. A token counts as gone after 250 ms.
//! - **Rejoin**: a restarted shard (`--resume`) declares its token again. The io shard answers
//!   with the directive *epoch `e + 1`, resume from `c'`, members + the newcomer*, where `c'` is
//!   the latest of its checkpoints not newer than the newcomer's latest; every member drops what
//!   it is doing, restores `c'` and runs on from there. Everything after `c'` is computed again,
//!   so the brain is again exactly the brain that never lost a shard. Messages carry their epoch;
//!   older epochs are ignored, newer ones kept until their directive arrives.
//! - **The io shard's input and output** (a [`crate::run::Io`], the run loop's, around the
//!   shard's burst where one process has its backend): W's input or none ([`io::WorkloadIo`]),
//!   a bag replayed lock-stepped to bag time with the motor topics recorded
//!   ([`crate::replay::BagIo`]), or the live node's topics over its transport
//!   ([`crate::node::topics::LiveTopics`]).
//!   The io shard announces where its input ends (a bag's last burst) in its directives.
//! - **Left behind**: a shard that stalled and wakes up to find its peers bursts ahead (or a
//!   directive without it) exits with status 4; restart it with `--resume` to rejoin.
//!
//! Limits: one io shard; in `degraded` mode, a shard that dies while sending one burst's spikes
//! may reach some peers and not others, so their states differ from that burst on (the rejoin's
//! rollback repairs it); at most 64 shards.

pub mod checkpoints;
pub mod config;
pub mod inbox;
pub mod io;
mod links;
pub mod netns;
mod options;
mod outbox;
pub mod probe;
pub mod record;
mod run;
pub mod wire;

pub use config::{ClusterConfig, OnShardLoss};
pub use options::{session_config, ClusterError, Outcome, Report, ShardOptions};
pub use run::run;
