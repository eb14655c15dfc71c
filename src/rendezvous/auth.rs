//! The rendezvous's proofs: HMAC-SHA256 over both sides' nonces, so each side shows it holds the
//! launch's key without the key ever crossing the wire. A stranger who answers or connects
//! learns one MAC over nonces it cannot choose alone, never the key; MACs are compared in
//! constant time.

use sha2::{Digest, Sha256};

/// A nonce or a MAC.
pub type Block = [u8; 32];

/// The launch's key, derived from its secret: never printed, never sent.
#[derive(Clone)]
pub struct Key(Block);

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Key(…)")
    }
}

impl Key {
    /// The key of one launch and purpose: a `baton ranks` and a `baton run` of one step, or two
    /// steps sharing a secret, never accept each other's ranks.
    pub fn derive(secret: &[u8], launch: &str, purpose: &str) -> Key {
        Key(hmac(
            secret,
            &transcript(&[
                b"baton rendezvous key",
                launch.as_bytes(),
                purpose.as_bytes(),
            ]),
        ))
    }

    /// What rank 0 answers to a hello carrying `peer`'s nonce, with its own.
    pub fn root_proof(&self, peer: &Block, root: &Block) -> Block {
        hmac(&self.0, &transcript(&[b"root", peer, root]))
    }

    /// What a rank sends to be let in: bound to both nonces and to everything it says of itself.
    pub fn peer_proof(&self, root: &Block, peer: &Block, says: &[&[u8]]) -> Block {
        let mut parts: Vec<&[u8]> = vec![b"peer", root, peer];
        parts.extend_from_slice(says);
        hmac(&self.0, &transcript(&parts))
    }
}

/// Parts joined with a length each, so no two lists of parts give the same bytes.
fn transcript(parts: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    for p in parts {
        out.extend_from_slice(&(p.len() as u64).to_le_bytes());
        out.extend_from_slice(p);
    }
    out
}

/// HMAC-SHA256 (RFC 2104).
pub fn hmac(key: &[u8], msg: &[u8]) -> Block {
    const BLOCK: usize = 64;
    let mut k = [0u8; BLOCK];
    if key.len() > BLOCK {
        k[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        k[..key.len()].copy_from_slice(key);
    }
    let pad = |b: u8| k.map(|x| x ^ b);
    let inner = Sha256::new()
        .chain_update(pad(0x36))
        .chain_update(msg)
        .finalize();
    Sha256::new()
        .chain_update(pad(0x5c))
        .chain_update(inner)
        .finalize()
        .into()
}

/// Equal without a timing that tells how many leading bytes matched.
pub fn same(a: &Block, b: &Block) -> bool {
    let diff = a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y));
    std::hint::black_box(diff) == 0
}

/// 32 bytes from the kernel's random source.
pub fn nonce() -> std::io::Result<Block> {
    let mut b = [0u8; 32];
    fill_random(&mut b)?;
    Ok(b)
}

fn fill_random(buf: &mut [u8]) -> std::io::Result<()> {
    let mut got = 0;
    while got < buf.len() {
        // SAFETY: writes at most `buf.len() - got` bytes into the live buffer past `got`.
        let n = unsafe { libc::getrandom(buf[got..].as_mut_ptr().cast(), buf.len() - got, 0) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(e);
            }
        } else {
            got += n as usize;
        }
    }
    Ok(())
}

/// A fresh secret for a launch baton starts itself (node-set steps): 128 random bits as hex.
pub fn fresh_secret() -> std::io::Result<String> {
    let mut b = [0u8; 16];
    fill_random(&mut b)?;
    Ok(hex(&b))
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// `None` unless `s` is exactly 64 hex digits.
pub fn unhex(s: &str) -> Option<Block> {
    let s = s.as_bytes();
    if s.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, pair) in s.chunks(2).enumerate() {
        let d = |c: u8| (c as char).to_digit(16);
        out[i] = (d(pair[0])? * 16 + d(pair[1])?) as u8;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_matches_rfc_4231() {
        // Test cases 1 and 6 (a key longer than the block).
        assert_eq!(
            hex(&hmac(&[0x0b; 20], b"Hi There")),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        );
        assert_eq!(
            hex(&hmac(
                &[0xaa; 131],
                b"Test Using Larger Than Block-Size Key - Hash Key First"
            )),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }

    #[test]
    fn proofs_differ_by_key_launch_purpose_and_side() {
        let (a, b) = ([1u8; 32], [2u8; 32]);
        let k = Key::derive(b"s", "slurm:1.0", "run");
        let p = k.root_proof(&a, &b);
        assert!(same(
            &p,
            &Key::derive(b"s", "slurm:1.0", "run").root_proof(&a, &b)
        ));
        for other in [
            Key::derive(b"t", "slurm:1.0", "run"),
            Key::derive(b"s", "slurm:1.1", "run"),
            Key::derive(b"s", "slurm:1.0", "ranks"),
        ] {
            assert!(!same(&p, &other.root_proof(&a, &b)));
        }
        // A root's proof is no rank's proof (no reflection).
        assert!(!same(&p, &k.peer_proof(&a, &b, &[])));
        assert!(!same(
            &k.peer_proof(&a, &b, &[b"1"]),
            &k.peer_proof(&a, &b, &[b"2"])
        ));
        assert_eq!(format!("{k:?}"), "Key(…)");
    }

    #[test]
    fn hex_round_trips_and_nonces_differ() {
        let n = nonce().unwrap();
        assert_eq!(unhex(&hex(&n)), Some(n));
        assert_ne!(nonce().unwrap(), n);
        assert_eq!(unhex("zz"), None);
        assert_eq!(unhex(&"g".repeat(64)), None);
        assert_eq!(fresh_secret().unwrap().len(), 32);
    }
}
