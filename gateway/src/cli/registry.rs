//! `registry server-json`: the MCP Registry's `server.json` of this
//! gateway (docs/mcp.md "Server Cards and server.json"), generated from the
//! catalog by `crate::server_card`, so it cannot drift from `tools/list`.

use super::{Failure, RegistryCommand, stdout_closed};
use crate::Error;

/// Run one `registry` command.
pub(super) fn run(what: RegistryCommand) -> Result<(), Failure> {
    match what {
        RegistryCommand::ServerJson { public_url, name } => {
            server_json(&public_url, name.as_deref())
        }
    }
}

/// The registry's name rule: `namespace/server`, one slash, 3..200
/// characters (server.json schema `name`).
fn valid_name(name: &str) -> bool {
    let Some((namespace, server)) = name.split_once('/') else {
        return false;
    };
    (3..=200).contains(&name.len())
        && !namespace.is_empty()
        && !server.is_empty()
        && namespace
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-'))
        && server
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// A public URL a remote can name: `http(s)://host...`, no spaces, no
/// query or fragment.
fn valid_public_url(url: &str) -> bool {
    let Some((scheme, rest)) = url.split_once("://") else {
        return false;
    };
    matches!(scheme, "http" | "https")
        && !rest.is_empty()
        && !rest.starts_with('/')
        && !url
            .chars()
            .any(|c| c.is_whitespace() || c == '?' || c == '#')
}

fn server_json(public_url: &str, name: Option<&str>) -> Result<(), Failure> {
    use std::io::Write as _;
    if !valid_public_url(public_url) {
        return Err(Failure::BadInput(
            "--public-url must be an http:// or https:// URL with a host and no query or fragment"
                .into(),
        ));
    }
    if name.is_some_and(|n| !valid_name(n)) {
        return Err(Failure::BadInput(
            "--name must be `namespace/server`: one slash, letters, digits, `.` and `-` in the \
             namespace (plus `_` in the server), 3 to 200 characters"
                .into(),
        ));
    }
    let catalog = crate::catalog::Catalog::load().map_err(|e| Error::Io(e.to_string()))?;
    let doc = crate::server_card::registry_server_json(&catalog, public_url, name);
    let text = serde_json::to_string_pretty(&doc).map_err(|e| Error::Io(e.to_string()))?;
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{text}").and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) => stdout_closed(e),
    }
}
