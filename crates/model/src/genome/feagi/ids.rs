//! FEAGI cortical ids. Genome 2.x names areas with 6 ASCII characters (`_power`, `iic400`,
//! `c__for`); genome 3.0 with 8 bytes written in standard base64 (`X19fcG93ZXI=` is `___power`).
//! Byte 0 is the class (`c` custom, `m` memory, `_` core, `i` input, `o` output, `g` modulator);
//! an input or output area has its 3-letter unit type in bytes 1..4, a configuration flag (data
//! type in bits 0..4, sub-unit in bits 4..8, frame handling bit 8, positioning bit 9) in bytes
//! 4..6 and its unit (group) index in bytes 6..8, both little-endian (feagi-structures
//! `CorticalID`). A custom, memory or core id is printable ASCII padded with `_`.
//!
//! neuroburst names an area by the id FEAGI made its 3.0 id from, when there is one (FEAGI's
//! migrator, feagi-evolutionary `map_old_id_to_new` and `CorticalID::try_from_legacy_ascii`): a
//! genome saved as 3.0 by FEAGI is then the same genome, with the same area order and neuron ids,
//! as its 2.x original. Other printable ids keep their text; any other id its base64 text.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;

/// The 8 bytes of a FEAGI cortical id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CorticalId(pub [u8; 8]);

/// What byte 0 says an area is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// A user's own area (`C`).
    Custom,
    /// A memory area (`M`).
    Memory,
    /// A core area (`_`: `_power`, `_death`).
    Core,
    /// A sensory input area (`i`).
    Input,
    /// A motor output area (`o`).
    Output,
    /// A neuromodulation area (`m`).
    Modulator,
}

impl Class {
    /// The class a first byte names (2.x ids start with the same letters).
    pub fn of(first: u8) -> Option<Class> {
        Some(match first {
            b'c' => Class::Custom,
            b'm' => Class::Memory,
            b'_' => Class::Core,
            b'i' => Class::Input,
            b'o' => Class::Output,
            b'g' => Class::Modulator,
            _ => return None,
        })
    }
}

/// Legacy vision tiles `iicK00` are FEAGI's segmented vision `svi` sub-unit K, Cartesian plane
/// data (flag variant 9), absolute frames, unit 0.
const VISION: &[u8; 4] = b"isvi";
/// `omot00`: rotary motor (`mot`), signed percentage (variant 5), unit 0.
const MOTOR: [u8; 8] = *b"omot\x05\0\0\0";
/// `ogaz00`: gaze (`gaz`), percentage 2D (variant 2), unit 0.
const GAZE: [u8; 8] = *b"ogaz\x02\0\0\0";
/// Flag variant of FEAGI's miscellaneous data (`imis` / `omis`), the unit written for a sensor or
/// motor area that has no FEAGI id.
pub const MISC_VARIANT: u16 = 10;

impl CorticalId {
    /// A 3.0 id: base64 of 8 bytes whose first byte is a class.
    pub fn from_base64(text: &str) -> Option<CorticalId> {
        if text.len() != 12 {
            return None;
        }
        let bytes: [u8; 8] = STANDARD.decode(text).ok()?.try_into().ok()?;
        let id = CorticalId(bytes);
        id.class().map(|_| id)
    }

    /// The id as FEAGI 3.0 writes it: its 8 bytes in base64 (12 characters).
    pub fn base64(&self) -> String {
        STANDARD.encode(self.0)
    }

    /// What kind of area the id names (from its first byte), if any.
    pub fn class(&self) -> Option<Class> {
        Class::of(self.0[0])
    }

    /// The 3.0 id FEAGI's migrator gives a legacy id it knows by name (`_power`, `_death`,
    /// `iic000`..`iic800`, `omot00`, `ogaz00`), or its padded ASCII (`c__for` -> `c__for__`) for
    /// a printable id of at most 8 bytes that starts with `start`.
    pub fn from_legacy(id: &str, start: u8) -> Option<CorticalId> {
        match id {
            "_power" | "___pwr" | "___pwr__" | "___power" => return Some(CorticalId(*b"___power")),
            "_death" | "___death" => return Some(CorticalId(*b"___death")),
            "omot00" => return Some(CorticalId(MOTOR)),
            "ogaz00" => return Some(CorticalId(GAZE)),
            _ => {}
        }
        let b = id.as_bytes();
        if let [b'i', b'i', b'c', k @ b'0'..=b'8', b'0', b'0'] = b {
            let mut bytes = [0u8; 8];
            bytes[..4].copy_from_slice(VISION);
            bytes[4] = ((k - b'0') << 4) | 9;
            return Some(CorticalId(bytes));
        }
        if b.is_empty() || b.len() > 8 || b[0] != start || !b.iter().all(|c| c.is_ascii_graphic()) {
            return None;
        }
        let mut bytes = [b'_'; 8];
        bytes[..b.len()].copy_from_slice(b);
        Some(CorticalId(bytes))
    }

