//! One burst's sensory input, kept as columns.
//!
//! Encoders, the node's intake and the benchmark's workload fill an [`Injections`]; backends take
//! an [`InjectionSlice`] of it. The columns are what a backend needs: the GPU copies the id column
//! as it is (4 bytes per entry when every entry carries the same potential, as binary encoders
//! and the benchmark's workload do), and sharded backends split a sorted slice by binary search.
//! The flags noted while filling (sorted, strictly ascending, one potential for all) spare every
//! backend a pass over the input: at W(5M)'s 50k entries, reading 16-byte [`Injection`]s to learn
//! them took ~40 us of each burst on an H100 host.

use std::any::Any;

use aligned_vec::{AVec, ConstAlign};
use std::fmt;
use std::ops::Range;

use super::{Injection, Potential};

/// A hold a backend keeps on an [`Injections`]' id column (the GPU page-locks it, so a burst's
/// copy reads it in place). Opaque to the model: the column drops it before its memory moves
/// (growing past its capacity) or is freed.
pub type ColumnHold = Box<dyn Any + Send + Sync>;

/// Bytes of a page: the id column starts on one, so a backend can lock its pages without locking
/// (or overlapping) any other allocation.
pub const PAGE: usize = 4096;

/// One burst's sensory input: neuron ids and their potentials, as columns. Several entries of one
/// neuron add up; the order of entries does not matter to any backend.
pub struct Injections {
    /// Declared before `ids`, so it drops first.
    hold: Option<ColumnHold>,
    ids: AVec<u32, ConstAlign<PAGE>>,
    /// One potential per id once two differ; empty while every entry carries `first`.
    each: Vec<i64>,
    /// The potential of the first entry.
    first: i64,
    /// Each id is >= the one before.
    sorted: bool,
    /// Each id is > the one before (sorted, no neuron twice).
    ascending: bool,
}

impl Clone for Injections {
    /// The copy has no hold: its column lives elsewhere.
    fn clone(&self) -> Injections {
        Injections { hold: None, ids: self.ids.clone(), each: self.each.clone(), ..*self }
    }
}

impl PartialEq for Injections {
    /// The same entries with the same flags (holds aside).
    fn eq(&self, o: &Injections) -> bool {
        (&self.ids[..], &self.each, self.first, self.sorted, self.ascending) == (&o.ids[..], &o.each, o.first, o.sorted, o.ascending)
    }
}

impl Eq for Injections {}

impl fmt::Debug for Injections {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Injections")
            .field("ids", &&self.ids[..])
            .field("each", &self.each)
            .field("first", &self.first)
            .field("sorted", &self.sorted)
            .field("ascending", &self.ascending)
            .field("held", &self.hold.is_some())
            .finish()
    }
}

impl Default for Injections {
    fn default() -> Self {
        Injections::new()
    }
}

impl Injections {
    /// No injections.
    pub fn new() -> Injections {
        Injections { hold: None, ids: AVec::new(PAGE), each: Vec::new(), first: 0, sorted: true, ascending: true }
    }

    /// No injections, with room for `n`.
    pub fn with_capacity(n: usize) -> Injections {
        Injections { ids: AVec::with_capacity(PAGE, n), ..Injections::new() }
    }

    /// Empty it, keeping the memory.
    pub fn clear(&mut self) {
        self.ids.clear();
        self.each.clear();
        self.first = 0;
        self.sorted = true;
        self.ascending = true;
    }

    /// How many injections.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Give the id column room for `n` ids and let `hold` take a hold on that memory: it gets the
    /// column's address (page-aligned) and the bytes of the whole pages it owns from there (a
    /// multiple of [`PAGE`]: no other allocation lies on them), and returns its hold (None: no
    /// hold). The column keeps the hold until its memory moves (a push past the capacity), or it
    /// is dropped; a later call replaces it.
    pub fn hold_ids(&mut self, n: usize, hold: impl FnOnce(*const u8, usize) -> Option<ColumnHold>) {
        self.hold = None;
        let want = n.max(self.ids.len()).next_multiple_of(PAGE / 4);
        if self.ids.capacity() < want {
            self.ids.reserve_exact(want - self.ids.len());
        }
        let pages = self.ids.capacity() * 4 / PAGE * PAGE;
        self.hold = hold(self.ids.as_ptr() as *const u8, pages);
    }

    /// The hold on the id column, if any (see [`Injections::hold_ids`]).
    pub fn hold(&self) -> Option<&(dyn Any + Send + Sync)> {
        self.hold.as_deref()
    }

