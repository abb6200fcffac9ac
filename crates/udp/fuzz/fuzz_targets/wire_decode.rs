//! The wire decoder over arbitrary bytes: it never panics, and whatever it accepts encodes back
//! to a packet that decodes to the same thing.
#![no_main]

use ccarena_udp::wire::{decode, encode, Frame};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok((h, f)) = decode(data) {
        let mut buf = Vec::new();
        encode(&h, &f, &mut buf);
        let (h2, f2) = decode(&buf).expect("a re-encoded packet decodes");
        assert_eq!(h2, h);
        // HELLO's padding is not kept; everything else round-trips exactly.
        if !matches!(f, Frame::Hello) {
            assert_eq!(f2, f);
            assert_eq!(buf.len(), data.len());
        }
    }
});
