//! The store's one error type, and how a driver failure becomes one
//! (`From<sqlx::Error>`, so every statement ends in `?`).
//!
//! The classification that matters to callers is [`StoreError::Unavailable`]:
//! the database could not be reached or refused to work for now (a transient
//! outage). The tool layer answers it as the retryable
//! `dealeragent.upstream.unavailable` with a retry hint, never as
//! `dealeragent.internal` (the error guide: `crate::errors`).

use super::ROOFTOP_ID_INDEX;

/// Failures of the store layer. Closed: callers map every variant.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database could not be reached, refused the connection, shut down,
    /// ran out of resources or was held by another process past the wait: a
    /// transient outage. The same call may succeed later.
    #[error("store unavailable: {0}")]
    Unavailable(String),
    /// Applying migrations failed at open.
    #[error("store migration failed: {0}")]
    Migration(String),
    /// A query failed for a reason other than reachability (a constraint, a
    /// rule of the store contract, a statement the database refused).
    #[error("store query failed: {0}")]
    Query(String),
    /// A stored document could not be decoded into its domain type.
    #[error("stored record is corrupt: {0}")]
    Corrupt(String),
    /// The database URL names no supported backend.
    #[error("unsupported database URL scheme (expected sqlite: or postgres:)")]
    UnsupportedUrl,
}

impl StoreError {
    /// A transient outage: retrying later may succeed.
    pub fn is_unavailable(&self) -> bool {
        matches!(self, Self::Unavailable(_))
    }
}

impl From<sqlx::Error> for StoreError {
    /// Reachability first (the connection, the pool, the server's state),
    /// then decoding, then what the database said about the statement.
    fn from(error: sqlx::Error) -> Self {
        match error {
            sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::WorkerCrashed => Self::Unavailable(error.to_string()),
            sqlx::Error::ColumnDecode { .. } | sqlx::Error::Decode(_) => {
                Self::Corrupt(error.to_string())
            }
            sqlx::Error::Database(db) => from_database_error(db.as_ref()),
            other => Self::Query(other.to_string()),
        }
    }
}

/// An error the database itself reported.
fn from_database_error(db: &dyn sqlx::error::DatabaseError) -> StoreError {
    if db.is_unique_violation() && violates_rooftop_id_index(db) {
        // Normally caught earlier with the owner's name (`rooftop_taken`);
        // this is the backstop for a concurrent writer.
        return StoreError::Query(format!(
            "a rooftop_id already belongs to another organization \
             (unique index {ROOFTOP_ID_INDEX}): {}",
            db.message()
        ));
    }
    if let Some(pg) = db.try_downcast_ref::<sqlx::postgres::PgDatabaseError>()
        && postgres_unavailable(pg.code())
    {
        return StoreError::Unavailable(db.to_string());
    }
    if db.try_downcast_ref::<sqlx::sqlite::SqliteError>().is_some()
        && db
            .code()
            .and_then(|c| c.parse::<i64>().ok())
            .is_some_and(sqlite_unavailable)
    {
        return StoreError::Unavailable(db.to_string());
    }
    StoreError::Query(db.to_string())
}

/// PostgreSQL SQLSTATEs of an outage (PostgreSQL manual, appendix A "Error
/// Codes"): class 08 (connection exception), class 53 (insufficient
/// resources: disk full, out of memory, too many connections), and
/// 57P01..57P03 (administrator shutdown, crash shutdown, cannot connect now).
fn postgres_unavailable(sqlstate: &str) -> bool {
    sqlstate.starts_with("08")
        || sqlstate.starts_with("53")
        || matches!(sqlstate, "57P01" | "57P02" | "57P03")
}

/// SQLite result codes of an outage, extended codes included (their low
/// byte is the primary code): SQLITE_BUSY (5) and SQLITE_LOCKED (6), another
/// connection held the database past the busy timeout; SQLITE_IOERR (10),
/// the file could not be read or written; SQLITE_FULL (13), the disk is
/// full (as PostgreSQL's 53100); SQLITE_CANTOPEN (14), the file cannot be
/// opened.
fn sqlite_unavailable(code: i64) -> bool {
    matches!(code & 0xff, 5 | 6 | 10 | 13 | 14)
}

fn violates_rooftop_id_index(db: &dyn sqlx::error::DatabaseError) -> bool {
    // PostgreSQL names the index; SQLite names the indexed column(s).
    db.constraint() == Some(ROOFTOP_ID_INDEX)
        || db.message() == "UNIQUE constraint failed: rooftops.rooftop_id"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reachability_failures_are_unavailable() {
        for error in [
            sqlx::Error::PoolTimedOut,
            sqlx::Error::PoolClosed,
            sqlx::Error::WorkerCrashed,
            sqlx::Error::Io(std::io::Error::from(std::io::ErrorKind::ConnectionRefused)),
            sqlx::Error::Io(std::io::Error::from(std::io::ErrorKind::ConnectionReset)),
        ] {
            assert!(StoreError::from(error).is_unavailable());
        }
    }

    #[test]
    fn statement_failures_are_not_unavailable() {
        assert!(matches!(
            StoreError::from(sqlx::Error::RowNotFound),
            StoreError::Query(_)
        ));
        assert!(matches!(
            StoreError::from(sqlx::Error::Protocol("bad".into())),
            StoreError::Query(_)
        ));
    }

    #[test]
    fn postgres_outage_states() {
        for state in [
            "08000", "08006", "08001", "53300", "53100", "57P01", "57P02", "57P03",
        ] {
            assert!(postgres_unavailable(state), "{state}");
        }
        // Constraint violations, serialization failures, syntax errors and
        // a cancelled statement stay what they are.
        for state in ["23505", "23503", "40001", "42601", "57014", "57P04"] {
            assert!(!postgres_unavailable(state), "{state}");
        }
    }

    #[test]
    fn sqlite_outage_codes() {
        // BUSY, LOCKED, IOERR, FULL, CANTOPEN and extended codes of them
        // (SQLITE_BUSY_SNAPSHOT 517, SQLITE_IOERR_READ 266,
        // SQLITE_CANTOPEN_NOTEMPDIR 270).
        for code in [5, 6, 10, 13, 14, 517, 266, 270] {
            assert!(sqlite_unavailable(code), "{code}");
        }
        // CONSTRAINT (19), its UNIQUE extension (2067), CORRUPT (11),
        // NOTADB (26), ERROR (1).
        for code in [19, 2067, 11, 26, 1] {
            assert!(!sqlite_unavailable(code), "{code}");
        }
    }

    #[tokio::test]
    async fn sqlite_constraint_violation_stays_a_query_error() {
        use sqlx::Connection as _;
        let mut conn = sqlx::SqliteConnection::connect("sqlite::memory:")
            .await
            .expect("in-memory SQLite");
        sqlx::query("create table t (id integer primary key)")
            .execute(&mut conn)
            .await
            .expect("create");
        sqlx::query("insert into t values (1)")
            .execute(&mut conn)
            .await
            .expect("insert");
        let err = sqlx::query("insert into t values (1)")
            .execute(&mut conn)
            .await
            .expect_err("duplicate key");
        assert!(matches!(StoreError::from(err), StoreError::Query(_)));
    }
}