    /// Drop the hold before the id column grows past its capacity (and moves).
    #[inline]
    fn room(&mut self, more: usize) {
        if self.hold.is_some() && self.ids.capacity() - self.ids.len() < more {
            self.hold = None;
        }
    }

    /// Add `potential` to `neuron` in this burst.
    #[inline]
    pub fn push(&mut self, neuron: u32, potential: Potential) {
        self.room(1);
        match self.ids.last() {
            None => self.first = potential.0,
            Some(&last) => {
                self.sorted &= neuron >= last;
                self.ascending &= neuron > last;
            }
        }
        if !self.each.is_empty() {
            self.each.push(potential.0);
        } else if potential.0 != self.first {
            self.spread();
            self.each.push(potential.0);
        }
        self.ids.push(neuron);
    }

    /// Add `potential` to each of `ids`, in this order.
    pub fn extend_ids(&mut self, ids: &[u32], potential: Potential) {
        let Some((&head, rest)) = ids.split_first() else { return };
        self.push(head, potential);
        if !rest.is_empty() {
            let mut prev = head;
            let (mut sorted, mut ascending) = (true, true);
            for &n in rest {
                sorted &= n >= prev;
                ascending &= n > prev;
                prev = n;
            }
            self.sorted &= sorted;
            self.ascending &= ascending;
            if !self.each.is_empty() {
                self.each.resize(self.each.len() + rest.len(), potential.0);
            }
            self.room(rest.len());
            self.ids.extend_from_slice(rest);
        }
    }

    /// Append every entry of `other`.
    pub fn extend_from(&mut self, other: InjectionSlice<'_>) {
        match other.values {
            Values::Same(p) => self.extend_ids(other.ids, p),
            Values::Each(v) => {
                for (&n, &p) in other.ids.iter().zip(v) {
                    self.push(n, Potential(p));
                }
            }
        }
    }

    /// Order the entries by neuron (entries of one neuron keep their order).
    pub fn sort(&mut self) {
        if self.sorted {
            return;
        }
        if self.each.is_empty() {
            self.ids.sort_unstable();
        } else {
            let mut pairs: Vec<(u32, i64)> = self.ids.iter().copied().zip(self.each.iter().copied()).collect();
            pairs.sort_by_key(|p| p.0);
            for (k, (n, p)) in pairs.into_iter().enumerate() {
                self.ids[k] = n;
                self.each[k] = p;
            }
        }
        self.sorted = true;
        self.ascending = self.ids.windows(2).all(|w| w[0] < w[1]);
    }

    /// `input` ordered by neuron: itself where it is sorted already, else a sorted copy kept in
    /// `self` (its buffers reused from burst to burst).
    pub fn sorted_view<'a>(&'a mut self, input: InjectionSlice<'a>) -> InjectionSlice<'a> {
        if input.sorted() {
            return input;
        }
        self.clear();
        self.extend_from(input);
        self.sort();
        self.as_slice()
    }

    /// The injections as the backends take them (borrowed columns).
    pub fn as_slice(&self) -> InjectionSlice<'_> {
        let values = if self.each.is_empty() { Values::Same(Potential(self.first)) } else { Values::Each(&self.each) };
        InjectionSlice { ids: &self.ids, values, sorted: self.sorted, ascending: self.ascending, hold: self.hold() }
    }

    /// Each injection in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Injection> + '_ {
        self.as_slice().iter()
    }

    /// Every entry gets the first one's potential from now on: write them out one per id.
    #[cold]
    fn spread(&mut self) {
        self.each.reserve(self.ids.capacity());
        self.each.resize(self.ids.len(), self.first);
    }
}

impl Extend<Injection> for Injections {
    fn extend<I: IntoIterator<Item = Injection>>(&mut self, iter: I) {
        for i in iter {
            self.push(i.neuron, i.potential);
        }
    }
}

impl FromIterator<Injection> for Injections {
    fn from_iter<I: IntoIterator<Item = Injection>>(iter: I) -> Injections {
        let mut out = Injections::new();
        out.extend(iter);
        out
    }
}

impl From<&[Injection]> for Injections {
    fn from(v: &[Injection]) -> Injections {
        let mut out = Injections::with_capacity(v.len());
        out.extend(v.iter().copied());
        out
    }
}

impl<const N: usize> From<[Injection; N]> for Injections {
    fn from(v: [Injection; N]) -> Injections {
        v.into_iter().collect()
    }
}

impl From<Vec<Injection>> for Injections {
    fn from(v: Vec<Injection>) -> Injections {
        Injections::from(v.as_slice())
    }
}

