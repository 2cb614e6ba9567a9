//! `serve --config FILE` and `stdio --config FILE`: the file's settings
//! layered under the flags and environment variables, every key and value
//! checked first (docs/operations.md "Configuration file").

use std::ffi::OsString;
use std::path::PathBuf;

use clap::parser::ValueSource;
use clap::{ArgAction, CommandFactory as _, Parser as _};

use super::args::Cli;
use crate::config::ConfigFileError;
use crate::report::{Position, Problem};

/// Global flags that are settings of a running server too, so a config
/// file may set them (`progress` concerns only the one-shot commands).
const GLOBAL_SERVE_KEYS: [&str; 3] = ["database_url", "log", "log_format"];

/// `serve --config FILE`: parse `args` (the process's
/// command line) again with the file's settings layered under the flags
/// and environment variables. `Ok(None)` when `args` is not a `serve` (or
/// `stdio`, which shares the serve settings) with `--config`.
///
/// The keys are derived from the `serve` flags themselves (their ids), so
/// every setting is configurable and there is no second list to keep in
/// step. A file is checked whole before anything is applied: each unknown
/// key and each bad value is reported at its line and column, by key, with
/// what is expected and the closest key or value when it looks misspelt
/// (docs/operations.md "Configuration file"), and then nothing of the file
/// is used.
///
/// # Errors
/// The file is unreadable, not TOML, or has unknown keys or bad values.
pub fn with_config_file(args: &[OsString]) -> Result<Option<Cli>, ConfigFileError> {
    let command = Cli::command();
    let matches = command
        .clone()
        .try_get_matches_from(args)
        .map_err(|e| ConfigFileError::CommandLine(e.to_string()))?;
    // `stdio` takes the serve settings too (flattened), so the same file
    // configures both.
    let Some((subcommand, serve_matches)) = ["serve", "stdio"]
        .into_iter()
        .find_map(|name| matches.subcommand_matches(name).map(|m| (name, m)))
    else {
        return Ok(None);
    };
    let Some(path) = serve_matches.get_one::<PathBuf>("config") else {
        return Ok(None);
    };
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| ConfigFileError::Unreadable {
        file: file.clone(),
        reason: e.to_string(),
    })?;
    let table: toml::Table =
        text.parse()
            .map_err(|e: toml::de::Error| ConfigFileError::Syntax {
                file: file.clone(),
                reason: e.to_string().trim_end().to_owned(),
            })?;
    let Some(serve_command) = command.find_subcommand(subcommand) else {
        return Err(ConfigFileError::CommandLine(format!(
            "the command line has no {subcommand} command"
        )));
    };
    // Where each key and value is in the file, for the report.
    let spans = config_spans(&text);
    let at = |key: &str, value: bool| {
        spans
            .iter()
            .find(|s| s.key == key)
            .map(|s| if value { s.value } else { s.key_at })
    };
    let known: Vec<String> = GLOBAL_SERVE_KEYS
        .iter()
        .map(|k| (*k).to_owned())
        .chain(
            serve_command
                .get_arguments()
                .filter(|a| a.get_long().is_some() && a.get_id() != "config")
                .map(|a| a.get_id().to_string()),
        )
        .collect();
    let mut problems = Vec::new();
    let mut extra: Vec<OsString> = Vec::new();
    for (key, value) in &table {
        let global = GLOBAL_SERVE_KEYS.contains(&key.as_str());
        let arg = if global {
            command.get_arguments().find(|a| a.get_id() == key.as_str())
        } else if key == "config" || key == "token" {
            // `token` (stdio's grant) is not a serve setting: a file shared
            // by `serve` and `stdio` holds serve settings only.
            None
        } else {
            serve_command
                .get_arguments()
                .find(|a| a.get_id() == key.as_str() && a.get_long().is_some())
        };
        let pointer = format!("/{}", key.replace('~', "~0").replace('/', "~1"));
        let (Some(arg), Some(long)) = (arg, arg.and_then(clap::Arg::get_long)) else {
            let hint = crate::report::suggest::closest(key, &known)
                .map(|k| format!("; did you mean `{k}`?"))
                .unwrap_or_default();
            let mut problem = Problem::new(
                pointer,
                "unknown_key",
                format!(
                    "unknown key `{key}`: not a serve setting{hint} (the keys are the flags of \
                     `dealer-gateway serve --help` without `--` and with `_` for `-`, \
                     e.g. request_timeout_seconds)"
                ),
            );
            problem.position = at(key, false);
            problems.push(problem);
            continue;
        };
        let values = match config_values(arg, key, value) {
            Ok(values) => values,
            Err(explanation) => {
                let mut problem = Problem::new(pointer, "value", explanation);
                problem.position = at(key, true);
                problems.push(problem);
                continue;
            }
        };
        // Flags and environment variables win over the file.
        let source = if global {
            matches.value_source(key)
        } else {
            serve_matches.value_source(key)
        };
        if matches!(
            source,
            Some(ValueSource::CommandLine | ValueSource::EnvVariable)
        ) {
            continue;
        }
        for v in values {
            extra.push(match v {
                ConfigValue::Flag => format!("--{long}").into(),
                ConfigValue::Value(v) => format!("--{long}={v}").into(),
            });
        }
    }
    if !problems.is_empty() {
        return Err(ConfigFileError::Invalid {
            file,
            problems: crate::report::sorted(problems),
        });
    }
    let layered: Vec<OsString> = args.iter().cloned().chain(extra).collect();
    // Every value was checked on its own; what remains are relations
    // between settings (e.g. jwt_issuer requires jwt_jwks_file), reported
    // at the first key of the file the message names.
    Cli::try_parse_from(layered).map(Some).map_err(|e| {
        let mut reason = clap_reason(&e);
        let flags: Vec<&str> = reason
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .filter(|word| word.starts_with("--") && word.len() > 2)
            .collect();
        let named = table.keys().find(|key| {
            let flag = format!("--{}", key.replace('_', "-"));
            flags.contains(&flag.as_str())
        });
        // The message names flags; the file has keys.
        let keys: Vec<String> = flags
            .iter()
            .map(|f| f.trim_start_matches("--").replace('-', "_"))
            .collect();
        if !keys.is_empty() {
            reason.push_str(&format!(" (as keys of this file: {})", keys.join(", ")));
        }
        let mut problem = Problem::new(
            named.map(|k| format!("/{k}")).unwrap_or_default(),
            "settings",
            reason,
        );
        problem.position = named.and_then(|k| at(k, false));
        ConfigFileError::Invalid {
            file,
            problems: vec![problem],
        }
    })
}

