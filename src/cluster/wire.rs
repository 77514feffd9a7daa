//! What the shards send each other, on which Zenoh keys. All integers little endian; neuron ids
//! as LEB128 varints of their gaps (ids ascending), so a 1% firing rate costs about a byte per id.
//!
//! ```text
//! neuroburst/<brain>/spikes/<burst>/<shard>   'S' 1 | shard u16 | epoch u32 | burst u64 | count u32 | gap varints
//! neuroburst/<brain>/input/<burst>/<shard>    'I' 1 | shard u16 | epoch u32 | burst u64 | count u32 | (gap varint, zigzag potential varint) x count
//! neuroburst/<brain>/control                  'D' 2 | from u16  | epoch u32 | resume burst u64 | members u64 | last burst u64
//! neuroburst/<brain>/member/<shard>/<burst>/<zid>  liveliness token: the shard is up, holding checkpoints up to <burst>
//!                                                   (<zid>: its Zenoh session, so a restarted shard's token is a new key)
//! ```
//! `spikes`: the sender's own fired neurons of burst `burst`; `input`: the io shard's injection
//! of burst `burst` for shard `shard`; `control`: a directive of the io shard (every member of
//! `members` restores the state of burst `resume` and runs epoch `epoch` from there, up to burst
//! `last`, 0: until stopped).
//! Decoding never panics: every error names the key and what is wrong.

use std::ops::Range;

use crate::model::{Injection, Potential};

pub const VERSION: u8 = 2;
const SPIKES: u8 = b'S';
const INPUT: u8 = b'I';
const DIRECTIVE: u8 = b'D';
/// kind, version, shard, epoch, burst, count
const HEADER: usize = 1 + 1 + 2 + 4 + 8 + 4;

/// The keys of one brain.
#[derive(Clone, Debug)]
pub struct Keys {
    prefix: String,
}

/// What a data key names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataKind {
    Spikes,
    Input,
}

impl Keys {
    pub fn new(brain: &str) -> Keys {
        Keys { prefix: format!("neuroburst/{brain}") }
    }

    /// `key` := the key of `topic` for `burst` and `shard`, reusing its buffer.
    pub fn data(&self, topic: DataKind, burst: u64, shard: usize, key: &mut String) {
        use std::fmt::Write;
        key.clear();
        let t = match topic {
            DataKind::Spikes => "spikes",
            DataKind::Input => "input",
        };
        let _ = write!(key, "{}/{t}/{burst}/{shard}", self.prefix);
    }

    /// Every shard's spikes.
    pub fn all_spikes(&self) -> String {
        format!("{}/spikes/*/*", self.prefix)
    }

    /// The input of shard `shard`, every burst.
    pub fn inputs_of(&self, shard: usize) -> String {
        format!("{}/input/*/{shard}", self.prefix)
    }

    pub fn control(&self) -> String {
        format!("{}/control", self.prefix)
    }

    /// The member token of `shard` holding checkpoints up to `checkpoint`, declared by the Zenoh
    /// session `session` (a restarted shard declares a new key even with the same checkpoint,
    /// so the old token's late removal is not taken for the new one's).
    pub fn member(&self, shard: usize, checkpoint: u64, session: &str) -> String {
        format!("{}/member/{shard}/{checkpoint}/{session}", self.prefix)
    }

    pub fn all_members(&self) -> String {
        format!("{}/member/*/*/*", self.prefix)
    }

    /// `(burst, shard)` of a data key of this brain.
    pub fn parse_data(&self, key: &str) -> Result<(DataKind, u64, usize), WireError> {
        let bad = || WireError::new(key, "not a neuroburst/<brain>/<spikes|input>/<burst>/<shard> key of this brain");
        let rest = key.strip_prefix(&self.prefix).and_then(|r| r.strip_prefix('/')).ok_or_else(bad)?;
        let mut it = rest.split('/');
        let topic = match it.next() {
            Some("spikes") => DataKind::Spikes,
            Some("input") => DataKind::Input,
            _ => return Err(bad()),
        };
        let burst = it.next().and_then(|s| s.parse().ok()).ok_or_else(bad)?;
        let shard = it.next().and_then(|s| s.parse().ok()).ok_or_else(bad)?;
        if it.next().is_some() {
            return Err(bad());
        }
        Ok((topic, burst, shard))
    }

