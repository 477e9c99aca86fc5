//! `Dedup(map=PATH)`: the hash servers of a block map as the store, and the
//! seed's `start_servers` / `stop_servers` / `test_servers` for the servers of
//! that map on this machine. As in the seed, started servers outlive the
//! interpreter until stopped: each runs in its own process group, with its pid
//! and log in `MAP.servers/PORT.pid` and `PORT.log`, so any later `Dedup` over the
//! same map can stop them.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use webdedup_net::ClientOptions;
use webdedup_store::server_map::{ServerAddr, ServerMap};
use webdedup_store::Store;
use webdedup_store_spec::{KeySet, OpenOptions, StoreSpec};

pub struct Servers {
    path: PathBuf,
    map: ServerMap,
    keys: KeySet,
    store_dir: Option<PathBuf>,
    timeout: Duration,
    remote: OnceLock<Box<dyn Store>>,
    salt: u64,
}

/// A salt for the ids of one Python object's requests, apart from every other
/// process's (and every other object's of this one, made at another instant).
pub fn salt() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
        ^ ((std::process::id() as u64) << 32)
}

fn is_local(host: &str) -> bool {
    matches!(host, "localhost" | "::1") || host.starts_with("127.")
}

extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}

fn alive(pid: i32) -> bool {
    // SAFETY: kill(2) with signal 0 only checks that the process exists.
    pid > 0 && unsafe { libc_kill(pid, 0) } == 0
}

impl Servers {
    /// `port`: the seed's one port for all servers. The block map names each
    /// server's port, so a port given here is checked against it, never applied
    /// behind the servers' backs (they read the same map).
    pub fn new(
        path: PathBuf,
        port: Option<u16>,
        keys: KeySet,
        store_dir: Option<PathBuf>,
        timeout: Duration,
    ) -> Result<Servers, String> {
        let map = ServerMap::read(&path).map_err(|e| e.to_string())?;
        if let Some(port) = port {
            let other = map.servers_off_port(port);
            if !other.is_empty() {
                return Err(format!(
                    "{}: port={port}, but the map puts servers on other ports: {}",
                    path.display(),
                    other.join(", ")
                ));
            }
        }
        if map.blocks != keys.meta.blocks {
            return Err(format!(
                "{} has {} blocks, this Dedup {}",
                path.display(),
                map.blocks,
                keys.meta.blocks
            ));
        }
        Ok(Servers {
            path,
            map,
            keys,
            store_dir,
            timeout,
            remote: OnceLock::new(),
            // Worker requests carry ids unique to this Dedup: salt them apart.
            salt: salt(),
        })
    }

    /// The remote store, connected at first use (opened as the command line opens
    /// `--servers MAP`).
    pub fn store(&self) -> Result<&dyn Store, String> {
        if let Some(r) = self.remote.get() {
            return Ok(r.as_ref());
        }
        let spec = StoreSpec::Servers {
            map: self.path.clone(),
            token_file: None,
            give_up_after: self.timeout,
        };
        let opts = OpenOptions {
            salt: self.salt,
            quiet: true,
            ..Default::default()
        };
        let r = spec
            .open(&self.keys, &opts)
            .map_err(|e| format!("{e:#}"))?
            .into_store();
        let _ = self.remote.set(r);
        Ok(self.remote.get().expect("just set").as_ref())
    }

    fn run_dir(&self) -> PathBuf {
        let mut s = self.path.as_os_str().to_owned();
        s.push(".servers");
        PathBuf::from(s)
    }

    fn pid_file(&self, a: &ServerAddr) -> PathBuf {
        self.run_dir().join(format!("{}.pid", a.port))
    }

    fn read_pid(path: &Path) -> Option<i32> {
        std::fs::read_to_string(path).ok()?.trim().parse().ok()
    }

    fn local(&self) -> impl Iterator<Item = &ServerAddr> {
        self.map
            .servers
            .iter()
            .map(|s| &s.addr)
            .filter(|a| is_local(&a.host))
    }

