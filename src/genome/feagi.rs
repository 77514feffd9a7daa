//! FEAGI genome import (placeholder: being written).
use super::{Genome, GenomeError};

pub struct Imported {
    pub genome: Genome,
    pub warnings: Vec<String>,
}

pub fn import_str(_text: &str) -> Result<Imported, GenomeError> {
    Err(GenomeError::invalid("genome", "format", "FEAGI import is not written yet"))
}
