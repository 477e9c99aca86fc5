//! Stores answer one question, in batches: "have I seen this 64-bit key before?"
//!
//! [`Store`] is the trait every home of the key set implements (the embedded
//! [`MemStore`] here; the server cluster and Redis later). [`block_of`] is the rule
//! that splits the key space into blocks, the unit of persistence, ownership and
//! migration.

mod mem;
mod table;

pub use mem::MemStore;

/// Default number of blocks: a prime, as in the KNOT system.
pub const DEFAULT_BLOCKS: u32 = 1999;

/// The block of a key: its big-endian bytes read as an unsigned integer, modulo the
/// block count (the KNOT clients' rule). On a `u64` that is simply `key % blocks`.
#[inline]
pub fn block_of(key: u64, blocks: u32) -> u32 {
    (key % blocks as u64) as u32
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("store unavailable: {0}")]
    Unavailable(String),
    #[error("store settings mismatch: {0}")]
    Mismatch(String),
}

/// A set of 64-bit keys with batched test-and-insert.
///
/// Contract: the batch behaves exactly as if its keys were tested and inserted one
/// by one in order, so a key repeated inside one batch is new the first time and
/// seen the second time.
pub trait Store: Send + Sync {
    /// For each key in order, pushes onto `seen` whether it was already present, and
    /// inserts it. `seen` is cleared first.
    fn test_and_insert(&self, keys: &[u64], seen: &mut Vec<bool>) -> Result<(), StoreError>;

    /// Number of distinct keys stored.
    fn len(&self) -> u64;

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of memory the store holds for its keys (tables, not process overhead).
    fn memory_bytes(&self) -> u64;

    /// Block count of the store's key space.
    fn blocks(&self) -> u32;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_is_big_endian_integer_modulo_blocks() {
        let key: u64 = 0x0102_0304_0506_0708;
        let be = u128::from_be_bytes({
            let mut b = [0u8; 16];
            b[8..].copy_from_slice(&key.to_be_bytes());
            b
        });
        assert_eq!(block_of(key, 1999) as u128, be % 1999);
        assert_eq!(block_of(u64::MAX, 1999), (u64::MAX % 1999) as u32);
    }
}
