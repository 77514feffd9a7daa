//! A piece's share of the learning (the learner is `backend/learn/`, shared with the CUDA
//! backend): its synapses' update fused with the propagation of the rows that fired.

use super::engine::{add_row, Acc, Piece, PieceInput};
use crate::backend::learn::{Learner, Scatter};

/// A piece's share of the learning after burst `t - 1` (after [`CpuEngine::learn`]): its synapses'
/// update, the rows that fired propagated as they are brought up to date, and the pairs just
/// grown onto its neurons.
pub(super) fn learn_piece(l: &Learner, t: u64, p: &mut Piece, table: &[i32]) {
    l.update(t - 1, &mut p.conn, &mut p.deferred, &mut Fused { input: &mut p.input, table });
    l.apply_growth(&mut p.conn, &mut p.deferred, &mut Fused { input: &mut p.input, table });
    p.fused = true;
}

/// The propagation of the rows that fired, fused with their update by the learner (see
/// [`Scatter`]): each row is added to the input while it is in cache.
struct Fused<'a> {
    input: &'a mut PieceInput,
    table: &'a [i32],
}

impl Scatter for Fused<'_> {
    fn row<C: Copy + Into<u32>>(&mut self, targets: &[u32], codes: &[C]) {
        match self.input {
            PieceInput::Narrow(input) => add_row(input, self.table, targets, codes),
            PieceInput::Wide(input) => add_row(input, self.table, targets, codes),
        }
    }

    fn changed(&mut self, target: u32, was: u32, now: u32) {
        let delta = self.table[now as usize].wrapping_sub(self.table[was as usize]);
        match self.input {
            PieceInput::Narrow(input) => input[target as usize] = input[target as usize].plus(delta),
            PieceInput::Wide(input) => input[target as usize] = input[target as usize].plus(delta),
        }
    }
}
