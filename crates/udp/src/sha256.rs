//! SHA-256 (FIPS 180-4), for verifying a transferred file end to end: the RustCrypto `sha2`
//! crate, which uses the CPU's SHA extensions where it has them (Intel SHA-NI, detected at run
//! time; the portable code would cost more CPU than the transfer itself). This module is the thin
//! interface the transfer uses: an incremental hasher, a reader's digest, and hex.

use std::io::Read;

use sha2::Digest;

/// An incremental SHA-256.
#[derive(Clone, Debug, Default)]
pub struct Sha256(sha2::Sha256);

impl Sha256 {
    /// A hasher that has seen nothing.
    pub fn new() -> Sha256 {
        Sha256(sha2::Sha256::new())
    }

    /// Hash `data` after what came before.
    pub fn update(&mut self, data: &[u8]) {
        self.0.update(data);
    }

    /// The 32-byte digest of everything given to [`Sha256::update`].
    pub fn finish(self) -> [u8; 32] {
        self.0.finalize().into()
    }
}

/// SHA-256 of everything `reader` yields.
///
/// # Errors
/// The reader's I/O error.
pub fn sha256_of(mut reader: impl Read) -> std::io::Result<[u8; 32]> {
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = reader.read(&mut buf)?;
        if n == 0 {
            return Ok(h.finish());
        }
        h.update(&buf[..n]);
    }
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fips_180_test_vectors() {
        let one = |data: &[u8]| {
            let mut h = Sha256::new();
            h.update(data);
            hex(&h.finish())
        };
        assert_eq!(one(b""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        assert_eq!(one(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        // A million 'a's fed in odd-sized pieces.
        let mut h = Sha256::new();
        let piece = [b'a'; 997];
        let mut left = 1_000_000;
        while left > 0 {
            let n = left.min(piece.len());
            h.update(&piece[..n]);
            left -= n;
        }
        assert_eq!(hex(&h.finish()), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    }
}
