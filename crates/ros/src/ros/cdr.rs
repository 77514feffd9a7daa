//! XCDR1 little-endian (plain CDR) as ROS 2 puts it on the wire: a 4-byte encapsulation header
//! `00 01 00 00`, then the body, every primitive aligned to its size relative to the first byte
//! after the header (8-byte primitives to 8). Strings are a `u32` length that counts the
//! terminating NUL, the bytes and the NUL; sequences are a `u32` count and the elements.
//!
//! The reader never panics: every read is bounds-checked, and a sequence count is checked against
//! the bytes left before anything is allocated.

/// The encapsulation header of CDR little endian (XCDR1).
pub const HEADER_LE: [u8; 4] = [0x00, 0x01, 0x00, 0x00];

/// What went wrong while decoding a payload; [`super::MsgError`] adds the type name.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CdrError {
    #[error("payload of {0} bytes is shorter than the 4-byte CDR header")]
    /// Shorter than the header.
    NoHeader(usize),
    #[error("encapsulation header {0:02x?} is not CDR little endian (00 01 00 00)")]
    /// Not CDR little endian.
    BadHeader([u8; 4]),
    #[error("payload ends at byte {len} while reading {what} at byte {at}")]
    /// The payload ends inside a value.
    Truncated {
        /// What was being read.
        what: &'static str,
        /// Where it began.
        at: usize,
        /// The payload's length.
        len: usize,
    },
    #[error("{what}: {count} elements announced but only {left} bytes are left")]
    /// A sequence longer than the bytes left could hold.
    TooLong {
        /// The sequence.
        what: &'static str,
        /// Elements announced.
        count: u32,
        /// Bytes left.
        left: usize,
    },
    #[error("string at byte {at} is not NUL-terminated UTF-8")]
    /// A string that is not NUL-terminated UTF-8.
    BadString {
        /// Where it began.
        at: usize,
    },
    #[error("{0}")]
    /// A value out of its type's range.
    Invalid(String),
}

/// Writes a CDR payload, header included.
#[derive(Debug)]
pub struct CdrWriter {
    buf: Vec<u8>,
}

impl Default for CdrWriter {
    fn default() -> Self {
        Self::new()
    }
}

impl CdrWriter {
    /// An empty payload with the CDR little-endian header.
    pub fn new() -> Self {
        CdrWriter { buf: HEADER_LE.to_vec() }
    }

    /// The finished payload. An empty body is padded to one byte, as rmw does.
    pub fn finish(mut self) -> Vec<u8> {
        if self.buf.len() == HEADER_LE.len() {
            self.buf.push(0);
        }
        self.buf
    }

    fn align(&mut self, n: usize) {
        let pos = self.buf.len() - HEADER_LE.len();
        let pad = (n - pos % n) % n;
        self.buf.extend(std::iter::repeat_n(0u8, pad));
    }

