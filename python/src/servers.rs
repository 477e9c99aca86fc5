//! `Dedup(map=PATH)`: the hash servers of a block map as the store, and the
//! seed's `start_servers` / `stop_servers` / `test_servers` for the servers of
//! that map on this machine.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use parking_lot::Mutex;
use webdedup_net::{ClientOptions, RemoteStore};
use webdedup_store::server_map::ServerMap;
use webdedup_store::{Store, StoreMeta};

pub struct Servers {
    path: PathBuf,
    map: ServerMap,
    meta: StoreMeta,
    store_dir: Option<PathBuf>,
    remote: OnceLock<RemoteStore>,
    children: Mutex<Vec<Child>>,
    salt: u64,
}

fn is_local(host: &str) -> bool {
    matches!(host, "127.0.0.1" | "localhost" | "::1") || host.starts_with("127.")
}

impl Servers {
    pub fn new(path: PathBuf, meta: StoreMeta, store_dir: Option<PathBuf>) -> Result<Servers, String> {
        let map = ServerMap::read(&path).map_err(|e| e.to_string())?;
        if map.blocks != meta.blocks {
            return Err(format!("{} has {} blocks, this Dedup {}", path.display(), map.blocks, meta.blocks));
        }
        // Worker requests carry ids unique to this Dedup: salt them apart.
        let salt = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
            ^ ((std::process::id() as u64) << 32);
        Ok(Servers { path, map, meta, store_dir, remote: OnceLock::new(), children: Mutex::new(Vec::new()), salt })
    }

    /// The remote store, connected at first use.
    pub fn store(&self) -> Result<&dyn Store, String> {
        if let Some(r) = self.remote.get() {
            return Ok(r);
        }
        let opts = ClientOptions { verbose: false, ..Default::default() };
        let r = RemoteStore::connect(self.map.clone(), self.meta.clone(), opts, self.salt)
            .map_err(|e| format!("cannot use the servers of {}: {e}", self.path.display()))?;
        let _ = self.remote.set(r);
        Ok(self.remote.get().expect("just set"))
    }

    fn binary() -> String {
        std::env::var("WEBDEDUP_BIN").unwrap_or_else(|_| "webdedup".into())
    }

    /// Starts a server for each local server of the map; waits until all listen.
    pub fn start(&self) -> Result<(), String> {
        let ready_dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let mut started = Vec::new();
        for s in self.map.servers.iter().filter(|s| is_local(&s.addr.host)) {
            let ready = ready_dir.path().join(format!("ready-{}", s.addr.port));
            let mut cmd = Command::new(Self::binary());
            cmd.arg("server").arg("-m").arg(&self.path).arg("--listen").arg(s.addr.to_string()).arg("--ready-file").arg(&ready);
            if let Some(d) = &self.store_dir {
                std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
                let snap = d.join(format!("server-{}.snap", s.addr.port));
                cmd.arg("-i").arg(&snap).arg("-o").arg(&snap);
            }
            let child = cmd
                .stdin(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| format!("cannot start {} server: {e} (set WEBDEDUP_BIN to the webdedup binary)", Self::binary()))?;
            started.push((child, ready, s.addr.to_string()));
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut failed = None;
        for (child, ready, addr) in &mut started {
            while !ready.exists() {
                if let Ok(Some(status)) = child.try_wait() {
                    failed = Some(format!("server {addr} exited at start ({status})"));
                    break;
                }
                if Instant::now() > deadline {
                    failed = Some(format!("server {addr} did not start within 30 s"));
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        self.children.lock().extend(started.into_iter().map(|(c, _, _)| c));
        match failed {
            Some(e) => {
                self.stop();
                Err(e)
            }
            None => Ok(()),
        }
    }

    /// SIGTERM to every started server (they save and exit); 0 if all exited cleanly.
    pub fn stop(&self) -> i32 {
        let mut bad = 0;
        for mut c in self.children.lock().drain(..) {
            // SAFETY: kill(2) on the pid of a child we own and have not reaped.
            let sent = unsafe { libc_kill(c.id() as i32, 15) } == 0;
            match c.wait() {
                Ok(s) if sent && s.success() => {}
                _ => bad = 1,
            }
        }
        bad
    }

    /// 0 if every server of the map answers and is ready.
    pub fn test(&self) -> i32 {
        let opts = ClientOptions { connect_timeout: Duration::from_secs(2), verbose: false, ..Default::default() };
        let reports = webdedup_net::status::probe(&self.map, &opts);
        i32::from(!reports.iter().all(|r| r.state == "ready" && r.note.is_none()))
    }
}

extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}

impl Drop for Servers {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}
