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
//!
//! The table is bounded so that no manager can take another's place
//! (docs/console.md "The session"): each subject of each organization
//! holds at most [`MAX_SESSIONS_PER_SUBJECT`] sessions, and its next
//! sign-in replaces its own oldest one; an organization holds at most
//! [`MAX_SESSIONS_PER_ORGANIZATION`]; the replica at most
//! [`MAX_SESSIONS`]. A sign-in over the organization's share or the whole
//! bound is refused with a delay to retry after, never made room for by
//! evicting somebody else's session: a flood of sign-ins with one token
//! signs out only that token's own subject.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Duration, Utc};
use sha2::{Digest, Sha256};

use crate::auth::Grant;

/// Longest life of a session; never beyond its grant's own expiry.
pub const SESSION_LIFETIME: Duration = Duration::hours(8);
/// Most sessions one replica holds, so a flood of sign-ins cannot grow
/// memory without bound (about 1 KB each with its grant).
pub const MAX_SESSIONS: usize = 10_000;
/// Most live sessions of one subject of one organization: a manager on a
/// few browsers and devices at once. Its next sign-in replaces its own
/// oldest session.
pub const MAX_SESSIONS_PER_SUBJECT: usize = 5;
/// Most live sessions of one organization (a fifth of [`MAX_SESSIONS`],
/// 400 subjects at the per-subject cap): an organization that mints many
/// subjects (a JWT issuer can) fills its own share, never the table, so at
/// least five organizations would have to fill theirs before any sign-in
/// of a sixth is refused.
pub const MAX_SESSIONS_PER_ORGANIZATION: usize = 2_000;
/// The longest `Retry-After` of a refused sign-in: a slot frees at the
/// soonest expiry, or earlier when somebody signs out.
const MAX_RETRY_AFTER_SECONDS: i64 = 300;

/// One signed-in manager.
#[derive(Debug, Clone)]
pub struct Session {
    pub grant: Arc<Grant>,
    pub expires_at: DateTime<Utc>,
}

/// Who a session belongs to: a subject of an organization (the same
/// subject name in two organizations is two managers).
type Owner = (String, String);

#[derive(Debug, Default)]
struct Table {
    /// SHA-256 of the cookie handle -> session.
    sessions: HashMap<[u8; 32], Session>,
    /// Each owner's sessions, oldest first.
    by_owner: HashMap<Owner, Vec<[u8; 32]>>,
    /// Sessions per organization.
    by_organization: HashMap<String, usize>,
}

fn owner(grant: &Grant) -> Owner {
    (grant.organization_id.clone(), grant.subject.clone())
}

impl Table {
    fn insert(&mut self, key: [u8; 32], session: Session) {
        self.by_owner
            .entry(owner(&session.grant))
            .or_default()
            .push(key);
        *self
            .by_organization
            .entry(session.grant.organization_id.clone())
            .or_default() += 1;
        self.sessions.insert(key, session);
    }

    fn remove(&mut self, key: &[u8; 32]) {
        let Some(session) = self.sessions.remove(key) else {
            return;
        };
        let owner = owner(&session.grant);
        if let Some(keys) = self.by_owner.get_mut(&owner) {
            keys.retain(|k| k != key);
            if keys.is_empty() {
                self.by_owner.remove(&owner);
            }
        }
        let organization = &session.grant.organization_id;
        if let Some(n) = self.by_organization.get_mut(organization) {
            *n -= 1;
            if *n == 0 {
                self.by_organization.remove(organization);
            }
        }
    }

    /// Drops every expired session (one pass; only when a bound is hit).
    fn purge_expired(&mut self, now: DateTime<Utc>) {
        let expired: Vec<[u8; 32]> = self
            .sessions
            .iter()
            .filter(|(_, s)| s.expires_at <= now)
            .map(|(k, _)| *k)
            .collect();
        for key in &expired {
            self.remove(key);
        }
    }

    fn of_owner(&self, owner: &Owner) -> usize {
        self.by_owner.get(owner).map_or(0, Vec::len)
    }

    fn of_organization(&self, organization_id: &str) -> usize {
        self.by_organization
            .get(organization_id)
            .copied()
            .unwrap_or(0)
    }
}

/// The table of one replica's sessions.
#[derive(Debug, Default)]
pub struct Sessions {
    table: Mutex<Table>,
}

fn digest(handle: &str) -> [u8; 32] {
    Sha256::digest(handle.as_bytes()).into()
}

