//! Certificates made by the tests (rcgen): a CA, and certificates it signs for given addresses,
//! written as PEM files beside their keys.

use std::path::{Path, PathBuf};

use rcgen::{BasicConstraints, Certificate, CertificateParams, DnType, IsCa, KeyPair};

pub struct Ca {
    cert: Certificate,
    key: KeyPair,
}

impl Ca {
    pub fn new(name: &str) -> Ca {
        let key = KeyPair::generate().unwrap();
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        p.distinguished_name.push(DnType::CommonName, name);
        Ca { cert: p.self_signed(&key).unwrap(), key }
    }

    /// The CA's certificate, written to `path`.
    pub fn write(&self, path: &Path) -> PathBuf {
        std::fs::write(path, self.cert.pem()).unwrap();
        path.to_path_buf()
    }

    /// A certificate of common name `cn` for `names` (addresses or host names), as `<cn>.pem` and
    /// `<cn>-key.pem` in `dir`.
    pub fn issue(&self, dir: &Path, cn: &str, names: &[&str]) -> (PathBuf, PathBuf) {
        let key = KeyPair::generate().unwrap();
        let mut p = CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
        p.distinguished_name.push(DnType::CommonName, cn);
        let cert = p.signed_by(&key, &self.cert, &self.key).unwrap();
        let (c, k) = (dir.join(format!("{cn}.pem")), dir.join(format!("{cn}-key.pem")));
        std::fs::write(&c, cert.pem()).unwrap();
        std::fs::write(&k, key.serialize_pem()).unwrap();
        (c, k)
    }
}