    /// Starts a server for each local server of the map not running yet; waits
    /// until all listen.
    pub fn start(&self) -> Result<(), String> {
        let bin = std::env::var("WEBDEDUP_BIN").unwrap_or_else(|_| "webdedup".into());
        let dir = self.run_dir();
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut started = Vec::new();
        for a in self.local() {
            let pid_file = self.pid_file(a);
            if Self::read_pid(&pid_file).is_some_and(alive) {
                continue;
            }
            let ready = dir.join(format!("{}.ready", a.port));
            let _ = std::fs::remove_file(&ready);
            let log_path = dir.join(format!("{}.log", a.port));
            let log = std::fs::File::create(&log_path)
                .map_err(|e| format!("{}: {e}", log_path.display()))?;
            let mut cmd = Command::new(&bin);
            cmd.arg("server")
                .arg("-m")
                .arg(&self.path)
                .arg("--listen")
                .arg(a.to_string())
                .arg("--ready-file")
                .arg(&ready);
            if let Some(d) = &self.store_dir {
                std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
                let snap = d.join(format!("server-{}.snap", a.port));
                cmd.arg("--load").arg(&snap).arg("--save").arg(&snap);
            }
            // Its own process group: a Ctrl-C in the notebook does not stop it.
            let child = cmd
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log)
                .process_group(0)
                .spawn()
                .map_err(|e| {
                    let why = if std::env::var_os("WEBDEDUP_BIN").is_some() {
                        format!("cannot start `{bin} server` (WEBDEDUP_BIN): {e}")
                    } else {
                        format!(
                            "cannot start `{bin} server`: {e} (no webdedup binary on the PATH: \
                             install it, or set WEBDEDUP_BIN to the webdedup binary)"
                        )
                    };
                    // The log is where a user looks first: it says it too.
                    let _ = std::fs::write(&log_path, format!("{why}\n"));
                    why
                })?;
            std::fs::write(&pid_file, format!("{}\n", child.id())).map_err(|e| e.to_string())?;
            started.push((child, ready, a.to_string()));
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        for (child, ready, addr) in &mut started {
            while !ready.exists() {
                if let Ok(Some(status)) = child.try_wait() {
                    return Err(format!(
                        "server {addr} exited at start ({status}); see {}",
                        self.run_dir().display()
                    ));
                }
                if Instant::now() > deadline {
                    return Err(format!("server {addr} did not start within 30 s"));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        Ok(())
    }

    /// SIGTERM to every local server with a pid file (they save and exit); waits
    /// for them. Errors name the servers that would not stop.
    pub fn stop(&self) -> Result<(), String> {
        let mut stuck = Vec::new();
        for a in self.local() {
            let pid_file = self.pid_file(a);
            let Some(pid) = Self::read_pid(&pid_file) else {
                continue;
            };
            if alive(pid) {
                // SAFETY: kill(2) on a pid this map's start_servers recorded.
                unsafe { libc_kill(pid, 15) };
                let deadline = Instant::now() + Duration::from_secs(120);
                while alive(pid) && Instant::now() < deadline {
                    // Reap it if it is our child (a zombie counts as alive).
                    let mut status = 0;
                    unsafe { waitpid(pid, &mut status, 1) };
                    std::thread::sleep(Duration::from_millis(20));
                }
                if alive(pid) {
                    stuck.push(a.to_string());
                    continue;
                }
            }
            let _ = std::fs::remove_file(&pid_file);
        }
        if stuck.is_empty() {
            Ok(())
        } else {
            Err(format!("servers still running: {}", stuck.join(", ")))
        }
    }

    /// Ok if every server of the map answers and is ready.
    pub fn test(&self) -> Result<(), String> {
        let opts = ClientOptions {
            connect_timeout: Duration::from_secs(2),
            verbose: false,
            ..Default::default()
        };
        let bad: Vec<String> = webdedup_net::status::probe(&self.map, &opts)
            .into_iter()
            .filter(|r| !(r.state == "ready" && r.note.is_none()))
            .map(|r| {
                format!(
                    "{} {}{}",
                    r.server,
                    r.state,
                    r.note.map(|n| format!(" ({n})")).unwrap_or_default()
                )
            })
            .collect();
        if bad.is_empty() {
            Ok(())
        } else {
            Err(bad.join("; "))
        }
    }
}

extern "C" {
    fn waitpid(pid: i32, status: *mut i32, options: i32) -> i32;
}
