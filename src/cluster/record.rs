//! The io shard's record of the whole brain's firing, one text line per burst (for comparisons
//! with a run in one process, and for the eye):
//!
//! ```text
//! <epoch> <burst> <fired> <xxh3-64 of the fired ids as u32 LE, hex> <fired per shard, comma-separated> <motor fired>
//! ```
//! A rollback (a rejoin) runs bursts again in a later epoch: the line of the highest epoch is the
//! one that counts ([`final_lines`]).

use std::collections::BTreeMap;
use std::io::Write;

/// XXH3-64 of `ids` as little-endian u32s.
pub fn fired_hash(ids: &[u32]) -> u64 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    let mut buf = [0u8; 4096];
    for chunk in ids.chunks(buf.len() / 4) {
        for (i, id) in chunk.iter().enumerate() {
            buf[i * 4..i * 4 + 4].copy_from_slice(&id.to_le_bytes());
        }
        h.update(&buf[..chunk.len() * 4]);
    }
    h.digest()
}

/// One line of a record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    pub epoch: u32,
    pub burst: u64,
    pub fired: u64,
    pub hash: u64,
    pub per_shard: Vec<u64>,
    pub motor: u64,
}

impl Line {
    pub fn write(&self, w: &mut impl Write) -> std::io::Result<()> {
        write!(w, "{} {} {} {:016x} ", self.epoch, self.burst, self.fired, self.hash)?;
        for (i, c) in self.per_shard.iter().enumerate() {
            write!(w, "{}{c}", if i > 0 { "," } else { "" })?;
        }
        writeln!(w, " {}", self.motor)
    }

    pub fn parse(s: &str) -> Result<Line, String> {
        let f: Vec<&str> = s.split_whitespace().collect();
        let bad = |what: &str| format!("record line {s:?}: bad {what}");
        if f.len() != 6 {
            return Err(bad("field count"));
        }
        Ok(Line {
            epoch: f[0].parse().map_err(|_| bad("epoch"))?,
            burst: f[1].parse().map_err(|_| bad("burst"))?,
            fired: f[2].parse().map_err(|_| bad("fired"))?,
            hash: u64::from_str_radix(f[3], 16).map_err(|_| bad("hash"))?,
            per_shard: f[4].split(',').map(|c| c.parse().map_err(|_| bad("per-shard count"))).collect::<Result<_, _>>()?,
            motor: f[5].parse().map_err(|_| bad("motor"))?,
        })
    }
}

/// Every line of a record, in order.
pub fn parse(text: &str) -> Result<Vec<Line>, String> {
    text.lines().filter(|l| !l.trim().is_empty()).map(Line::parse).collect()
}

/// Per burst, the line that counts: the last one of the highest epoch.
pub fn final_lines(lines: &[Line]) -> BTreeMap<u64, Line> {
    let mut m: BTreeMap<u64, Line> = BTreeMap::new();
    for l in lines {
        if m.get(&l.burst).is_none_or(|old| l.epoch >= old.epoch) {
            m.insert(l.burst, l.clone());
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_round_trip_and_later_epochs_win() {
        let l = Line { epoch: 2, burst: 7, fired: 3, hash: fired_hash(&[1, 5, 9]), per_shard: vec![1, 0, 2], motor: 1 };
        let mut b = Vec::new();
        l.write(&mut b).unwrap();
        let text = String::from_utf8(b).unwrap();
        assert_eq!(Line::parse(text.trim()).unwrap(), l);
        let old = Line { epoch: 1, hash: 0, ..l.clone() };
        let m = final_lines(&[old.clone(), l.clone(), old]);
        assert_eq!(m[&7], l);
        assert!(Line::parse("1 2 3").unwrap_err().contains("field count"));
        assert_ne!(fired_hash(&[1, 5, 9]), fired_hash(&[1, 5, 10]));
        assert_eq!(fired_hash(&[]), xxhash_rust::xxh3::xxh3_64(&[]));
        let many: Vec<u32> = (0..5000).collect();
        let bytes: Vec<u8> = many.iter().flat_map(|i| i.to_le_bytes()).collect();
        assert_eq!(fired_hash(&many), xxhash_rust::xxh3::xxh3_64(&bytes));
    }
}
