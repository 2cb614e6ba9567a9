//! nginx from Debian in front of the replicas (scripts/replicas-check
//! provides the binary), started and stopped by the tests.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::common::temp_dir;

/// A running nginx.
pub(super) struct Balancer {
    child: tokio::process::Child,
    dir: PathBuf,
}

impl Balancer {
    /// nginx in front of `backends`, one `server` block per port in
    /// `listeners` (port, how many of the backends it balances over).
    pub(super) async fn start(
        nginx: &Path,
        backends: &[String],
        listeners: &[(u16, usize)],
    ) -> Self {
        let mut http = String::new();
        for (i, (port, n)) in listeners.iter().enumerate() {
            http.push_str(&format!("    upstream gateway{i} {{\n"));
            for b in &backends[..*n] {
                http.push_str(&upstream_server(b));
            }
            http.push_str("    }\n");
            http.push_str(&format!(
                "    server {{\n        listen 127.0.0.1:{port};\n        location / {{\n            proxy_pass http://gateway{i};\n        }}\n    }}\n"
            ));
        }
        let ports: Vec<u16> = listeners.iter().map(|(p, _)| *p).collect();
        Self::start_with(nginx, &http, &ports).await
    }

    /// nginx with `http` (upstreams, maps and servers) inside the shared
    /// `http` block; ready once every port in `ports` answers `/readyz`.
    pub(super) async fn start_with(nginx: &Path, http: &str, ports: &[u16]) -> Self {
        let dir = temp_dir().join("nginx");
        for sub in ["body", "proxy", "fastcgi", "uwsgi", "scgi", "logs"] {
            std::fs::create_dir_all(dir.join(sub)).expect("nginx dirs");
        }
        // The workers drop root to `nobody`; they write their temp files
        // here.
        let _ = std::process::Command::new("chmod")
            .args(["-R", "a+rwx"])
            .arg(&dir)
            .status();
        let d = dir.display();
        let conf = format!(
            "daemon off;\nmaster_process on;\nworker_processes 1;\npid {d}/nginx.pid;\nerror_log stderr warn;\n\
             events {{ worker_connections 1024; }}\n\
             http {{\n    access_log off;\n    client_body_temp_path {d}/body;\n    proxy_temp_path {d}/proxy;\n\
             fastcgi_temp_path {d}/fastcgi;\n    uwsgi_temp_path {d}/uwsgi;\n    scgi_temp_path {d}/scgi;\n\
             proxy_http_version 1.1;\n    proxy_set_header Host $http_host;\n    proxy_set_header Connection \"\";\n\
             proxy_connect_timeout 1s;\n    proxy_read_timeout 30s;\n\
             # Every MCP request of this gateway is a read (DAP is read-only), so a\n\
             # POST whose replica died mid-request may be sent to another one.\n\
             proxy_next_upstream error timeout http_502 http_503 non_idempotent;\n\
             proxy_next_upstream_tries 3;\n{http}}}\n"
        );
        let conf_path = dir.join("nginx.conf");
        std::fs::write(&conf_path, conf).expect("nginx.conf");
        let child = tokio::process::Command::new(nginx)
            .arg("-p")
            .arg(&dir)
            .arg("-c")
            .arg(&conf_path)
            .arg("-e")
            .arg("stderr")
            .stdout(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("nginx starts");
        let balancer = Self { child, dir };
        let http = reqwest::Client::new();
        for port in ports {
            let url = format!("http://127.0.0.1:{port}/readyz");
            let ready = crate::common::poll_until(Duration::from_secs(20), || async {
                http.get(&url)
                    .send()
                    .await
                    .is_ok_and(|r| r.status().is_success())
            })
            .await;
            assert!(ready, "nginx answers on {port}");
        }
        balancer
    }
}

/// One backend of an `upstream` block: one failure takes it out for 2 s;
/// a refused or reset connection is retried on the next one.
pub(super) fn upstream_server(backend: &str) -> String {
    format!("        server {backend} max_fails=1 fail_timeout=2s;\n")
}

impl Drop for Balancer {
    fn drop(&mut self) {
        // SIGTERM: the master stops its workers (a SIGKILLed master leaves
        // them running, still listening). SIGKILL only if it is still there.
        if let Some(pid) = self.child.id() {
            let _ = std::process::Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .status();
            for _ in 0..50 {
                if matches!(self.child.try_wait(), Ok(Some(_))) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let _ = self.child.start_kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