/// Why a session could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("the operating system's random source failed")]
    Random,
    /// The organization holds [`MAX_SESSIONS_PER_ORGANIZATION`] sessions
    /// of other subjects: retry after the given seconds.
    #[error("the organization holds the most console sessions a replica keeps for one")]
    OrganizationFull { retry_after_seconds: u64 },
    /// The replica holds [`MAX_SESSIONS`] sessions: retry after the given
    /// seconds.
    #[error("the replica holds the most console sessions it keeps")]
    Full { retry_after_seconds: u64 },
}

impl SessionError {
    /// The delay a refused sign-in may retry after, if retrying can help.
    pub fn retry_after_seconds(&self) -> Option<u64> {
        match self {
            SessionError::Random => None,
            SessionError::OrganizationFull {
                retry_after_seconds,
            }
            | SessionError::Full {
                retry_after_seconds,
            } => Some(*retry_after_seconds),
        }
    }
}

/// Seconds until the soonest of `expiries` (at least 1, at most
/// [`MAX_RETRY_AFTER_SECONDS`]).
fn retry_after<'a>(expiries: impl Iterator<Item = &'a DateTime<Utc>>, now: DateTime<Utc>) -> u64 {
    let soonest = expiries
        .min()
        .map_or(MAX_RETRY_AFTER_SECONDS, |t| (*t - now).num_seconds());
    u64::try_from(soonest.clamp(1, MAX_RETRY_AFTER_SECONDS)).unwrap_or(1)
}

