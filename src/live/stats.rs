//! `neuroburst/msg/BurstStats` (msg/BurstStats.msg): what the node did since the last one.

use super::cdr::Writer;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct BurstStats {
    pub burst: u64,
    pub bursts: u32,
    pub burst_duration_us: f32,
    pub burst_duration_max_us: f32,
    pub area_ids: Vec<String>,
    pub fired: Vec<u32>,
    pub missed_deadlines: u64,
    pub dropped_messages: u64,
    pub malformed_messages: u64,
}

impl BurstStats {
    /// CDR, header included, field by field as in msg/BurstStats.msg.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u64(self.burst);
        w.u32(self.bursts);
        w.f32(self.burst_duration_us);
        w.f32(self.burst_duration_max_us);
        w.u32(self.area_ids.len() as u32);
        self.area_ids.iter().for_each(|s| w.string(s));
        w.u32(self.fired.len() as u32);
        self.fired.iter().for_each(|&f| w.u32(f));
        w.u64(self.missed_deadlines);
        w.u64(self.dropped_messages);
        w.u64(self.malformed_messages);
        w.finish()
    }
}
