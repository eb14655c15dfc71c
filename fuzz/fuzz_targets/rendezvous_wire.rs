//! What a hostile peer can send the rendezvous: greetings to rank 0 (hellos, proofs, anything),
//! frames, gathered parts, and a hostile root's answers to a rank. Every input must end in a
//! typed outcome, never a panic, an abort, a hang or an allocation beyond the caps; and nothing
//! but a valid proof of the key may ever let a connection in.

#![no_main]

use baton::rendezvous::auth::Key;
use baton::rendezvous::meet::{self, Greeted};
use baton::rendezvous::wire;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    match mode % 4 {
        0 => {
            let key = Key::derive(b"fuzz-secret-0123456789", "fuzz", "run");
            let size = 2 + (rest.first().copied().unwrap_or(0) as usize % 8);
            let mut d = wire::Duplex::new(rest.to_vec());
            // Rank 0's nonce is fresh each time: no input can carry a proof for it.
            if let Greeted::Rank(m) = meet::greet(&mut d, &key, size) {
                panic!("let in without the key: {m:?}");
            }
            assert!(d.output.len() < 1 << 16, "answers stay small");
        }
        1 => {
            let cap = u64::from(rest.first().copied().unwrap_or(0)) << 8;
            if let Ok((_, body)) = wire::read_frame(rest, cap) {
                assert!(body.len() as u64 <= cap);
            }
        }
        2 => {
            if let Some(parts) = wire::split_parts(rest) {
                assert_eq!(wire::join_parts(&parts), rest);
            }
        }
        _ => {
            for cap in [wire::HELLO_CAP, wire::TABLE_CAP] {
                if let Ok(body) = wire::read_greeting(rest, cap) {
                    assert!(body.len() as u64 <= cap);
                    let _ = serde_json::from_slice::<meet::Answer>(&body);
                }
            }
        }
    }
});
