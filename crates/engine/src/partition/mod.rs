//! The partition of a brain into shards: which contiguous range of neuron ids each shard (a GPU,
//! a CPU shard, a host) owns. A shard keeps its neurons' state and every synapse *onto* them, and
//! reads the whole brain's fired list of the last burst (the spike exchange); so a plan is a list
//! of target ranges, ascending and covering every neuron. Pure: no backend, no device, no transport.
//!
//! - `round_robin`: blocks of (nearly) equal size, cutting through areas;
//! - `by_cortical_area`: whole areas per shard, in id order, balancing neurons and synapses (the
//!   contiguous partition that minimises the largest shard's load, by dynamic programming).

use std::ops::Range;

use serde::{Deserialize, Serialize};

use crate::model::Layout;

/// How neurons are spread over shards.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "clap", value(rename_all = "snake_case"))]
pub enum Strategy {
    /// Contiguous id blocks of equal size.
    #[default]
    RoundRobin,
    /// Whole cortical areas per shard, balancing neurons and synapses.
    ByCorticalArea,
}

impl std::fmt::Display for Strategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Strategy::RoundRobin => "round_robin",
            Strategy::ByCorticalArea => "by_cortical_area",
        })
    }
}

/// How many shards: a number, or `auto` (the backend decides, see [`auto_count`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ShardCount {
    #[default]
    /// The backend decides.
    Auto,
    /// This many.
    Count(usize),
}

impl Serialize for ShardCount {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ShardCount::Auto => s.serialize_str("auto"),
            ShardCount::Count(n) => s.serialize_u64(*n as u64),
        }
    }
}

impl<'de> Deserialize<'de> for ShardCount {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            N(u64),
            S(String),
        }
        match Raw::deserialize(d)? {
            Raw::N(0) => Err(serde::de::Error::custom("shards must be at least 1 (or auto)")),
            Raw::N(n) => Ok(ShardCount::Count(n as usize)),
            Raw::S(s) => s.parse().map_err(serde::de::Error::custom),
        }
    }
}

impl std::str::FromStr for ShardCount {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "auto" => Ok(ShardCount::Auto),
            t => match t.parse::<usize>() {
                Ok(0) | Err(_) => Err(format!("shards: expected a count >= 1 or `auto`, got `{s}`")),
                Ok(n) => Ok(ShardCount::Count(n)),
            },
        }
    }
}

impl std::fmt::Display for ShardCount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ShardCount::Auto => f.write_str("auto"),
            ShardCount::Count(n) => write!(f, "{n}"),
        }
    }
}

/// A plan: shard `i` owns `ranges[i]`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ShardPlan {
    /// How the neurons were spread.
    pub strategy: Strategy,
    /// The neurons of each shard.
    pub ranges: Vec<Range<u32>>,
    /// Synapses onto each shard's neurons (what it stores), where known.
    pub synapses: Vec<u64>,
    /// Areas (ids) each shard holds, wholly or in part.
    pub areas: Vec<Vec<String>>,
}

/// Why a plan cannot be made.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PlanError {
    #[error("by_cortical_area puts whole areas on shards, but the brain has {areas} area(s) with neurons for {shards} shards; use round_robin or at most {areas} shards")]
    /// `by_cortical_area` with fewer areas than shards.
    TooFewAreas {
        /// Areas with neurons.
        areas: usize,
        /// Shards asked for.
        shards: usize,
    },
    #[error("{shards} shards for a brain of {neurons} neurons: every shard needs at least one neuron")]
    /// More shards than neurons.
    TooManyShards {
        /// Shards asked for.
        shards: usize,
        /// The brain's neurons.
        neurons: u32,
    },
}

