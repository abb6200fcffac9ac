//! SHA-256 (FIPS 180-4 §6.2), for verifying a transferred file end to end. Written here rather
//! than pulled in as a crate: the one hash the transfer needs, checked against the standard's
//! test vectors. On x86-64 CPUs with the SHA extensions (Intel SHA-NI, detected at run time) the
//! compression function uses them (about 10× the portable code's speed, which otherwise costs
//! more CPU than the transfer itself).

use std::io::Read;

const K: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

/// An incremental SHA-256.
#[derive(Clone, Debug)]
pub struct Sha256 {
    state: [u32; 8],
    block: [u8; 64],
    block_len: usize,
    total_bytes: u64,
}

impl Default for Sha256 {
    fn default() -> Sha256 {
        Sha256::new()
    }
}

impl Sha256 {
    /// The hash of nothing yet (FIPS 180-4 §5.3.3 initial value).
    pub fn new() -> Sha256 {
        Sha256 {
            state: [
                0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab,
                0x5be0cd19,
            ],
            block: [0; 64],
            block_len: 0,
            total_bytes: 0,
        }
    }

    /// Add `data`.
    pub fn update(&mut self, mut data: &[u8]) {
        self.total_bytes = self.total_bytes.wrapping_add(data.len() as u64);
        if self.block_len > 0 {
            let n = (64 - self.block_len).min(data.len());
            self.block[self.block_len..self.block_len + n].copy_from_slice(&data[..n]);
            self.block_len += n;
            data = &data[n..];
            if self.block_len < 64 {
                return;
            }
            let b = self.block;
            compress_blocks(&mut self.state, &b);
            self.block_len = 0;
        }
        let whole = data.len() / 64 * 64;
        compress_blocks(&mut self.state, &data[..whole]);
        let rest = &data[whole..];
        self.block[..rest.len()].copy_from_slice(rest);
        self.block_len = rest.len();
    }

    /// The digest (§5.1.1 padding, then the last blocks).
    pub fn finish(mut self) -> [u8; 32] {
        let bits = self.total_bytes.wrapping_mul(8);
        self.update(&[0x80]);
        while self.block_len != 56 {
            self.update(&[0]);
        }
        self.update(&bits.to_be_bytes());
        let mut out = [0u8; 32];
        for (o, s) in out.chunks_exact_mut(4).zip(self.state) {
            o.copy_from_slice(&s.to_be_bytes());
        }
        out
    }

}

/// Compress each 64-byte block of `blocks` (a multiple of 64 bytes) into `state`.
fn compress_blocks(state: &mut [u32; 8], blocks: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("sha")
            && std::arch::is_x86_feature_detected!("sse4.1")
            && std::arch::is_x86_feature_detected!("ssse3")
        {
            // SAFETY: the CPU has the features the function is compiled for.
            unsafe { compress_sha_ni(state, blocks) };
            return;
        }
    }
    compress_portable(state, blocks);
}

