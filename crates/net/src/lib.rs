//! webdedup's hash servers (the KNOT design, seed 000 sections 2.1-2.3): the wire
//! protocol ([`wire`]), the server ([`server`]), the worker's remote store
//! ([`client::RemoteStore`]) and the status probe ([`status`]).

pub mod auth;
pub mod client;
pub mod server;
pub mod status;
pub mod wire;

pub use client::{ClientOptions, RemoteStore};
pub use server::{Exit, ServerConfig};