    /// `(shard, checkpoint burst)` of a member token of this brain.
    pub fn parse_member(&self, key: &str) -> Result<(usize, u64), WireError> {
        let bad = || WireError::new(key, "not a neuroburst/<brain>/member/<shard>/<burst>/<session> token of this brain");
        let rest = key.strip_prefix(&self.prefix).and_then(|r| r.strip_prefix("/member/")).ok_or_else(bad)?;
        let mut it = rest.split('/');
        let (Some(s), Some(b), Some(z), None) = (it.next(), it.next(), it.next(), it.next()) else { return Err(bad()) };
        if z.is_empty() {
            return Err(bad());
        }
        Ok((s.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?))
    }
}

/// A message that cannot be decoded; names the key.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {message}")]
pub struct WireError {
    pub key: String,
    pub message: String,
}

impl WireError {
    fn new(key: &str, message: impl Into<String>) -> WireError {
        WireError { key: key.to_string(), message: message.into() }
    }
}

/// The fixed part of a spikes or input message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub shard: usize,
    pub epoch: u32,
    pub burst: u64,
    pub count: u32,
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn get_varint(b: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*at)?;
        *at += 1;
        v |= ((byte & 0x7f) as u64) << shift;
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

fn header(out: &mut Vec<u8>, kind: u8, shard: usize, epoch: u32, burst: u64, count: usize) {
    out.clear();
    out.push(kind);
    out.push(VERSION);
    out.extend_from_slice(&(shard as u16).to_le_bytes());
    out.extend_from_slice(&epoch.to_le_bytes());
    out.extend_from_slice(&burst.to_le_bytes());
    out.extend_from_slice(&(count as u32).to_le_bytes());
}

/// `out` := the spikes message of `shard`: `fired` ascending.
pub fn encode_spikes(out: &mut Vec<u8>, shard: usize, epoch: u32, burst: u64, fired: &[u32]) {
    header(out, SPIKES, shard, epoch, burst, fired.len());
    let mut last = 0u32;
    for &n in fired {
        put_varint(out, (n - last) as u64);
        last = n;
    }
}

/// `out` := the input message for `shard`: `injection` sorted by neuron.
pub fn encode_input(out: &mut Vec<u8>, shard: usize, epoch: u32, burst: u64, injection: impl ExactSizeIterator<Item = Injection>) {
    header(out, INPUT, shard, epoch, burst, injection.len());
    let mut last = 0u32;
    for i in injection {
        put_varint(out, (i.neuron - last) as u64);
        put_varint(out, ((i.potential.0 << 1) ^ (i.potential.0 >> 63)) as u64);
        last = i.neuron;
    }
}

/// The header of a spikes or input message (checked against the key's burst and shard).
pub fn decode_header(key: &str, b: &[u8], topic: DataKind, burst: u64, shard: usize) -> Result<Header, WireError> {
    let kind = match topic {
        DataKind::Spikes => SPIKES,
        DataKind::Input => INPUT,
    };
    if b.len() < HEADER {
        return Err(WireError::new(key, format!("{} bytes, shorter than the {HEADER}-byte header", b.len())));
    }
    if b[0] != kind {
        return Err(WireError::new(key, format!("message kind {:?}, expected {:?}", b[0] as char, kind as char)));
    }
    if b[1] != VERSION {
        return Err(WireError::new(key, format!("wire version {}, this neuroburst speaks {VERSION}", b[1])));
    }
    let h = Header {
        shard: u16::from_le_bytes([b[2], b[3]]) as usize,
        epoch: u32::from_le_bytes(b[4..8].try_into().unwrap()),
        burst: u64::from_le_bytes(b[8..16].try_into().unwrap()),
        count: u32::from_le_bytes(b[16..20].try_into().unwrap()),
    };
    if h.burst != burst || h.shard != shard {
        return Err(WireError::new(key, format!("header says burst {} shard {}, the key burst {burst} shard {shard}", h.burst, h.shard)));
    }
    Ok(h)
}

