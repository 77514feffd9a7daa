//! A motor column's activation in 0..1 from the neurons that fired in it.

use serde::{Deserialize, Serialize};

/// Where a column's magnitude comes from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Magnitude {
    /// FEAGI's convention: the highest fired z, `(z + 1) / dims.z`.
    #[default]
    Z,
    /// The fraction of the column's neurons (all y, z, k) that fired.
    Count,
}

/// Activation of columns `0..columns` (x), each in 0..1.
pub fn column_activation(fired: &[[u32; 4]], dims: [u32; 3], npv: u32, magnitude: Magnitude, columns: usize) -> Vec<f64> {
    let mut act = vec![0.0f64; columns];
    let per_column = (dims[1] as u64 * dims[2] as u64 * npv as u64).max(1) as f64;
    for &[x, _, z, _] in fired {
        let Some(a) = act.get_mut(x as usize) else { continue };
        match magnitude {
            Magnitude::Z => *a = a.max((z + 1) as f64 / dims[2].max(1) as f64),
            Magnitude::Count => *a += 1.0 / per_column,
        }
    }
    act
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn z_and_count() {
        let fired = [[0, 0, 1, 0], [0, 0, 3, 0], [1, 0, 0, 0]];
        assert_eq!(column_activation(&fired, [2, 1, 4], 1, Magnitude::Z, 2), vec![1.0, 0.25]);
        assert_eq!(column_activation(&fired, [2, 1, 4], 1, Magnitude::Count, 2), vec![0.5, 0.25]);
        assert_eq!(column_activation(&fired, [2, 1, 4], 1, Magnitude::Z, 1), vec![1.0]);
    }
}
