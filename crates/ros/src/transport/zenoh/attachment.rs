//! The rmw_zenoh attachment carried by every data sample:
//! `seq: i64 LE | source_timestamp_ns: i64 LE | 0x10 | gid: 16 bytes` = 33 bytes,
//! and the GID of an entity: XXH3-128 of its liveliness key, low 64 bits then high 64 bits, LE.

use super::super::AttachmentStatus;

/// The attachment's length in bytes.
pub const LEN: usize = 33;

/// The GID of the entity whose liveliness key is `key`.
pub fn gid(key: &str) -> [u8; 16] {
    let h = xxhash_rust::xxh3::xxh3_128(key.as_bytes());
    let mut g = [0u8; 16];
    g[..8].copy_from_slice(&(h as u64).to_le_bytes());
    g[8..].copy_from_slice(&((h >> 64) as u64).to_le_bytes());
    g
}

/// The attachment of a message: its sequence number, source time and publisher's gid.
pub fn encode(seq: i64, source_timestamp_ns: i64, gid: &[u8; 16]) -> [u8; LEN] {
    let mut a = [0u8; LEN];
    a[..8].copy_from_slice(&seq.to_le_bytes());
    a[8..16].copy_from_slice(&source_timestamp_ns.to_le_bytes());
    a[16] = 0x10;
    a[17..].copy_from_slice(gid);
    a
}

/// Parse an attachment (`None`: the sample had none).
pub fn decode(bytes: Option<&[u8]>) -> AttachmentStatus {
    let Some(b) = bytes else { return AttachmentStatus::Missing };
    if b.len() != LEN || b[16] != 0x10 {
        return AttachmentStatus::Malformed;
    }
    let seq = i64::from_le_bytes(b[..8].try_into().unwrap());
    let source_timestamp_ns = i64::from_le_bytes(b[8..16].try_into().unwrap());
    let gid = b[17..].try_into().unwrap();
    AttachmentStatus::Valid { seq, source_timestamp_ns, gid }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_layout() {
        let g = gid("@ros2_lv/0/abc/0/1/MP/%/%/brain/%cmd_vel/geometry_msgs::msg::dds_::Twist_/RIHS01_x/::,10:,:,:,,");
        let a = encode(7, -3, &g);
        assert_eq!(a.len(), 33);
        assert_eq!(&a[..8], &7i64.to_le_bytes());
        assert_eq!(a[16], 0x10);
        assert_eq!(decode(Some(&a)), AttachmentStatus::Valid { seq: 7, source_timestamp_ns: -3, gid: g });
        assert_eq!(decode(None), AttachmentStatus::Missing);
        assert_eq!(decode(Some(&a[..32])), AttachmentStatus::Malformed);
    }

    #[test]
    fn gid_is_xxh3_128_low_then_high() {
        // Independent value: Python `xxhash.xxh3_128_intdigest(b"abc")`.
        let h: u128 = 0x06b05ab6733a618578af5f94892f3950;
        let g = gid("abc");
        assert_eq!(u128::from_le_bytes(g), h);
    }
}