/// Append the ids of a spikes message to `out`; they must be ascending and inside `range` (the
/// sender's neurons). On error `out` is left as it was.
pub fn decode_spikes(key: &str, b: &[u8], h: &Header, range: &Range<u32>, out: &mut Vec<u32>) -> Result<(), WireError> {
    let start = out.len();
    let mut at = HEADER;
    let mut last: Option<u32> = None;
    let fail = |out: &mut Vec<u32>, m: String| {
        out.truncate(start);
        Err(WireError::new(key, m))
    };
    for i in 0..h.count {
        let Some(gap) = get_varint(b, &mut at) else {
            return fail(out, format!("ends inside id {i} of {}", h.count));
        };
        let n = last.map_or(0, |l| l as u64).saturating_add(gap);
        if (i > 0 && gap == 0) || n < range.start as u64 || n >= range.end as u64 {
            return fail(out, format!("neuron {n} (id {i}) is not ascending inside the sender's range {range:?}"));
        }
        out.push(n as u32);
        last = Some(n as u32);
    }
    if at != b.len() {
        return fail(out, format!("{} trailing bytes after {} ids", b.len() - at, h.count));
    }
    Ok(())
}

/// Append the injection of an input message to `out`; neurons ascending (repeats allowed) inside
/// `range` (the receiver's neurons).
pub fn decode_input(key: &str, b: &[u8], h: &Header, range: &Range<u32>, out: &mut Vec<Injection>) -> Result<(), WireError> {
    let start = out.len();
    let mut at = HEADER;
    let mut last = 0u64;
    let fail = |out: &mut Vec<Injection>, m: String| {
        out.truncate(start);
        Err(WireError::new(key, m))
    };
    for i in 0..h.count {
        let (Some(gap), Some(z)) = (get_varint(b, &mut at), get_varint(b, &mut at)) else {
            return fail(out, format!("ends inside entry {i} of {}", h.count));
        };
        let n = last.saturating_add(gap);
        if n < range.start as u64 || n >= range.end as u64 {
            return fail(out, format!("injection names neuron {n}, outside this shard's range {range:?}"));
        }
        let potential = ((z >> 1) as i64) ^ -((z & 1) as i64);
        out.push(Injection { neuron: n as u32, potential: Potential(potential) });
        last = n;
    }
    if at != b.len() {
        return fail(out, format!("{} trailing bytes after {} entries", b.len() - at, h.count));
    }
    Ok(())
}

/// A directive of the io shard: members of `members` restore burst `resume` and run epoch `epoch`
/// up to burst `last` (0: until stopped; the io shard's input may end, a bag does).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Directive {
    pub from: usize,
    pub epoch: u32,
    pub resume: u64,
    pub members: u64,
    pub last: u64,
}

/// The size of an encoded directive.
const DIRECTIVE_LEN: usize = 32;

impl Directive {
    pub fn encode(&self) -> Vec<u8> {
        let mut b = vec![DIRECTIVE, VERSION];
        b.extend_from_slice(&(self.from as u16).to_le_bytes());
        b.extend_from_slice(&self.epoch.to_le_bytes());
        b.extend_from_slice(&self.resume.to_le_bytes());
        b.extend_from_slice(&self.members.to_le_bytes());
        b.extend_from_slice(&self.last.to_le_bytes());
        b
    }

    pub fn decode(key: &str, b: &[u8]) -> Result<Directive, WireError> {
        if b.len() < 2 || b[0] != DIRECTIVE {
            return Err(WireError::new(key, format!("not a directive ({} bytes)", b.len())));
        }
        if b[1] != VERSION {
            return Err(WireError::new(key, format!("wire version {}, this neuroburst speaks {VERSION}", b[1])));
        }
        if b.len() != DIRECTIVE_LEN {
            return Err(WireError::new(key, format!("a directive of {} bytes, expected {DIRECTIVE_LEN}", b.len())));
        }
        Ok(Directive {
            from: u16::from_le_bytes([b[2], b[3]]) as usize,
            epoch: u32::from_le_bytes(b[4..8].try_into().unwrap()),
            resume: u64::from_le_bytes(b[8..16].try_into().unwrap()),
            members: u64::from_le_bytes(b[16..24].try_into().unwrap()),
            last: u64::from_le_bytes(b[24..32].try_into().unwrap()),
        })
    }
}