/// The potentials of an [`InjectionSlice`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Values<'a> {
    /// Every entry carries this one.
    Same(Potential),
    /// One per id, in LSBs.
    Each(&'a [i64]),
}

/// A borrowed run of injections: a whole [`Injections`], or the part of a sorted one within an id
/// range.
#[derive(Clone, Copy)]
pub struct InjectionSlice<'a> {
    ids: &'a [u32],
    values: Values<'a>,
    sorted: bool,
    ascending: bool,
    /// The hold on the whole column the ids lie in (see [`Injections::hold_ids`]).
    hold: Option<&'a (dyn Any + Send + Sync)>,
}

impl fmt::Debug for InjectionSlice<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InjectionSlice")
            .field("ids", &self.ids)
            .field("values", &self.values)
            .field("sorted", &self.sorted)
            .field("ascending", &self.ascending)
            .field("held", &self.hold.is_some())
            .finish()
    }
}

impl<'a> InjectionSlice<'a> {
    /// No input.
    pub const EMPTY: InjectionSlice<'static> =
        InjectionSlice { ids: &[], values: Values::Same(Potential(0)), sorted: true, ascending: true, hold: None };

    /// The hold on the column the ids lie in, if any: a backend that took it (by
    /// [`Injections::hold_ids`]) knows that memory.
    pub fn hold(&self) -> Option<&'a (dyn Any + Send + Sync)> {
        self.hold
    }

    /// The injected neurons' ids, in order.
    pub fn ids(&self) -> &'a [u32] {
        self.ids
    }

    /// The injected potentials, in the same order.
    pub fn values(&self) -> Values<'a> {
        self.values
    }

    /// How many injections.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Ids never decrease.
    pub fn sorted(&self) -> bool {
        self.sorted
    }

    /// Ids strictly increase: sorted, and no neuron twice.
    pub fn ascending(&self) -> bool {
        self.ascending
    }

    /// One potential for every entry (None when they differ).
    pub fn uniform(&self) -> Option<Potential> {
        match self.values {
            Values::Same(p) => Some(p),
            Values::Each(_) => None,
        }
    }

    /// Entry `i`.
    pub fn get(&self, i: usize) -> Injection {
        let potential = match self.values {
            Values::Same(p) => p,
            Values::Each(v) => Potential(v[i]),
        };
        Injection { neuron: self.ids[i], potential }
    }

    /// Each injection in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Injection> + 'a {
        let s = *self;
        (0..s.ids.len()).map(move |i| s.get(i))
    }

    /// The smallest and the largest id (None when empty); no scan when sorted.
    pub fn id_bounds(&self) -> Option<(u32, u32)> {
        let (&first, &last) = (self.ids.first()?, self.ids.last()?);
        if self.sorted {
            return Some((first, last));
        }
        Some(self.ids.iter().fold((u32::MAX, 0), |(lo, hi), &n| (lo.min(n), hi.max(n))))
    }

    /// The entries whose ids lie in `range`, found by binary search.
    ///
    /// # Panics
    /// When the slice is not sorted (a programming error: sort it first).
    pub fn within(&self, range: Range<u32>) -> InjectionSlice<'a> {
        assert!(self.sorted, "InjectionSlice::within needs sorted ids");
        let lo = self.ids.partition_point(|&n| n < range.start);
        let hi = lo + self.ids[lo..].partition_point(|&n| n < range.end);
        self.sub(lo..hi)
    }

    /// Entries `r` (positions, not ids).
    pub fn sub(&self, r: Range<usize>) -> InjectionSlice<'a> {
        let values = match self.values {
            Values::Same(p) => Values::Same(p),
            Values::Each(v) => Values::Each(&v[r.clone()]),
        };
        let ids = &self.ids[r];
        let ascending = self.ascending || ids.windows(2).all(|w| w[0] < w[1]);
        let sorted = self.sorted || ascending || ids.is_sorted();
        InjectionSlice { ids, values, sorted, ascending, hold: self.hold }
    }

    /// The entries as [`Injection`]s.
    pub fn to_vec(&self) -> Vec<Injection> {
        self.iter().collect()
    }
}

