//! `webdedup server`: a hash server of the block map (the KNOT server).

use anyhow::{Context, Result};
use clap::Args;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;
use webdedup_net::auth::Secret;
use webdedup_net::{Exit, ServerConfig};
use webdedup_store::server_map::ServerAddr;
use webdedup_store::SyncMode;

#[derive(Args, Debug)]
pub struct ServerArgs {
    /// The block map (from `webdedup distribute`): which blocks this server owns.
    #[arg(short = 'm', long = "map", value_name = "FILE")]
    map: PathBuf,
    /// Address to listen on: HOST, HOST:PORT or [IPv6]:PORT.
    #[arg(long, default_value = "127.0.0.1:1234", value_name = "ADDR")]
    listen: String,
    /// Port to listen on (overrides the port of --listen).
    #[arg(short = 'p', long, value_name = "PORT")]
    port: Option<u16>,
    /// How the block map names this server (default: the listen address).
    #[arg(long, value_name = "HOST:PORT")]
    me: Option<String>,
    /// Migration: the previous block map. Blocks this server gained are taken
    /// over from their previous owners before workers are served; blocks it lost
    /// are handed over. A server absent from the new map hands everything over
    /// and exits.
    #[arg(long, value_name = "FILE")]
    from_map: Option<PathBuf>,
    /// Load the keys saved in FILE at start (a snapshot).
    #[arg(long = "load", short_alias = 'i', value_name = "FILE")]
    load: Option<PathBuf>,
    /// Save the keys to FILE on SIGHUP (and go on) and on SIGTERM / SIGINT (and stop).
    #[arg(long = "save", short_alias = 'o', value_name = "FILE")]
    save: Option<PathBuf>,
    /// The journal (default: SAVE.journal). Replayed at start if present: no
    /// acknowledged key is lost when the server is killed.
    #[arg(short = 'j', long, value_name = "FILE")]
    journal: Option<PathBuf>,
    /// Journal durability: `always` (fsync each request), `batch` (fsync within
    /// 50 ms; a killed process loses nothing either way) or `off`.
    #[arg(long, default_value = "batch", value_name = "MODE")]
    fsync: SyncMode,
    /// Preallocate room for about N keys.
    #[arg(long, short_alias = 's', default_value_t = 0, value_name = "N")]
    capacity: usize,
    /// Serve KNOT clients (the one-hash protocol): the store holds their hashes
    /// (settings fixed now, workers are refused), and a connection that does not
    /// open with webdedup's preamble is a KNOT client. Without it, such a
    /// connection is dropped and changes nothing. Excludes --auth-token-file.
    #[arg(long)]
    knot: bool,
    /// Also serve the KNOT one-hash protocol on this port, and only it (implies
    /// --knot).
    #[arg(long, value_name = "PORT")]
    knot_port: Option<u16>,
    /// Serve `/metrics` (Prometheus) and `/status` (JSON) over HTTP at ADDR
    /// (`HOST:PORT`, or a PORT on the --listen host).
    /// Beyond loopback it needs --auth-token-file (or --insecure), as --listen;
    /// with a token, `/status` leaves out the pid, file paths, map and settings.
    #[arg(long, value_name = "ADDR")]
    metrics: Option<String>,
    /// Shared secret (first line of FILE): clients must prove they know it.
    /// Required to listen beyond loopback, unless --insecure.
    #[arg(long, value_name = "FILE")]
    auth_token_file: Option<PathBuf>,
    /// Listen beyond loopback without a shared secret (trusted networks only).
    #[arg(long)]
    insecure: bool,
    /// Largest request frame accepted, in bytes.
    #[arg(long, default_value_t = webdedup_net::wire::DEFAULT_MAX_FRAME, value_name = "BYTES")]
    max_frame: u32,
    /// Memory for frames in flight, all connections together, in MiB (beyond
    /// each connection's 8 KiB buffer); a frame that finds none in time is
    /// refused with "busy". At least --max-frame.
    #[arg(long, default_value_t = webdedup_net::server::DEFAULT_FRAME_MEMORY >> 20, value_name = "MIB")]
    frame_memory: usize,
    /// Most connections past their handshake at once (more are refused with
    /// "busy"); as many more may be in their handshake (10 s at most each).
    #[arg(long, default_value_t = 1024, value_name = "N")]
    max_connections: usize,
    /// Disconnect a client silent this many seconds.
    #[arg(long, default_value_t = 600, value_name = "SECONDS")]
    idle_timeout: u64,
    /// Memory for retry records (verdicts of recent requests), in MiB.
    #[arg(long, default_value_t = 256, value_name = "MIB")]
    retry_memory: usize,
    /// Write the address actually bound to FILE once listening (for launchers).
    #[arg(long, value_name = "FILE")]
    ready_file: Option<PathBuf>,
}