    /// The id neuroburst gives the area (see the module's documentation).
    pub fn neuroburst_id(&self) -> String {
        match &self.0 {
            b"___power" => return "_power".into(),
            b"___death" => return "_death".into(),
            &MOTOR => return "omot00".into(),
            &GAZE => return "ogaz00".into(),
            [b'i', b's', b'v', b'i', f, 0, 0, 0] if f & 0x0f == 9 && f >> 4 <= 8 => return format!("iic{}00", f >> 4),
            _ => {}
        }
        if self.0.iter().all(|c| c.is_ascii_graphic()) && !matches!(self.class(), Some(Class::Input | Class::Output)) {
            let text = std::str::from_utf8(&self.0).unwrap_or_default();
            // FEAGI pads a 6-character custom or memory id with `__`
            return match self.class() {
                Some(Class::Custom | Class::Memory) if text.ends_with("__") => text[..6].to_string(),
                _ => text.to_string(),
            };
        }
        self.base64()
    }

    /// An input or output area's unit type, data-type variant, sub-unit and unit (group) index.
    pub fn io(&self) -> Option<(String, u16, u16, u16)> {
        if !matches!(self.class(), Some(Class::Input | Class::Output)) {
            return None;
        }
        let flags = u16::from_le_bytes([self.0[4], self.0[5]]);
        let unit = u16::from_le_bytes([self.0[6], self.0[7]]);
        Some((String::from_utf8_lossy(&self.0[1..4]).into_owned(), flags & 0x0f, (flags >> 4) & 0x0f, unit))
    }

    /// FEAGI's miscellaneous input (`imis`) or output (`omis`) unit `unit`.
    pub fn misc(output: bool, unit: u16) -> CorticalId {
        let mut bytes = if output { *b"omis\0\0\0\0" } else { *b"imis\0\0\0\0" };
        bytes[4..6].copy_from_slice(&MISC_VARIANT.to_le_bytes());
        bytes[6..8].copy_from_slice(&unit.to_le_bytes());
        CorticalId(bytes)
    }
}

/// A name for an input or output area that has none: `FEAGI svi unit 0 sub-unit 4`.
pub fn io_name(id: &CorticalId) -> Option<String> {
    id.io().map(|(ty, _, sub, unit)| format!("FEAGI {ty} unit {unit} sub-unit {sub}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn feagi_ids_decode_as_feagi_writes_them() {
        // from FEAGI's own 3.0 save of the essential genome (feagi-evolutionary 0.0.53)
        for (b64, bytes, ours) in [
            ("X19fcG93ZXI=", *b"___power", "_power"),
            ("Y19fZm9yX18=", *b"c__for__", "c__for"),
            ("Y080TTNfX18=", *b"cO4M3___", "cO4M3_"),
            ("aXN2aQkAAAA=", *b"isvi\x09\0\0\0", "iic000"),
            ("aXN2aUkAAAA=", *b"isvi\x49\0\0\0", "iic400"),
            ("b21vdAUAAAA=", MOTOR, "omot00"),
            ("b2dhegIAAAA=", GAZE, "ogaz00"),
        ] {
            let id = CorticalId::from_base64(b64).unwrap();
            assert_eq!(id.0, bytes);
            assert_eq!(id.neuroburst_id(), ours);
            assert_eq!(id.base64(), b64);
            let start = ours.as_bytes()[0];
            assert_eq!(CorticalId::from_legacy(ours, start), Some(id), "{ours}");
        }
        // a vision tile of unit 4 (the example) has no legacy id: its base64 is its name
        let tile = CorticalId::from_base64("aXN2aQkABAA=").unwrap();
        assert_eq!(tile.io(), Some(("svi".to_string(), 9, 0, 4)));
        assert_eq!(tile.neuroburst_id(), "aXN2aQkABAA=");
        assert_eq!(io_name(&tile).unwrap(), "FEAGI svi unit 4 sub-unit 0");
        let fatigue = CorticalId::from_base64(&CorticalId(*b"___fatig").base64()).unwrap();
        assert_eq!((fatigue.class(), fatigue.neuroburst_id().as_str()), (Some(Class::Core), "___fatig"));
    }

    #[test]
    fn what_is_not_a_3_0_id() {
        assert_eq!(CorticalId::from_base64("iic400"), None);
        assert_eq!(CorticalId::from_base64("!!!!!!!!!!!!"), None);
        assert_eq!(CorticalId::from_base64(&CorticalId(*b"xabcdefg").base64()), None, "no class x");
        assert_eq!(CorticalId::from_base64("X19fcG93ZXI"), None);
        assert_eq!(CorticalId::from_legacy("vision", b'c'), None, "not a custom id");
        assert_eq!(CorticalId::from_legacy("camera", b'c'), Some(CorticalId(*b"camera__")));
        assert_eq!(CorticalId::from_legacy("c_much_too_long", b'c'), None);
        let misc = CorticalId::misc(true, 3);
        assert_eq!(misc.io(), Some(("mis".to_string(), MISC_VARIANT, 0, 3)));
        assert_eq!(CorticalId::from_base64(&misc.base64()), Some(misc));
    }
}