/// The compression function with the x86 SHA extensions (Intel, "New Instructions Supporting
/// the Secure Hash Algorithm on Intel Architecture Processors", 2013): `sha256rnds2` runs two
/// rounds on the state held as (A, B, E, F) and (C, D, G, H); `sha256msg1`/`sha256msg2` compute
/// the message schedule (FIPS 180-4 §6.2.2 step 1) four words at a time.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
unsafe fn compress_sha_ni(state: &mut [u32; 8], blocks: &[u8]) {
    use std::arch::x86_64::*;
    // Byte order: message words are big-endian.
    let bswap = _mm_set_epi64x(0x0c0d_0e0f_0809_0a0b, 0x0405_0607_0001_0203);
    // state = [A B C D] [E F G H] → ABEF = lanes (F, E, B, A), CDGH = lanes (H, G, D, C).
    let lo = _mm_shuffle_epi32(_mm_loadu_si128(state.as_ptr().cast()), 0xB1);
    let hi = _mm_shuffle_epi32(_mm_loadu_si128(state.as_ptr().add(4).cast()), 0x1B);
    let mut abef = _mm_alignr_epi8(lo, hi, 8);
    let mut cdgh = _mm_blend_epi16(hi, lo, 0xF0);
    for block in blocks.chunks_exact(64) {
        let (abef0, cdgh0) = (abef, cdgh);
        let p: *const __m128i = block.as_ptr().cast();
        let mut w = [_mm_setzero_si128(); 16];
        for (i, wi) in w.iter_mut().take(4).enumerate() {
            *wi = _mm_shuffle_epi8(_mm_loadu_si128(p.add(i)), bswap);
        }
        for i in 4..16 {
            // W[t] = σ1(W[t−2]) + W[t−7] + σ0(W[t−15]) + W[t−16], four at a time.
            let s = _mm_add_epi32(_mm_sha256msg1_epu32(w[i - 4], w[i - 3]), _mm_alignr_epi8(w[i - 1], w[i - 2], 4));
            w[i] = _mm_sha256msg2_epu32(s, w[i - 1]);
        }
        for (i, wi) in w.iter().enumerate() {
            let wk = _mm_add_epi32(*wi, _mm_loadu_si128(K.as_ptr().add(4 * i).cast()));
            // Two rounds; the new (C, D, G, H) is the old (A, B, E, F).
            let next = _mm_sha256rnds2_epu32(cdgh, abef, wk);
            cdgh = abef;
            abef = next;
            let next = _mm_sha256rnds2_epu32(cdgh, abef, _mm_shuffle_epi32(wk, 0x0E));
            cdgh = abef;
            abef = next;
        }
        abef = _mm_add_epi32(abef, abef0);
        cdgh = _mm_add_epi32(cdgh, cdgh0);
    }
    let a = _mm_shuffle_epi32(abef, 0x1B); // (A, B, E, F)
    let c = _mm_shuffle_epi32(cdgh, 0xB1); // (G, H, C, D)
    _mm_storeu_si128(state.as_mut_ptr().cast(), _mm_blend_epi16(a, c, 0xF0));
    _mm_storeu_si128(state.as_mut_ptr().add(4).cast(), _mm_alignr_epi8(c, a, 8));
}

/// The compression function in portable Rust (FIPS 180-4 §6.2.2).
fn compress_portable(state: &mut [u32; 8], blocks: &[u8]) {
    for block in blocks.chunks_exact(64) {
        compress_one(state, block);
    }
}

fn compress_one(state: &mut [u32; 8], block: &[u8]) {
    let mut w = [0u32; 64];
    for (i, c) in block.chunks_exact(4).enumerate() {
        w[i] = u32::from_be_bytes([c[0], c[1], c[2], c[3]]);
    }
    for i in 16..64 {
        let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
        let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16].wrapping_add(s0).wrapping_add(w[i - 7]).wrapping_add(s1);
    }
    let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h] = *state;
    for i in 0..64 {
        let s1 = e.rotate_right(6) ^ e.rotate_right(11) ^ e.rotate_right(25);
        let ch = (e & f) ^ (!e & g);
        let t1 = h.wrapping_add(s1).wrapping_add(ch).wrapping_add(K[i]).wrapping_add(w[i]);
        let s0 = a.rotate_right(2) ^ a.rotate_right(13) ^ a.rotate_right(22);
        let maj = (a & b) ^ (a & c) ^ (b & c);
        let t2 = s0.wrapping_add(maj);
        h = g;
        g = f;
        f = e;
        e = d.wrapping_add(t1);
        d = c;
        c = b;
        b = a;
        a = t1.wrapping_add(t2);
    }
    for (s, v) in state.iter_mut().zip([a, b, c, d, e, f, g, h]) {
        *s = s.wrapping_add(v);
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
    fn the_accelerated_path_agrees_with_the_portable_one() {
        let data: Vec<u8> = (0..64 * 300u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8).collect();
        let init = Sha256::new().state;
        let (mut a, mut b) = (init, init);
        compress_blocks(&mut a, &data);
        compress_portable(&mut b, &data);
        assert_eq!(a, b);
    }

    #[test]
    fn fips_180_test_vectors() {
        let one = |data: &[u8]| {
            let mut h = Sha256::new();
            h.update(data);
            hex(&h.finish())
        };
        assert_eq!(one(b""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        assert_eq!(one(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!(
            one(b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        );
        // A million 'a's fed in odd-sized pieces: the block buffering is exercised.
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
