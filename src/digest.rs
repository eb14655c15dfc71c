//! The one content hash baton names things by (results in the history, job identities, site
//! files, run IDs, acceptance directories): `sha256:` and 64 lowercase hex digits, so every
//! record that shows one can be compared with any other by eye or by `sha256sum`.

use sha2::{Digest, Sha256};

/// `sha256:…` of `bytes`.
pub fn sha256_id(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(71);
    out.push_str("sha256:");
    for b in Sha256::digest(bytes) {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn it_is_sha256sum_s_digest_with_its_prefix() {
        assert_eq!(
            super::sha256_id(b"abc"),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
