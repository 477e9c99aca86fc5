//! A real `redis-server` on loopback for the tests of the Redis / Valkey store
//! (`scripts/deps.sh` installs Debian's redis-server; the tests fail, they do not
//! skip, when it is missing).

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A port for a node: a cluster node also listens on port + 10000, so both must be
/// free and below 65536.
fn node_port() -> u16 {
    loop {
        let p = super::free_port();
        if p < 55000 && TcpListener::bind(("127.0.0.1", p + 10000)).is_ok() {
            return p;
        }
    }
}

/// `redis-cli -p PORT ARGS...`: its standard output.
pub fn cli(port: u16, args: &[&str]) -> String {
    let o = Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(args)
        .output()
        .expect("redis-cli (install redis-tools / redis-server: scripts/deps.sh)");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A redis-server on loopback, killed on drop.
pub struct Node {
    pub port: u16,
    child: Child,
    _dir: tempfile::TempDir,
}

impl Node {
    /// A node of its own (of a cluster, with `cluster`), answering PING.
    pub fn start(cluster: bool) -> Node {
        Node::start_with(cluster, &[], "")
    }

    /// A node with more `redis-server` options; `password`: its `requirepass`.
    pub fn start_with(cluster: bool, extra: &[&str], password: &str) -> Node {
        let dir = tempfile::tempdir().unwrap();
        let port = node_port();
        let mut cmd = Command::new("redis-server");
        cmd.args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--set-max-intset-entries",
            "4096",
            "--dir",
            dir.path().to_str().unwrap(),
        ]);
        if cluster {
            cmd.args([
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                "nodes.conf",
            ]);
        }
        cmd.args(extra);
        if !password.is_empty() {
            cmd.args(["--requirepass", password]);
        }
        let child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server (scripts/deps.sh installs it)");
        let node = Node {
            port,
            child,
            _dir: dir,
        };
        let start = Instant::now();
        let ping = |port| {
            if password.is_empty() {
                cli(port, &["PING"])
            } else {
                cli(port, &["-a", password, "--no-auth-warning", "PING"])
            }
        };
        while ping(port).trim() != "PONG" {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "redis-server did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        node
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
