//! Console sessions: a server-side table in this replica's memory.
//!
//! Why a table and not a sealed cookie (docs/console.md "The session"): the cookie must
//! never carry the token, and a sealed cookie holding the grant would stay
//! valid after the token behind it is revoked until its own expiry. With a
//! table the cookie is only a random handle (256 bits from the OS), the
//! grant never leaves the process, sign-out deletes the entry at once, and
//! every request re-reads an API token's revocation from the store (the
//! same rule as `/mcp`: a revocation takes effect on the next request).
//! The cost: sessions are per replica and lost on restart (sign in again;
//! behind a load balancer, route `/console/` sticky, like legacy MCP
//! sessions). Only the SHA-256 of the handle is kept, so a memory dump
//! does not yield a usable cookie.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Duration, Utc};
use sha2::{Digest, Sha256};

use crate::auth::Grant;

/// Longest life of a session; never beyond its grant's own expiry.
pub const SESSION_LIFETIME: Duration = Duration::hours(8);
/// Most sessions one replica holds; over it the session closest to its
/// expiry is dropped (after every expired one), so a flood of sign-ins
/// cannot grow memory without bound.
pub const MAX_SESSIONS: usize = 10_000;

/// One signed-in manager.
#[derive(Debug, Clone)]
pub struct Session {
    pub grant: Arc<Grant>,
    pub expires_at: DateTime<Utc>,
}

/// The table: SHA-256 of the cookie handle -> session.
#[derive(Debug, Default)]
pub struct Sessions {
    table: Mutex<HashMap<[u8; 32], Session>>,
}

fn digest(handle: &str) -> [u8; 32] {
    Sha256::digest(handle.as_bytes()).into()
}

/// Why a session could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("the operating system's random source failed")]
    Random,
}

impl Sessions {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<[u8; 32], Session>> {
        self.table
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Open a session for `grant`; returns the cookie handle and the
    /// session (its expiry: [`SESSION_LIFETIME`] or the grant's, whichever
    /// comes first).
    pub fn open(
        &self,
        grant: Arc<Grant>,
        now: DateTime<Utc>,
    ) -> Result<(String, Session), SessionError> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|_| SessionError::Random)?;
        let handle = hex::encode(bytes);
        let session = Session {
            expires_at: (now + SESSION_LIFETIME).min(grant.expires_at),
            grant,
        };
        let mut table = self.lock();
        if table.len() >= MAX_SESSIONS {
            table.retain(|_, s| s.expires_at > now);
        }
        if table.len() >= MAX_SESSIONS
            && let Some(key) = table
                .iter()
                .min_by_key(|(_, s)| s.expires_at)
                .map(|(k, _)| *k)
        {
            table.remove(&key);
        }
        table.insert(digest(&handle), session.clone());
        Ok((handle, session))
    }

    /// The live session of `handle`; an expired one is removed.
    pub fn get(&self, handle: &str, now: DateTime<Utc>) -> Option<Session> {
        let key = digest(handle);
        let mut table = self.lock();
        match table.get(&key) {
            Some(s) if s.expires_at > now => Some(s.clone()),
            Some(_) => {
                table.remove(&key);
                None
            }
            None => None,
        }
    }

    /// Sign-out (or a revoked credential): forget the session.
    pub fn close(&self, handle: &str) {
        self.lock().remove(&digest(handle));
    }

    /// Sessions held now (tests, bounds).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::{Credential, RooftopScope};

    fn grant(expires_at: DateTime<Utc>) -> Arc<Grant> {
        Arc::new(Grant {
            subject: "manager:test".into(),
            audience: "http://127.0.0.1/mcp".into(),
            organization_id: "org.a".into(),
            rooftops: RooftopScope::Group,
            scopes: std::collections::BTreeSet::new(),
            purpose: "test".into(),
            expires_at,
            delegation: vec![],
            credential: Credential::ApiToken {
                token_id: "0123456789abcdef".into(),
            },
        })
    }

    #[test]
    fn a_session_ends_at_its_lifetime_or_its_grants_expiry_whichever_is_first() {
        let sessions = Sessions::default();
        let now = Utc::now();
        let (_, long) = sessions.open(grant(now + Duration::days(30)), now).unwrap();
        assert_eq!(long.expires_at, now + SESSION_LIFETIME);
        let (handle, short) = sessions
            .open(grant(now + Duration::minutes(5)), now)
            .unwrap();
        assert_eq!(short.expires_at, now + Duration::minutes(5));
        assert!(sessions.get(&handle, now).is_some());
        assert!(sessions.get(&handle, now + Duration::minutes(6)).is_none());
        // The expired entry is gone, not just hidden.
        assert_eq!(sessions.len(), 1);
    }

    #[test]
    fn handles_are_random_hex_and_only_their_digest_is_kept() {
        let sessions = Sessions::default();
        let now = Utc::now();
        let (a, _) = sessions.open(grant(now + Duration::days(1)), now).unwrap();
        let (b, _) = sessions.open(grant(now + Duration::days(1)), now).unwrap();
        assert_ne!(a, b);
        assert_eq!(a.len(), 64);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        let table = sessions.lock();
        assert!(table.contains_key(&digest(&a)));
        assert!(!table.keys().any(|k| hex::encode(k) == a));
    }

    #[test]
    fn the_table_never_holds_more_than_its_bound() {
        let sessions = Sessions::default();
        let now = Utc::now();
        for i in 0..(MAX_SESSIONS + 5) {
            let at = now + Duration::seconds(i64::try_from(i).unwrap());
            sessions.open(grant(at + Duration::days(1)), at).unwrap();
        }
        assert_eq!(sessions.len(), MAX_SESSIONS);
    }

    #[test]
    fn closing_forgets_the_session() {
        let sessions = Sessions::default();
        let now = Utc::now();
        let (handle, _) = sessions.open(grant(now + Duration::days(1)), now).unwrap();
        sessions.close(&handle);
        assert!(sessions.get(&handle, now).is_none());
    }
}
