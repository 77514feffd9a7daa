//! A minimal CDR (XCDR1, little endian) reader and writer for the node's few message types.
//! Issue 4's `ros` module (typed messages with RIHS01 hashes) supersedes it once merged.

/// Encapsulation header: CDR little endian.
pub const HEADER: [u8; 4] = [0, 1, 0, 0];

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CdrError(pub String);

pub struct Reader<'a> {
    body: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    pub fn new(payload: &'a [u8]) -> Result<Reader<'a>, CdrError> {
        match payload {
            [0, 1, _, _, body @ ..] => Ok(Reader { body, at: 0 }),
            [0, 0, _, _, ..] => Err(CdrError("big-endian CDR is not supported".into())),
            _ => Err(CdrError(format!("not a CDR little-endian payload ({} bytes)", payload.len()))),
        }
    }

    fn align(&mut self, n: usize) {
        self.at = self.at.div_ceil(n) * n;
    }

    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], CdrError> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.body.len());
        let end = end.ok_or_else(|| CdrError(format!("truncated: needs {n} bytes at offset {}, has {}", self.at, self.body.len())))?;
        let s = &self.body[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn prim<const N: usize>(&mut self) -> Result<[u8; N], CdrError> {
        self.align(N);
        Ok(self.bytes(N)?.try_into().unwrap())
    }

    pub fn u8(&mut self) -> Result<u8, CdrError> {
        Ok(self.bytes(1)?[0])
    }
    pub fn u32(&mut self) -> Result<u32, CdrError> {
        self.prim().map(u32::from_le_bytes)
    }
    pub fn i32(&mut self) -> Result<i32, CdrError> {
        self.prim().map(i32::from_le_bytes)
    }
    pub fn f32(&mut self) -> Result<f32, CdrError> {
        self.prim().map(f32::from_le_bytes)
    }
    pub fn f64(&mut self) -> Result<f64, CdrError> {
        self.prim().map(f64::from_le_bytes)
    }

    /// A sequence length, checked against the bytes left (`elem` bytes per element at least).
    pub fn len(&mut self, elem: usize) -> Result<usize, CdrError> {
        let n = self.u32()? as usize;
        if n.saturating_mul(elem) > self.body.len() - self.at {
            return Err(CdrError(format!("sequence of {n} elements runs past the end")));
        }
        Ok(n)
    }

    pub fn string(&mut self) -> Result<String, CdrError> {
        let n = self.len(1)?;
        let b = self.bytes(n)?;
        let b = b.strip_suffix(&[0]).ok_or_else(|| CdrError("string without terminating NUL".into()))?;
        String::from_utf8(b.to_vec()).map_err(|_| CdrError("string is not UTF-8".into()))
    }

    pub fn f32_seq(&mut self) -> Result<Vec<f32>, CdrError> {
        let n = self.len(4)?;
        (0..n).map(|_| self.f32()).collect()
    }

    /// std_msgs/Header: stamp (sec, nanosec) and frame_id.
    pub fn header(&mut self) -> Result<(), CdrError> {
        self.i32()?;
        self.u32()?;
        self.string()?;
        Ok(())
    }
}

#[derive(Default)]
pub struct Writer {
    body: Vec<u8>,
}

impl Writer {
    pub fn new() -> Writer {
        Writer::default()
    }
    fn align(&mut self, n: usize) {
        let len = self.body.len().div_ceil(n) * n;
        self.body.resize(len, 0);
    }
    pub fn u32(&mut self, v: u32) {
        self.align(4);
        self.body.extend_from_slice(&v.to_le_bytes());
    }
    pub fn u64(&mut self, v: u64) {
        self.align(8);
        self.body.extend_from_slice(&v.to_le_bytes());
    }
    pub fn f32(&mut self, v: f32) {
        self.align(4);
        self.body.extend_from_slice(&v.to_le_bytes());
    }
    pub fn f64(&mut self, v: f64) {
        self.align(8);
        self.body.extend_from_slice(&v.to_le_bytes());
    }
    pub fn string(&mut self, s: &str) {
        self.u32(s.len() as u32 + 1);
        self.body.extend_from_slice(s.as_bytes());
        self.body.push(0);
    }
    pub fn finish(self) -> Vec<u8> {
        let mut out = HEADER.to_vec();
        out.extend_from_slice(&self.body);
        if self.body.is_empty() {
            out.push(0);
        }
        out
    }
}
