//! `--metrics ADDR`: `/metrics` in the Prometheus text format and `/status` as
//! JSON, over a deliberately tiny HTTP/1.0 responder (one request a connection),
//! so monitoring needs no client of ours.

use super::Shared;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Requests served at once; more connections wait in the kernel's backlog.
const MAX_AT_ONCE: usize = 64;

pub(crate) async fn serve(
    listener: TcpListener,
    shared: Arc<Shared>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let at_once = Arc::new(tokio::sync::Semaphore::new(MAX_AT_ONCE));
    loop {
        let Ok(permit) = at_once.clone().acquire_owned().await else {
            return;
        };
        let accepted = tokio::select! {
            biased;
            _ = stop.wait_for(|&s| s) => return,
            r = listener.accept() => r,
        };
        let Ok((mut sock, _)) = accepted else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let shared = shared.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let mut buf = vec![0u8; 2048];
            let mut len = 0;
            // Read the request head (bounded, with a deadline).
            let read = tokio::time::timeout(Duration::from_secs(5), async {
                while len < buf.len() {
                    match sock.read(&mut buf[len..]).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => len += n,
                    }
                    if buf[..len].windows(4).any(|w| w == b"\r\n\r\n")
                        || buf[..len].windows(2).any(|w| w == b"\n\n")
                    {
                        break;
                    }
                }
            })
            .await;
            if read.is_err() {
                return;
            }
            let line = String::from_utf8_lossy(&buf[..len]);
            let path = line.split_whitespace().nth(1).unwrap_or("");
            let (status, ctype, body) = match path {
                "/metrics" => (
                    "200 OK",
                    "text/plain; version=0.0.4",
                    tokio::task::block_in_place(|| prometheus(&shared)),
                ),
                "/status" => (
                    "200 OK",
                    "application/json",
                    tokio::task::block_in_place(|| shared.public_status_json()).to_string() + "\n",
                ),
                _ => (
                    "404 Not Found",
                    "text/plain",
                    "try /metrics or /status\n".to_string(),
                ),
            };
            let head = format!(
                "HTTP/1.0 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = tokio::time::timeout(Duration::from_secs(5), async {
                let _ = sock.write_all(head.as_bytes()).await;
                let _ = sock.write_all(body.as_bytes()).await;
                let _ = sock.shutdown().await;
            })
            .await;
        });
    }
}

/// The figures of [`Shared::status_json`] as Prometheus metrics.
pub(crate) fn prometheus(shared: &Shared) -> String {
    let s = shared.status_json();
    let mut out = String::new();
    let mut metric = |name: &str, kind: &str, help: &str, value: f64| {
        let _ = writeln!(
            out,
            "# HELP webdedup_{name} {help}\n# TYPE webdedup_{name} {kind}\nwebdedup_{name} {value}"
        );
    };
    let num = |k: &str| s[k].as_f64().unwrap_or(0.0);
    metric("keys", "gauge", "Keys held.", num("keys"));
    metric(
        "memory_bytes",
        "gauge",
        "Bytes of the key tables.",
        num("memory_bytes"),
    );
    metric(
        "blocks_owned",
        "gauge",
        "Blocks this server owns under its map.",
        num("blocks_owned"),
    );
    metric(
        "requests_total",
        "counter",
        "Batched requests answered.",
        num("requests"),
    );
    metric(
        "retried_requests_total",
        "counter",
        "Requests answered from retry records.",
        num("retried_requests"),
    );
    metric(
        "keys_tested_total",
        "counter",
        "Keys tested.",
        num("keys_tested"),
    );
    metric(
        "keys_inserted_total",
        "counter",
        "Keys inserted (new).",
        num("keys_inserted"),
    );
    metric(
        "knot_requests_total",
        "counter",
        "KNOT one-hash requests.",
        num("knot_requests"),
    );
    metric(
        "connections",
        "gauge",
        "Open connections.",
        num("connections"),
    );
    metric(
        "connections_total",
        "counter",
        "Connections accepted.",
        num("connections_total"),
    );
    metric(
        "rejected_connections_total",
        "counter",
        "Connections refused: no free slot, or no memory for a frame in time (busy).",
        num("rejected_connections"),
    );
    metric(
        "bad_frames_total",
        "counter",
        "Connections dropped for malformed input (or, KNOT, a hash of a block not served here).",
        num("bad_frames"),
    );
    metric(
        "auth_failures_total",
        "counter",
        "Failed authentications.",
        num("auth_failures"),
    );
    metric(
        "connections_in_handshake",
        "gauge",
        "Connections still in their handshake (they hold no slot).",
        num("connections_in_handshake"),
    );
    metric(
        "evicted_connections_total",
        "counter",
        "Connections evicted from a full handshake room (the oldest first).",
        num("evicted_connections"),
    );
    metric(
        "frame_memory_bytes",
        "gauge",
        "Bytes of frames in flight taken from the frame budget.",
        num("frame_memory_bytes"),
    );
    metric(
        "frame_memory_limit_bytes",
        "gauge",
        "The frame budget (--frame-memory).",
        num("frame_memory_limit"),
    );
    metric(
        "uptime_seconds",
        "gauge",
        "Seconds since start.",
        num("uptime_seconds"),
    );
    metric(
        "journal_present",
        "gauge",
        "1 if the journal file exists.",
        s["journal_present"]
            .as_bool()
            .map_or(0.0, |b| b as u8 as f64),
    );
    let _ = writeln!(out, "# HELP webdedup_migration_blocks_pending Blocks still to take over (in) or hand over (out).\n# TYPE webdedup_migration_blocks_pending gauge");
    for (dir, label) in [("incoming", "in"), ("outgoing", "out")] {
        let v = s["migration"][format!("{dir}_pending")]
            .as_f64()
            .unwrap_or(0.0);
        let _ = writeln!(
            out,
            "webdedup_migration_blocks_pending{{direction=\"{label}\"}} {v}"
        );
    }
    let _ = writeln!(
        out,
        "# HELP webdedup_state 1 for the server's current state.\n# TYPE webdedup_state gauge"
    );
    let state = s["state"].as_str().unwrap_or("");
    for st in ["starting", "migrating", "ready", "finished"] {
        let _ = writeln!(
            out,
            "webdedup_state{{state=\"{st}\"}} {}",
            (st == state) as u8
        );
    }
    out
}
