//! Embeds the per-backend SQL migrations (`../migrations/{sqlite,postgres}`).
//!
//! `sqlx::migrate!` lives behind sqlx's `macros` feature, which this workspace
//! leaves off (it would compile the database drivers a second time for the
//! proc-macro). Instead this script lists the migration files, in the same
//! `<version>_<description>.sql` layout `migrate!` reads, into
//! `$OUT_DIR/migrations_<backend>.rs`; `store::embedded_migrator` turns that
//! list into a `sqlx::migrate::Migrator` with the same checksums `migrate!`
//! would compute, so switching to `migrate!` later is a drop-in change.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::{env, fs};

fn main() {
    // A directory here makes cargo rescan every file under it.
    println!("cargo:rerun-if-changed=../migrations");
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets it"));
    for backend in ["sqlite", "postgres"] {
        let dir = manifest_dir.join("../migrations").join(backend);
        let list = migration_list(&dir);
        fs::write(out_dir.join(format!("migrations_{backend}.rs")), list)
            .expect("write the generated migration list");
    }
}

/// A Rust slice expression `&[(version, description, sql), ...]`, ordered by version.
fn migration_list(dir: &Path) -> String {
    let entries = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read migrations directory {}: {e}", dir.display()));
    let mut migrations = Vec::new();
    for entry in entries {
        let path = entry.expect("read a migrations directory entry").path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let Some(stem) = name.strip_suffix(".sql") else {
            continue;
        };
        let (version, description) = stem.split_once('_').unwrap_or_else(|| {
            panic!("migration {name} must be named <version>_<description>.sql")
        });
        let version: i64 = version
            .parse()
            .unwrap_or_else(|_| panic!("migration {name}: version {version:?} is not an integer"));
        assert!(
            !description.ends_with(".up") && !description.ends_with(".down"),
            "migration {name}: reversible (.up/.down) migrations are not supported"
        );
        let path = fs::canonicalize(&path).expect("canonicalize a migration path");
        // Same description `migrate!` stores in `_sqlx_migrations`.
        migrations.push((version, description.replace('_', " "), path));
    }
    migrations.sort_by_key(|(version, _, _)| *version);
    for pair in migrations.windows(2) {
        assert!(
            pair[0].0 != pair[1].0,
            "two migrations in {} share version {}",
            dir.display(),
            pair[0].0
        );
    }
    let mut out = String::from("&[\n");
    for (version, description, path) in &migrations {
        let path = path.to_str().expect("migration paths are UTF-8");
        writeln!(
            out,
            "    ({version}, {description:?}, include_str!({path:?})),"
        )
        .expect("write to a String");
    }
    out.push(']');
    out
}