impl ShardPlan {
    /// Plan `shards` shards of the brain `layout`; `incoming[a]` = synapses onto area `a`'s neurons
    /// (from a built connectome's mapping statistics, see [`incoming_per_area`]).
    pub fn new(layout: &Layout, incoming: &[u64], shards: usize, strategy: Strategy) -> Result<ShardPlan, PlanError> {
        let shards = shards.max(1);
        if shards as u64 > layout.neurons as u64 {
            return Err(PlanError::TooManyShards { shards, neurons: layout.neurons });
        }
        let ranges = match strategy {
            Strategy::RoundRobin => crate::connectome::even_ranges(layout.neurons, shards),
            Strategy::ByCorticalArea => by_cortical_area(layout, incoming, shards)?,
        };
        let per_neuron = |a: usize| incoming.get(a).copied().unwrap_or(0) as f64 / layout.params[a].count.max(1) as f64;
        let mut synapses = Vec::new();
        let mut areas = Vec::new();
        for r in &ranges {
            let mut syn = 0.0;
            let mut names = Vec::new();
            for (a, p) in layout.params.iter().enumerate() {
                let (lo, hi) = (p.first.max(r.start), (p.first + p.count).min(r.end));
                if lo < hi {
                    syn += per_neuron(a) * (hi - lo) as f64;
                    names.push(layout.meta[a].id.clone());
                }
            }
            synapses.push(syn.round() as u64);
            areas.push(names);
        }
        Ok(ShardPlan { strategy, ranges, synapses, areas })
    }

    /// How many shards.
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// The shard that owns neuron `n`.
    pub fn shard_of(&self, n: u32) -> usize {
        self.ranges.partition_point(|r| r.end <= n)
    }

    /// Largest shard load over the mean (1.0 = perfect), by neurons and by synapses.
    pub fn imbalance(&self) -> (f64, f64) {
        let ratio = |v: Vec<f64>| {
            let mean = v.iter().sum::<f64>() / v.len().max(1) as f64;
            if mean > 0.0 {
                v.iter().cloned().fold(0.0, f64::max) / mean
            } else {
                1.0
            }
        };
        (ratio(self.ranges.iter().map(|r| r.len() as f64).collect()), ratio(self.synapses.iter().map(|&s| s as f64).collect()))
    }
}

/// Synapses onto each area's neurons, from a connectome's mapping statistics.
pub fn incoming_per_area(layout: &Layout, mappings: &[crate::connectome::MappingStats]) -> Vec<u64> {
    let mut v = vec![0u64; layout.params.len()];
    for m in mappings {
        if let Some(a) = layout.area_index(&m.destination) {
            v[a] += m.synapses;
        }
    }
    v
}

/// Contiguous runs of whole areas (areas without neurons ride along), minimising the largest
/// shard's load `neurons / N + synapses / S`.
fn by_cortical_area(layout: &Layout, incoming: &[u64], shards: usize) -> Result<Vec<Range<u32>>, PlanError> {
    let areas: Vec<usize> = (0..layout.params.len()).filter(|&a| layout.params[a].count > 0).collect();
    if areas.len() < shards {
        return Err(PlanError::TooFewAreas { areas: areas.len(), shards });
    }
    let n_total = layout.neurons.max(1) as f64;
    let s_total = incoming.iter().sum::<u64>().max(1) as f64;
    let has_syn = incoming.iter().any(|&s| s > 0);
    let load: Vec<f64> = areas
        .iter()
        .map(|&a| {
            let n = layout.params[a].count as f64 / n_total;
            if has_syn {
                n + incoming.get(a).copied().unwrap_or(0) as f64 / s_total
            } else {
                n
            }
        })
        .collect();
    let m = areas.len();
    let mut prefix = vec![0.0; m + 1];
    for i in 0..m {
        prefix[i + 1] = prefix[i] + load[i];
    }
    // best[k][i]: the smallest possible largest load of the first i areas in k shards
    let inf = f64::INFINITY;
    let mut best = vec![vec![inf; m + 1]; shards + 1];
    let mut cut = vec![vec![0usize; m + 1]; shards + 1];
    best[0][0] = 0.0;
    for k in 1..=shards {
        for i in k..=m {
            for j in (k - 1)..i {
                let c = best[k - 1][j].max(prefix[i] - prefix[j]);
                if c < best[k][i] {
                    best[k][i] = c;
                    cut[k][i] = j;
                }
            }
        }
    }
    let mut bounds = vec![m];
    let mut i = m;
    for k in (1..=shards).rev() {
        i = cut[k][i];
        bounds.push(i);
    }
    bounds.reverse();
    let start_of = |idx: usize| if idx == 0 { 0 } else { layout.params[areas[idx]].first };
    Ok((0..shards)
        .map(|k| {
            let lo = start_of(bounds[k]);
            let hi = if bounds[k + 1] == m { layout.neurons } else { layout.params[areas[bounds[k + 1]]].first };
            lo..hi
        })
        .collect())
}