    /// Append a `uint8`.
    pub fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }
    /// Append an `int8`.
    pub fn i8(&mut self, v: i8) {
        self.buf.push(v as u8);
    }
    /// Append a `bool`.
    pub fn bool(&mut self, v: bool) {
        self.buf.push(v as u8);
    }
    /// Append a `uint16` (aligned).
    pub fn u16(&mut self, v: u16) {
        self.align(2);
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    /// Append an `int16` (aligned).
    pub fn i16(&mut self, v: i16) {
        self.align(2);
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    /// Append a `uint32` (aligned).
    pub fn u32(&mut self, v: u32) {
        self.align(4);
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    /// Append an `int32` (aligned).
    pub fn i32(&mut self, v: i32) {
        self.align(4);
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    /// Append a `float32` (aligned).
    pub fn f32(&mut self, v: f32) {
        self.align(4);
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    /// Append a `uint64` (aligned).
    pub fn u64(&mut self, v: u64) {
        self.align(8);
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    /// Append an `int64` (aligned).
    pub fn i64(&mut self, v: i64) {
        self.align(8);
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    /// Append a `float64` (aligned).
    pub fn f64(&mut self, v: f64) {
        self.align(8);
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    /// A sequence length or a string length.
    pub fn len(&mut self, n: usize) {
        self.u32(u32::try_from(n).unwrap_or(u32::MAX));
    }
    /// Append a `string` (length with its NUL, bytes, NUL).
    pub fn string(&mut self, s: &str) {
        self.len(s.len() + 1);
        self.buf.extend_from_slice(s.as_bytes());
        self.buf.push(0);
    }
    /// Raw bytes (a `uint8[]` body, after its length).
    pub fn bytes(&mut self, b: &[u8]) {
        self.buf.extend_from_slice(b);
    }
}

/// Reads a CDR payload, header included.
#[derive(Debug)]
pub struct CdrReader<'a> {
    body: &'a [u8],
    pos: usize,
}

impl<'a> CdrReader<'a> {
    /// Check the header and start at the first body byte.
    pub fn new(payload: &'a [u8]) -> Result<Self, CdrError> {
        if payload.len() < HEADER_LE.len() {
            return Err(CdrError::NoHeader(payload.len()));
        }
        let header = [payload[0], payload[1], payload[2], payload[3]];
        // Options bytes (2..4) are padding information; only the representation id matters.
        if header[0] != 0 || header[1] != 1 {
            return Err(CdrError::BadHeader(header));
        }
        Ok(CdrReader { body: &payload[4..], pos: 0 })
    }

    /// Bytes not read yet.
    pub fn left(&self) -> usize {
        self.body.len().saturating_sub(self.pos)
    }

    fn take(&mut self, n: usize, align: usize, what: &'static str) -> Result<&'a [u8], CdrError> {
        let start = self.pos.div_ceil(align) * align;
        let end = start.checked_add(n).filter(|&e| e <= self.body.len());
        match end {
            Some(end) => {
                self.pos = end;
                Ok(&self.body[start..end])
            }
            None => Err(CdrError::Truncated { what, at: start + 4, len: self.body.len() + 4 }),
        }
    }

    fn arr<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], CdrError> {
        let s = self.take(N, N, what)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    /// Read a `uint8`.
    pub fn u8(&mut self) -> Result<u8, CdrError> {
        Ok(self.take(1, 1, "uint8")?[0])
    }
    /// Read an `int8`.
    pub fn i8(&mut self) -> Result<i8, CdrError> {
        Ok(self.take(1, 1, "int8")?[0] as i8)
    }
    /// Read a `bool`.
    pub fn bool(&mut self) -> Result<bool, CdrError> {
        Ok(self.take(1, 1, "bool")?[0] != 0)
    }
    /// Read a `uint16` (aligned).
    pub fn u16(&mut self) -> Result<u16, CdrError> {
        Ok(u16::from_le_bytes(self.arr("uint16")?))
    }
    /// Read an `int16` (aligned).
    pub fn i16(&mut self) -> Result<i16, CdrError> {
        Ok(i16::from_le_bytes(self.arr("int16")?))
    }
    /// Read a `uint32` (aligned).
    pub fn u32(&mut self) -> Result<u32, CdrError> {
        Ok(u32::from_le_bytes(self.arr("uint32")?))
    }
    /// Read an `int32` (aligned).
    pub fn i32(&mut self) -> Result<i32, CdrError> {
        Ok(i32::from_le_bytes(self.arr("int32")?))
    }
    /// Read a `float32` (aligned).
    pub fn f32(&mut self) -> Result<f32, CdrError> {
        Ok(f32::from_le_bytes(self.arr("float32")?))
    }
    /// Read a `uint64` (aligned).
    pub fn u64(&mut self) -> Result<u64, CdrError> {
        Ok(u64::from_le_bytes(self.arr("uint64")?))
    }
    /// Read an `int64` (aligned).
    pub fn i64(&mut self) -> Result<i64, CdrError> {
        Ok(i64::from_le_bytes(self.arr("int64")?))
    }
    /// Read a `float64` (aligned).
    pub fn f64(&mut self) -> Result<f64, CdrError> {
        Ok(f64::from_le_bytes(self.arr("float64")?))
    }

    /// A sequence count, checked against the bytes left (`min_size` bytes per element at least).
    pub fn seq_len(&mut self, min_size: usize, what: &'static str) -> Result<usize, CdrError> {
        let count = self.u32()?;
        let left = self.left();
        if (count as u64).saturating_mul(min_size.max(1) as u64) > left as u64 {
            return Err(CdrError::TooLong { what, count, left });
        }
        Ok(count as usize)
    }

    /// Read a `string`.
    pub fn string(&mut self) -> Result<String, CdrError> {
        let n = self.seq_len(1, "string")?;
        let at = self.pos + 4;
        let bytes = self.take(n, 1, "string")?;
        match bytes.split_last() {
            Some((0, s)) => String::from_utf8(s.to_vec()).map_err(|_| CdrError::BadString { at }),
            // Some writers send an empty string as length 0.
            None => Ok(String::new()),
            _ => Err(CdrError::BadString { at }),
        }
    }

    /// `n` raw bytes (a `uint8[]` body, after its length).
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], CdrError> {
        self.take(n, 1, "uint8[]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alignment_is_relative_to_the_body() {
        let mut w = CdrWriter::new();
        w.u8(1);
        w.f64(2.0);
        let b = w.finish();
        assert_eq!(b.len(), 4 + 8 + 8);
        let mut r = CdrReader::new(&b).unwrap();
        assert_eq!(r.u8().unwrap(), 1);
        assert_eq!(r.f64().unwrap(), 2.0);
        assert!(matches!(r.u8(), Err(CdrError::Truncated { .. })));
    }

    #[test]
    fn empty_message_is_header_and_one_byte() {
        assert_eq!(CdrWriter::new().finish(), vec![0, 1, 0, 0, 0]);
    }

    #[test]
    fn bad_headers_and_huge_counts_are_errors() {
        assert_eq!(CdrReader::new(&[0, 1]).unwrap_err(), CdrError::NoHeader(2));
        assert!(matches!(CdrReader::new(&[0, 0, 0, 0]).unwrap_err(), CdrError::BadHeader(_)));
        let mut r = CdrReader::new(&[0, 1, 0, 0, 0xff, 0xff, 0xff, 0xff]).unwrap();
        assert!(matches!(r.seq_len(8, "float64[]"), Err(CdrError::TooLong { .. })));
    }
}
