//! webdedup's hash servers (the KNOT design, seed 000 sections 2.1-2.3): the wire
//! protocol ([`wire`]), the server ([`server`]), the worker's remote store
//! ([`client::RemoteStore`]) and the status probe ([`status`]).
//!
//! ```
//! // A server answers a batch of keys with one bit of verdict per key.
//! use webdedup_net::wire::{bit, pack_bits};
//! let mut bitmap = Vec::new();
//! pack_bits(&[true, false, true], &mut bitmap);
//! assert!(bit(&bitmap, 0) && !bit(&bitmap, 1) && bit(&bitmap, 2));
//! ```

pub mod auth;
pub mod client;
pub mod server;
pub mod status;
pub mod wire;

pub use client::{store_ids, ClientOptions, RemoteStore};
pub use server::{Exit, ServerConfig};