/// The largest message a shard of a brain cut into `ranges` takes from a link: a spikes message
/// of the largest range (at most 5 bytes an id) or an input message (at most 15 bytes an
/// injection, a few injections a neuron), with room to spare; at least 1 MiB, at most Zenoh's own
/// default (1 GiB).
pub fn largest_message(ranges: &[Range<u32>]) -> u64 {
    let widest = ranges.iter().map(|r| (r.end - r.start) as u64).max().unwrap_or(0);
    (HEADER as u64 + 64 * widest).clamp(1 << 20, 1 << 30)
}

/// The shards of a membership mask, ascending.
pub fn shards_of(mask: u64) -> impl Iterator<Item = usize> {
    (0..64).filter(move |k| mask & (1 << k) != 0)
}

/// `[0, 2, 5]` as a string for logs.
pub fn list(mask: u64) -> String {
    let v: Vec<String> = shards_of(mask).map(|k| k.to_string()).collect();
    format!("[{}]", v.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip() {
        let k = Keys::new("rover");
        let mut s = String::new();
        k.data(DataKind::Spikes, 123, 4, &mut s);
        assert_eq!(s, "neuroburst/rover/spikes/123/4");
        assert_eq!(k.parse_data(&s), Ok((DataKind::Spikes, 123, 4)));
        k.data(DataKind::Input, 9, 0, &mut s);
        assert_eq!(k.parse_data(&s), Ok((DataKind::Input, 9, 0)));
        assert!(k.parse_data("neuroburst/other/spikes/1/1").is_err());
        assert!(k.parse_data("neuroburst/rover/spikes/x/1").is_err());
        assert!(k.parse_data("neuroburst/rover/spikes/1/1/2").is_err());
        assert_eq!(k.parse_member(&k.member(3, 500, "a1b2")), Ok((3, 500)));
        assert!(k.parse_member("neuroburst/rover/member/3").is_err());
        assert!(k.parse_member("neuroburst/rover/member/3/500").is_err());
        assert!(k.parse_member("neuroburst/rover/member/3/500/z/x").is_err());
    }

    #[test]
    fn spikes_round_trip_and_are_compact() {
        let fired: Vec<u32> = (0..1000u32).map(|i| 1000 + i * 97).collect();
        let mut b = Vec::new();
        encode_spikes(&mut b, 2, 7, 42, &fired);
        assert!(b.len() < HEADER + 2 * fired.len() + 2, "{} bytes", b.len());
        let h = decode_header("k", &b, DataKind::Spikes, 42, 2).unwrap();
        assert_eq!(h, Header { shard: 2, epoch: 7, burst: 42, count: 1000 });
        let mut out = vec![5];
        decode_spikes("k", &b, &h, &(1000..200_000), &mut out).unwrap();
        assert_eq!(out[0], 5);
        assert_eq!(&out[1..], &fired[..]);
        // empty list, id 0
        encode_spikes(&mut b, 0, 1, 1, &[0]);
        let h = decode_header("k", &b, DataKind::Spikes, 1, 0).unwrap();
        let mut out = vec![];
        decode_spikes("k", &b, &h, &(0..10), &mut out).unwrap();
        assert_eq!(out, vec![0]);
    }

    #[test]
    fn input_round_trips_with_negative_and_repeated_entries() {
        let inj = vec![
            Injection { neuron: 10, potential: Potential(-5) },
            Injection { neuron: 10, potential: Potential(i64::MAX) },
            Injection { neuron: 900, potential: Potential(i64::MIN) },
        ];
        let mut b = Vec::new();
        encode_input(&mut b, 1, 3, 8, inj.iter().copied());
        let h = decode_header("k", &b, DataKind::Input, 8, 1).unwrap();
        let mut out = vec![];
        decode_input("k", &b, &h, &(10..1000), &mut out).unwrap();
        assert_eq!(out, inj);
        let e = decode_input("k", &b, &h, &(11..1000), &mut out).unwrap_err();
        assert!(e.message.contains("outside"), "{e}");
    }

    #[test]
    fn bad_messages_are_errors_naming_the_key() {
        let mut b = Vec::new();
        encode_spikes(&mut b, 1, 1, 5, &[3, 4, 9]);
        assert!(decode_header("key/a", &b[..10], DataKind::Spikes, 5, 1).unwrap_err().to_string().starts_with("key/a: "));
        assert!(decode_header("k", &b, DataKind::Input, 5, 1).unwrap_err().message.contains("kind"));
        assert!(decode_header("k", &b, DataKind::Spikes, 6, 1).unwrap_err().message.contains("burst"));
        let h = decode_header("k", &b, DataKind::Spikes, 5, 1).unwrap();
        let mut out = vec![1, 2];
        // out of the sender's range
        assert!(decode_spikes("k", &b, &h, &(4..10), &mut out).is_err());
        assert_eq!(out, vec![1, 2], "output untouched on error");
        // truncated, trailing bytes
        assert!(decode_spikes("k", &b[..b.len() - 1], &h, &(0..10), &mut out).is_err());
        let mut long = b.clone();
        long.push(1);
        assert!(decode_spikes("k", &long, &h, &(0..10), &mut out).unwrap_err().message.contains("trailing"));
        // a repeated id (gap 0) is refused
        let mut rep = Vec::new();
        encode_spikes(&mut rep, 1, 1, 5, &[3, 3]);
        assert!(decode_spikes("k", &rep, &decode_header("k", &rep, DataKind::Spikes, 5, 1).unwrap(), &(0..10), &mut out).is_err());
        // an endless varint
        let mut inf = b[..HEADER].to_vec();
        inf.extend_from_slice(&[0xff; 12]);
        assert!(decode_spikes("k", &inf, &h, &(0..10), &mut out).is_err());
        // a huge count does not allocate up front
        let mut huge = b[..HEADER].to_vec();
        huge[16..20].copy_from_slice(&u32::MAX.to_le_bytes());
        let h = decode_header("k", &huge, DataKind::Spikes, 5, 1).unwrap();
        assert!(decode_spikes("k", &huge, &h, &(0..10), &mut out).is_err());
    }

    #[test]
    fn a_gap_past_u64_is_an_error_not_a_wrap() {
        // tests/fuzz/regressions/cluster_inbox/: a first id in range, then a gap of u64::MAX
        for topic in [DataKind::Spikes, DataKind::Input] {
            let (kind, z): (u8, &[u8]) = if topic == DataKind::Spikes { (SPIKES, &[]) } else { (INPUT, &[0]) };
            let mut b = vec![kind, VERSION, 1, 0, 0, 0, 0, 0];
            b.extend_from_slice(&5u64.to_le_bytes());
            b.extend_from_slice(&2u32.to_le_bytes());
            b.push(12);
            b.extend_from_slice(z);
            b.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
            b.extend_from_slice(z);
            let h = decode_header("k", &b, topic, 5, 1).unwrap();
            let e = if topic == DataKind::Spikes {
                decode_spikes("k", &b, &h, &(10..20), &mut vec![]).unwrap_err()
            } else {
                decode_input("k", &b, &h, &(10..20), &mut vec![]).unwrap_err()
            };
            assert!(e.message.contains(&u64::MAX.to_string()), "{e}");
        }
    }

    #[test]
    fn directives_round_trip() {
        let d = Directive { from: 0, epoch: 3, resume: 500, members: 0b1011, last: 900 };
        assert_eq!(Directive::decode("c", &d.encode()), Ok(d));
        assert!(Directive::decode("c", &[b'D', VERSION]).unwrap_err().message.contains("32"));
        let mut old = d.encode();
        old[1] = 1;
        assert!(Directive::decode("c", &old[..24]).unwrap_err().message.contains("wire version 1"));
        assert_eq!(list(0b1011), "[0, 1, 3]");
    }
}