impl<'a> From<&'a Injections> for InjectionSlice<'a> {
    fn from(v: &'a Injections) -> InjectionSlice<'a> {
        v.as_slice()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inj(neuron: u32, p: i64) -> Injection {
        Injection { neuron, potential: Potential(p) }
    }

    #[test]
    fn columns_note_order_and_uniform_values_as_they_fill() {
        let mut v = Injections::new();
        assert!(v.as_slice().sorted() && v.as_slice().ascending() && v.as_slice().is_empty());
        v.extend_ids(&[3, 5, 9], Potential(7));
        let s = v.as_slice();
        assert_eq!((s.uniform(), s.ascending(), s.id_bounds()), (Some(Potential(7)), true, Some((3, 9))));
        v.push(9, Potential(7));
        assert!(v.as_slice().sorted() && !v.as_slice().ascending());
        v.push(4, Potential(-1));
        let s = v.as_slice();
        assert!(!s.sorted() && s.uniform().is_none());
        assert_eq!(s.to_vec(), vec![inj(3, 7), inj(5, 7), inj(9, 7), inj(9, 7), inj(4, -1)]);
        assert_eq!(s.id_bounds(), Some((3, 9)));
        v.extend_ids(&[1, 2], Potential(7));
        assert_eq!(v.as_slice().get(6), inj(2, 7));
        v.sort();
        let s = v.as_slice();
        assert!(s.sorted() && !s.ascending());
        assert_eq!(s.ids(), &[1, 2, 3, 4, 5, 9, 9]);
        assert_eq!(s.get(3), inj(4, -1));
        v.clear();
        assert_eq!(v, Injections::new());
    }

    #[test]
    fn a_hold_on_the_id_column_lasts_until_the_column_moves() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::sync::Arc;
        struct Hold(usize, usize, Arc<AtomicUsize>);
        impl Drop for Hold {
            fn drop(&mut self) {
                self.2.fetch_add(1, Ordering::SeqCst);
            }
        }
        let dropped = Arc::new(AtomicUsize::new(0));
        let mut v = Injections::new();
        let d = dropped.clone();
        v.hold_ids(8, |p, bytes| Some(Box::new(Hold(p as usize, bytes, d))));
        let h = v.hold().and_then(|h| h.downcast_ref::<Hold>()).expect("held");
        let (at, bytes) = (h.0, h.1);
        // whole pages of its own: page-aligned, a multiple of the page
        assert!(bytes == PAGE && at % PAGE == 0 && at == v.as_slice().ids().as_ptr() as usize);
        assert!(v.as_slice().hold().is_some() && v.as_slice().sub(0..0).hold().is_some());
        // filling within the capacity keeps it; the copy and equality ignore it
        v.extend_ids(&vec![1; bytes / 4 - 1], Potential(1));
        v.push(2, Potential(3));
        assert!(v.hold().is_some() && v.clone().hold().is_none() && v.clone() == v);
        assert_eq!(dropped.load(Ordering::SeqCst), 0);
        // one more id moves the column: the hold goes first
        v.push(3, Potential(3));
        assert!(v.hold().is_none());
        assert_eq!(dropped.load(Ordering::SeqCst), 1);
        // clearing keeps the memory, and a new hold replaces the old one
        let d = dropped.clone();
        v.hold_ids(4, |_, _| Some(Box::new(Hold(0, 0, d))));
        let d = dropped.clone();
        v.hold_ids(4, |_, _| Some(Box::new(Hold(0, 0, d))));
        assert_eq!(dropped.load(Ordering::SeqCst), 2);
        v.clear();
        assert!(v.hold().is_some());
        drop(v);
        assert_eq!(dropped.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn within_splits_a_sorted_slice_by_id_range() {
        let v: Injections = [inj(1, 1), inj(4, 2), inj(4, 3), inj(8, 4), inj(12, 5)].into();
        let s = v.as_slice();
        assert_eq!(s.within(2..9).to_vec(), vec![inj(4, 2), inj(4, 3), inj(8, 4)]);
        assert!(s.within(5..9).ascending());
        assert!(s.within(20..30).is_empty());
        assert_eq!(InjectionSlice::EMPTY.id_bounds(), None);
        let u = Injections::from(vec![inj(2, 9), inj(6, 9)]);
        assert_eq!(u.as_slice().within(0..3).uniform(), Some(Potential(9)));
    }

    #[test]
    fn extend_from_keeps_values_and_flags() {
        let a: Injections = [inj(1, 1), inj(2, 2)].into();
        let mut b = Injections::new();
        b.extend_ids(&[0], Potential(1));
        b.extend_from(a.as_slice());
        assert_eq!(b.as_slice().to_vec(), vec![inj(0, 1), inj(1, 1), inj(2, 2)]);
        assert!(b.as_slice().ascending());
        b.extend_from(a.as_slice());
        assert!(!b.as_slice().sorted());
    }
}
