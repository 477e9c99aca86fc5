//! Shared-secret authentication: a challenge-response in the handshake, so the
//! secret never crosses the wire and an eavesdropped answer cannot be replayed
//! (each connection gets a fresh random challenge and client nonce).

use anyhow::{bail, Context, Result};
use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::path::Path;

/// The shared secret of a cluster (`--auth-token-file`).
#[derive(Clone)]
pub struct Secret(Vec<u8>);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

/// Fewest bytes a token may have: shorter ones are guessable.
pub const MIN_TOKEN_BYTES: usize = 16;

impl Secret {
    /// Reads the token file: its first line, trimmed.
    pub fn read(path: &Path) -> Result<Secret> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the auth token file {}", path.display()))?;
        let token = text.lines().next().unwrap_or("").trim();
        if token.len() < MIN_TOKEN_BYTES {
            bail!(
                "{}: the auth token has {} bytes; use at least {MIN_TOKEN_BYTES} (e.g. `head -c 32 /dev/urandom | base64`)",
                path.display(),
                token.len()
            );
        }
        Ok(Secret(token.as_bytes().to_vec()))
    }

    pub fn from_bytes(b: &[u8]) -> Secret {
        Secret(b.to_vec())
    }

    /// The keyed MAC one side proves itself with: each side has its own label and
    /// order, so a client's answer never passes as a server's proof.
    fn side_mac(&self, side: Side, challenge: &[u8; 32], nonce: &[u8; 16]) -> Hmac<Sha256> {
        let (label, first, second): (&[u8], &[u8], &[u8]) = match side {
            Side::Client => (b"webdedup-v1 client", challenge, nonce),
            Side::Server => (b"webdedup-v1 server", nonce, challenge),
        };
        let mut m = Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes keys of any length");
        m.update(label);
        m.update(first);
        m.update(second);
        m
    }

    /// The client's answer to a challenge.
    pub fn client_proof(&self, challenge: &[u8; 32], nonce: &[u8; 16]) -> [u8; 32] {
        let m = self.side_mac(Side::Client, challenge, nonce);
        m.finalize().into_bytes().into()
    }

    /// The server's proof back to the client.
    pub fn server_proof(&self, challenge: &[u8; 32], nonce: &[u8; 16]) -> [u8; 32] {
        let m = self.side_mac(Side::Server, challenge, nonce);
        m.finalize().into_bytes().into()
    }

    /// Constant-time check of a client's answer.
    pub fn verify_client(&self, challenge: &[u8; 32], nonce: &[u8; 16], mac: &[u8; 32]) -> bool {
        let m = self.side_mac(Side::Client, challenge, nonce);
        m.verify_slice(mac).is_ok()
    }

    /// Constant-time check of a server's proof.
    pub fn verify_server(&self, challenge: &[u8; 32], nonce: &[u8; 16], mac: &[u8; 32]) -> bool {
        let m = self.side_mac(Side::Server, challenge, nonce);
        m.verify_slice(mac).is_ok()
    }
}

/// Who proves knowing the secret in the handshake.
#[derive(Clone, Copy)]
enum Side {
    Client,
    Server,
}

/// Random bytes from the operating system.
pub fn random<const N: usize>() -> [u8; N] {
    let mut b = [0u8; N];
    getrandom::fill(&mut b).expect("the operating system's random source failed");
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proofs_check_and_differ_by_direction_and_secret() {
        let s = Secret::from_bytes(b"0123456789abcdef0123");
        let other = Secret::from_bytes(b"0123456789abcdef0124");
        let (c, n) = (random::<32>(), random::<16>());
        let p = s.client_proof(&c, &n);
        assert!(s.verify_client(&c, &n, &p));
        assert!(!other.verify_client(&c, &n, &p));
        assert!(
            !s.verify_server(&c, &n, &p),
            "a client proof is not a server proof"
        );
        assert!(
            !s.verify_client(&random::<32>(), &n, &p),
            "an answer to another challenge"
        );
        assert!(s.verify_server(&c, &n, &s.server_proof(&c, &n)));
    }

    #[test]
    fn short_tokens_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("t");
        std::fs::write(&f, "short\n").unwrap();
        let e = Secret::read(&f).unwrap_err().to_string();
        assert!(e.contains("at least 16"), "{e}");
        std::fs::write(&f, "a-long-enough-secret-token\nignored").unwrap();
        assert!(Secret::read(&f).is_ok());
    }
}
