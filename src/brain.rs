//! A brain ready to run: the compiled layout and the connectome of a genome.

use crate::connectome::{self, BuildOptions, Connectome};
use crate::genome::Genome;
use crate::model::Layout;

pub struct Brain {
    pub name: String,
    pub burst_rate_hz: f64,
    pub layout: Layout,
    pub connectome: Connectome,
}

impl Brain {
    /// Build a validated genome's connectome split into `parts` target ranges of equal size.
    pub fn build(genome: &Genome, parts: usize, progress: bool) -> Brain {
        let layout = Layout::from_genome(genome);
        let ranges = connectome::even_ranges(layout.neurons, parts);
        let connectome = connectome::build(genome, &layout, &BuildOptions { parts: ranges, progress });
        Brain { name: genome.name.clone(), burst_rate_hz: genome.burst_rate_hz, layout, connectome }
    }
}
