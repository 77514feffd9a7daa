//! Outputs of a burst: every decoder's message (when due), and the per-burst activity message.

use crate::backend::BurstOutput;
use crate::decode::{Decoder, DecoderConfig, MotorMessage};
use crate::model::Layout;
use crate::ros::builtin::Time;
use crate::ros::neuroburst_msgs::BurstActivity;

pub struct Outputs {
    pub decoders: Vec<Decoder>,
    per_area: Vec<Vec<[u32; 4]>>,
    area_ids: Vec<String>,
}

/// What one burst produced.
#[derive(Debug)]
pub struct BurstProducts {
    pub burst: u64,
    pub fired_total: u64,
    /// (decoder index, message) of the decoders that published.
    pub motor: Vec<(usize, MotorMessage)>,
    /// Fired neurons per area (of those read back).
    pub fired_per_area: Vec<u32>,
}

impl Outputs {
    pub fn new(configs: &[DecoderConfig], layout: &Layout) -> Result<Outputs, String> {
        let decoders = configs.iter().map(|c| Decoder::new(c, layout)).collect::<Result<Vec<_>, _>>()?;
        Ok(Outputs {
            decoders,
            per_area: vec![Vec::new(); layout.meta.len()],
            area_ids: layout.meta.iter().map(|m| m.id.clone()).collect(),
        })
    }

    /// Decode one burst at `time_ns` (bag time in a replay, ROS time in the live node); `blind`:
    /// every sensor topic is stale, the decoders send their stop commands.
    pub fn burst(&mut self, out: &BurstOutput<'_>, layout: &Layout, time_ns: u64, blind: bool) -> BurstProducts {
        self.decode(out.burst, out.fired, out.fired_total, layout, time_ns, blind)
    }

    /// Decode burst `burst` from its fired neurons (those read back, ascending) and the count of
    /// all that fired, at `time_ns`.
    pub fn decode(&mut self, burst: u64, fired: &[u32], fired_total: u64, layout: &Layout, time_ns: u64, blind: bool) -> BurstProducts {
        for v in &mut self.per_area {
            v.clear();
        }
        for &n in fired {
            let c = layout.coord(n);
            self.per_area[c.area].push(c.xyzk);
        }
        let motor = self
            .decoders
            .iter_mut()
            .enumerate()
            .filter_map(|(i, d)| {
                let area = d.area;
                d.burst(&self.per_area[area], time_ns, blind).map(|m| (i, m))
            })
            .collect();
        let fired_per_area = self.per_area.iter().map(|v| v.len() as u32).collect();
        BurstProducts { burst, fired_total, motor, fired_per_area }
    }

    /// Every decoder's stop command at `time_ns` (the node is stopping).
    pub fn stop_messages(&self, time_ns: u64) -> Vec<(usize, MotorMessage)> {
        self.decoders.iter().enumerate().filter_map(|(i, d)| d.stop_message(time_ns).map(|m| (i, m))).collect()
    }

    /// The activity message of a burst, stamped `time_ns`.
    pub fn activity(&self, p: &BurstProducts, time_ns: u64) -> BurstActivity {
        BurstActivity {
            burst: p.burst,
            stamp: Time::from_nanos(time_ns),
            fired_total: p.fired_total,
            area_ids: self.area_ids.clone(),
            fired: p.fired_per_area.clone(),
        }
    }
}