impl Sessions {
    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Open a session for `grant`; returns the cookie handle and the
    /// session (its expiry: [`SESSION_LIFETIME`] or the grant's, whichever
    /// comes first). Expired sessions are dropped first. The subject's own
    /// oldest sessions give way past [`MAX_SESSIONS_PER_SUBJECT`]; nobody
    /// else's ever does: over the organization's share or the replica's
    /// bound the sign-in is refused. Counts are kept per owner and per
    /// organization, so a sign-in passes over the table only when a bound
    /// is reached (to drop expired sessions first).
    pub fn open(
        &self,
        grant: Arc<Grant>,
        now: DateTime<Utc>,
    ) -> Result<(String, Session), SessionError> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|_| SessionError::Random)?;
        let handle = hex::encode(bytes);
        let mut table = self.lock();
        let who = owner(&grant);
        if table.of_owner(&who) >= MAX_SESSIONS_PER_SUBJECT {
            // The subject's own oldest give way (expired ones first, as
            // they are older), leaving room for this one.
            let keys = table.by_owner.get(&who).cloned().unwrap_or_default();
            for key in &keys[..=keys.len() - MAX_SESSIONS_PER_SUBJECT] {
                table.remove(key);
            }
        } else {
            if table.of_organization(&grant.organization_id) >= MAX_SESSIONS_PER_ORGANIZATION
                || table.sessions.len() >= MAX_SESSIONS
            {
                table.purge_expired(now);
            }
            if table.of_organization(&grant.organization_id) >= MAX_SESSIONS_PER_ORGANIZATION {
                let retry_after_seconds = retry_after(
                    table
                        .sessions
                        .values()
                        .filter(|s| s.grant.organization_id == grant.organization_id)
                        .map(|s| &s.expires_at),
                    now,
                );
                return Err(SessionError::OrganizationFull {
                    retry_after_seconds,
                });
            }
            if table.sessions.len() >= MAX_SESSIONS {
                let retry_after_seconds =
                    retry_after(table.sessions.values().map(|s| &s.expires_at), now);
                return Err(SessionError::Full {
                    retry_after_seconds,
                });
            }
        }
        let session = Session {
            expires_at: (now + SESSION_LIFETIME).min(grant.expires_at),
            grant,
        };
        table.insert(digest(&handle), session.clone());
        Ok((handle, session))
    }

    /// The live session of `handle`; an expired one is removed.
    pub fn get(&self, handle: &str, now: DateTime<Utc>) -> Option<Session> {
        let key = digest(handle);
        let mut table = self.lock();
        match table.sessions.get(&key) {
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
        self.lock().sessions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::{Credential, RooftopScope};

    fn grant_of(organization: &str, subject: &str, expires_at: DateTime<Utc>) -> Arc<Grant> {
        Arc::new(Grant {
            subject: subject.into(),
            audience: "http://127.0.0.1/mcp".into(),
            organization_id: organization.into(),
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

    fn grant(expires_at: DateTime<Utc>) -> Arc<Grant> {
        grant_of("org.a", "manager:test", expires_at)
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
        assert!(table.sessions.contains_key(&digest(&a)));
        assert!(!table.sessions.keys().any(|k| hex::encode(k) == a));
    }

    /// Fills the table with `MAX_SESSIONS` sessions: subjects at their cap,
    /// organizations at their share.
    fn fill(sessions: &Sessions, now: DateTime<Utc>) -> Vec<String> {
        (0..MAX_SESSIONS)
            .map(|i| {
                let org = format!("org.{}", i / MAX_SESSIONS_PER_ORGANIZATION);
                let subject = format!("manager:{}", i / MAX_SESSIONS_PER_SUBJECT);
                let at = now + Duration::milliseconds(i64::try_from(i).unwrap());
                sessions
                    .open(grant_of(&org, &subject, at + Duration::days(1)), at)
                    .unwrap()
                    .0
            })
            .collect()
    }

    #[test]
    fn the_table_never_holds_more_than_its_bound_and_a_full_table_evicts_nobody() {
        let sessions = Sessions::default();
        let now = Utc::now();
        let handles = fill(&sessions, now);
        assert_eq!(sessions.len(), MAX_SESSIONS);
        let later = now + Duration::minutes(1);
        for i in 0..5 {
            let refused = sessions
                .open(
                    grant_of(
                        "org.new",
                        &format!("manager:new{i}"),
                        later + Duration::days(1),
                    ),
                    later,
                )
                .unwrap_err();
            // Retry when the soonest session ends, at most 5 minutes.
            assert!(
                matches!(refused, SessionError::Full { retry_after_seconds } if (1..=300).contains(&retry_after_seconds)),
                "{refused:?}"
            );
        }
        assert_eq!(sessions.len(), MAX_SESSIONS);
        assert!(handles.iter().all(|h| sessions.get(h, later).is_some()));
        // A subject at its cap still signs in, in a full table and a full
        // share: it gives way to itself, its oldest session first.
        let first = grant_of("org.0", "manager:0", later + Duration::days(1));
        sessions.open(first, later).unwrap();
        assert_eq!(sessions.len(), MAX_SESSIONS);
        assert!(sessions.get(&handles[0], later).is_none());
        assert!(
            handles[1..]
                .iter()
                .all(|h| sessions.get(h, later).is_some())
        );
    }

    /// 10,100 sign-ins of one manager (the red team's flood) sign out only
    /// that manager's own older sessions: the other organization's manager
    /// signed in before the flood stays signed in.
    #[test]
    fn a_flood_of_sign_ins_by_one_subject_replaces_only_its_own_oldest_sessions() {
        let sessions = Sessions::default();
        let now = Utc::now();
        let (other, _) = sessions
            .open(grant_of("org.b", "manager:b", now + Duration::days(1)), now)
            .unwrap();
        let (same_name, _) = sessions
            .open(grant_of("org.b", "manager:a", now + Duration::days(1)), now)
            .unwrap();
        let flooder = grant_of("org.a", "manager:a", now + Duration::days(1));
        let mut opened = Vec::new();
        for i in 0..(MAX_SESSIONS + 100) {
            let at = now + Duration::milliseconds(i64::try_from(i).unwrap());
            opened.push(sessions.open(flooder.clone(), at).unwrap().0);
        }
        let later = now + Duration::minutes(1);
        assert!(sessions.get(&other, later).is_some());
        // The same subject name in another organization is somebody else.
        assert!(sessions.get(&same_name, later).is_some());
        let live: Vec<&String> = opened
            .iter()
            .filter(|h| sessions.get(h, later).is_some())
            .collect();
        assert_eq!(
            live,
            opened[opened.len() - MAX_SESSIONS_PER_SUBJECT..]
                .iter()
                .collect::<Vec<_>>(),
            "the newest five of the flood are kept"
        );
        assert_eq!(sessions.len(), MAX_SESSIONS_PER_SUBJECT + 2);
    }

    #[test]
    fn an_organization_at_its_share_is_refused_and_others_still_sign_in() {
        let sessions = Sessions::default();
        let now = Utc::now();
        for i in 0..MAX_SESSIONS_PER_ORGANIZATION {
            sessions
                .open(
                    grant_of("org.big", &format!("manager:{i}"), now + Duration::days(1)),
                    now,
                )
                .unwrap();
        }
        let refused = sessions
            .open(
                grant_of("org.big", "manager:new", now + Duration::days(1)),
                now,
            )
            .unwrap_err();
        assert!(
            matches!(refused, SessionError::OrganizationFull { .. }),
            "{refused:?}"
        );
        assert_eq!(refused.retry_after_seconds(), Some(300));
        sessions
            .open(
                grant_of("org.small", "manager:x", now + Duration::days(1)),
                now,
            )
            .unwrap();
        assert_eq!(sessions.len(), MAX_SESSIONS_PER_ORGANIZATION + 1);
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