/// `auto` shard count for `available` GPUs: as many as keep at least `min_neurons` neurons each
/// (below that, the exchange of fired ids costs more than the smaller share saves), at least 1.
pub fn auto_count(neurons: u64, available: usize, min_neurons: u64) -> (usize, String) {
    let fit = (neurons / min_neurons.max(1)).max(1) as usize;
    let k = fit.min(available.max(1));
    let why = if k < available {
        format!(
            "auto: {k} of {available} GPUs: {neurons} neurons, at least shard_min_neurons = {min_neurons} per GPU (below that, one GPU's paced latency beats several: docs/sharding.md)"
        )
    } else {
        format!("auto: all {available} GPU(s) for {neurons} neurons (shard_min_neurons = {min_neurons})")
    };
    (k, why)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::genome::Genome;

    fn layout(sizes: &[u32]) -> Layout {
        let mut y = String::from("name: t\nseed: 1\nareas:\n");
        for (i, s) in sizes.iter().enumerate() {
            y += &format!("  - {{ id: a{i}, kind: interneuron, dims: [{s}, 1, 1] }}\n");
        }
        let g = Genome::from_yaml_str(&y).unwrap();
        Layout::from_genome(&g)
    }

    fn covers(plan: &ShardPlan, n: u32) {
        assert_eq!(plan.ranges.first().unwrap().start, 0);
        assert_eq!(plan.ranges.last().unwrap().end, n);
        for w in plan.ranges.windows(2) {
            assert_eq!(w[0].end, w[1].start);
        }
        assert!(plan.ranges.iter().all(|r| !r.is_empty()));
    }

    #[test]
    fn round_robin_blocks_are_equal() {
        let l = layout(&[10, 7, 13]);
        let p = ShardPlan::new(&l, &[0, 0, 0], 3, Strategy::RoundRobin).unwrap();
        covers(&p, 30);
        assert_eq!(p.ranges, vec![0..10, 10..20, 20..30]);
        assert_eq!(p.shard_of(0), 0);
        assert_eq!(p.shard_of(19), 1);
        assert_eq!(p.shard_of(29), 2);
    }

    #[test]
    fn by_area_keeps_areas_whole_and_balances() {
        let l = layout(&[10, 10, 10, 10, 40]);
        let p = ShardPlan::new(&l, &[100, 100, 100, 100, 400], 2, Strategy::ByCorticalArea).unwrap();
        covers(&p, 80);
        assert_eq!(p.ranges, vec![0..40, 40..80]);
        assert_eq!(p.areas, vec![vec!["a0", "a1", "a2", "a3"], vec!["a4"]]);
        assert_eq!(p.synapses, vec![400, 400]);
        // synapses count: a heavy small area gets a shard of its own
        let p = ShardPlan::new(&l, &[5000, 0, 0, 0, 0], 2, Strategy::ByCorticalArea).unwrap();
        assert_eq!(p.ranges, vec![0..10, 10..80]);
    }

    #[test]
    fn by_area_refuses_too_few_areas() {
        let l = layout(&[100]);
        let e = ShardPlan::new(&l, &[0], 2, Strategy::ByCorticalArea).unwrap_err();
        assert_eq!(e, PlanError::TooFewAreas { areas: 1, shards: 2 });
        assert!(e.to_string().contains("round_robin"));
        assert!(matches!(ShardPlan::new(&layout(&[2]), &[0], 3, Strategy::RoundRobin), Err(PlanError::TooManyShards { .. })));
    }

    #[test]
    fn shard_count_parses() {
        assert_eq!("auto".parse::<ShardCount>().unwrap(), ShardCount::Auto);
        assert_eq!("4".parse::<ShardCount>().unwrap(), ShardCount::Count(4));
        assert!("0".parse::<ShardCount>().is_err());
        let c: ShardCount = serde_yaml::from_str("3").unwrap();
        assert_eq!(c, ShardCount::Count(3));
        let c: ShardCount = serde_yaml::from_str("auto").unwrap();
        assert_eq!(c, ShardCount::Auto);
        assert!(serde_yaml::from_str::<ShardCount>("many").is_err());
    }

    #[test]
    fn auto_count_keeps_small_brains_on_one_gpu() {
        assert_eq!(auto_count(100_000, 4, 2_000_000).0, 1);
        assert_eq!(auto_count(5_000_000, 4, 2_000_000).0, 2);
        assert_eq!(auto_count(20_000_000, 4, 2_000_000).0, 4);
        assert!(auto_count(100_000, 4, 2_000_000).1.contains("1 of 4"));
    }
}