/// Where a top-level key of the config file and its value start.
struct KeySpan {
    key: String,
    key_at: Position,
    value: Position,
}

/// The position of every top-level key and value of a TOML text (the text
/// already parsed once, so a parse failure here only means no positions).
fn config_spans(text: &str) -> Vec<KeySpan> {
    let Ok(table) = toml::de::DeTable::parse(text) else {
        return Vec::new();
    };
    table
        .get_ref()
        .iter()
        .map(|(key, value)| KeySpan {
            key: key.get_ref().to_string(),
            key_at: crate::report::locate::at_offset(text, key.span().start),
            value: crate::report::locate::at_offset(text, value.span().start),
        })
        .collect()
}

/// One value of a config key, as the flag would get it.
enum ConfigValue {
    /// A switch that is on (`no_demo = true`).
    Flag,
    Value(String),
}

/// The flag values of `key = value`, each checked by the flag's own value
/// parser (the same types and ranges as on the command line).
fn config_values(
    arg: &clap::Arg,
    key: &str,
    value: &toml::Value,
) -> Result<Vec<ConfigValue>, String> {
    if matches!(arg.get_action(), ArgAction::SetTrue) {
        return match value {
            toml::Value::Boolean(true) => Ok(vec![ConfigValue::Flag]),
            toml::Value::Boolean(false) => Ok(Vec::new()),
            other => Err(format!("{key} = {other}: expected true or false")),
        };
    }
    let repeated = matches!(arg.get_action(), ArgAction::Append);
    let items: Vec<&toml::Value> = match value {
        toml::Value::Array(items) if repeated => items.iter().collect(),
        toml::Value::Array(_) => {
            return Err(format!(
                "{key} = {value}: takes one value, not a list; expected {}",
                expected(arg)
            ));
        }
        one => vec![one],
    };
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let text = match item {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Float(f) => f.to_string(),
            other => {
                return Err(format!("{key} = {other}: expected {}", expected(arg)));
            }
        };
        // The flag alone, without its relations to other flags or its
        // environment variable: only the value is judged here.
        let probe = clap::Command::new("config").no_binary_name(true).arg(
            clap::Arg::new("value")
                .long("value")
                .action(ArgAction::Set)
                .value_parser(arg.get_value_parser().clone()),
        );
        if let Err(e) = probe.try_get_matches_from([format!("--value={text}")]) {
            let possible: Vec<String> = arg
                .get_value_parser()
                .possible_values()
                .map(|values| values.map(|v| v.get_name().to_owned()).collect())
                .unwrap_or_default();
            return Err(format!(
                "{key} = {item}: {}{}; expected {}",
                clap_reason(&e),
                crate::report::suggest::hint(&text, &possible),
                expected(arg)
            ));
        }
        out.push(ConfigValue::Value(text));
    }
    Ok(out)
}

/// What a flag accepts, in words, from its value parser.
fn expected(arg: &clap::Arg) -> String {
    use std::any::TypeId;
    let parser = arg.get_value_parser();
    if let Some(values) = parser.possible_values() {
        let names: Vec<String> = values.map(|v| v.get_name().to_owned()).collect();
        return format!("one of {}", names.join(", "));
    }
    let ty = parser.type_id();
    let list = if matches!(arg.get_action(), ArgAction::Append) {
        " (or a list of them)"
    } else {
        ""
    };
    let what = if ty == TypeId::of::<std::net::SocketAddr>() {
        "a socket address as a string, e.g. \"127.0.0.1:8080\""
    } else if ty == TypeId::of::<u64>() || ty == TypeId::of::<u32>() || ty == TypeId::of::<usize>()
    {
        "a whole number"
    } else if ty == TypeId::of::<PathBuf>() {
        "a file path as a string"
    } else {
        "a string"
    };
    format!("{what}{list}")
}

/// The reason inside a clap error, without its usage and help lines.
fn clap_reason(e: &clap::Error) -> String {
    if e.kind() == clap::error::ErrorKind::InvalidValue {
        // The probe's flag name would only confuse; `expected` lists the
        // possible values.
        return "not a possible value".to_owned();
    }
    if let Some(source) = std::error::Error::source(e) {
        return source.to_string();
    }
    // The message runs until the usage block.
    let text = e.to_string();
    text.lines()
        .take_while(|l| !l.starts_with("Usage:"))
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
        .trim_start_matches("error: ")
        .to_owned()
}