fn socket_addr(s: &str, port: Option<u16>) -> Result<SocketAddr> {
    addr_of("--listen", s, port)
}

/// `--metrics ADDR`: `HOST:PORT`, or a bare port on the `--listen` host (the
/// resolver would read `45096` as the IPv4 address 0.0.176.40).
fn metrics_addr(s: &str, listen: SocketAddr) -> Result<SocketAddr> {
    let s = s.trim();
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        let port = s
            .parse::<u16>()
            .map_err(|_| anyhow::anyhow!("--metrics {s}: bad port (1 to 65535)"))?;
        return Ok(SocketAddr::new(listen.ip(), port));
    }
    addr_of("--metrics", s, None)
}

fn addr_of(flag: &str, s: &str, port: Option<u16>) -> Result<SocketAddr> {
    let a = ServerAddr::parse(s).map_err(|e| anyhow::anyhow!("{flag} {s}: {e}"))?;
    let port = port.unwrap_or(a.port);
    (a.host.as_str(), port)
        .to_socket_addrs()
        .with_context(|| format!("cannot resolve {s}"))?
        .next()
        .with_context(|| format!("{s} resolves to no address"))
}

pub fn run(args: &ServerArgs) -> Result<u8> {
    crate::init_logging();
    let listen = socket_addr(&args.listen, args.port)?;
    let mut cfg = ServerConfig::new(args.map.clone(), listen);
    cfg.me = args
        .me
        .as_deref()
        .map(|m| ServerAddr::parse(m).map_err(|e| anyhow::anyhow!("--me {m}: {e}")))
        .transpose()?;
    cfg.from_map = args.from_map.clone();
    cfg.load = args.load.clone();
    cfg.save = args.save.clone();
    cfg.journal = args.journal.clone();
    cfg.fsync = args.fsync;
    cfg.capacity = args.capacity;
    cfg.knot = args.knot;
    cfg.knot_port = args.knot_port;
    cfg.metrics = args
        .metrics
        .as_deref()
        .map(|m| metrics_addr(m, listen))
        .transpose()?;
    cfg.auth = args
        .auth_token_file
        .as_deref()
        .map(Secret::read)
        .transpose()?;
    cfg.insecure = args.insecure;
    cfg.max_frame = args.max_frame.max(1024);
    cfg.frame_memory = args.frame_memory.saturating_mul(1 << 20);
    cfg.max_connections = args.max_connections.max(1);
    cfg.idle_timeout = Duration::from_secs(args.idle_timeout.max(1));
    cfg.retry_memory = args.retry_memory << 20;
    let ready = args.ready_file.clone();
    let exit = webdedup_net::server::run(cfg, move |bound| {
        if let Some(f) = ready {
            if let Err(e) = std::fs::write(&f, format!("{bound}\n")) {
                tracing::error!("cannot write {}: {e}", f.display());
            }
        }
    })?;
    match exit {
        Exit::Stopped => tracing::info!("stopped"),
        Exit::Finished => tracing::info!("finished: every block handed over"),
    }
    Ok(crate::EXIT_OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bare number is a port on the --listen host, never an IPv4 address
    /// written as one number.
    #[test]
    fn metrics_takes_a_bare_port_on_the_listen_host() {
        let listen: SocketAddr = "127.0.0.1:1234".parse().unwrap();
        assert_eq!(
            metrics_addr("45096", listen).unwrap(),
            "127.0.0.1:45096".parse::<SocketAddr>().unwrap()
        );
        assert_eq!(
            metrics_addr("127.0.0.1:9234", listen).unwrap(),
            "127.0.0.1:9234".parse::<SocketAddr>().unwrap()
        );
        let e = metrics_addr("99999", listen).unwrap_err().to_string();
        assert!(e.contains("--metrics 99999: bad port"), "{e}");
        let e = metrics_addr("a:b", listen).unwrap_err().to_string();
        assert!(e.starts_with("--metrics a:b"), "{e}");
    }
}
