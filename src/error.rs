//! Typed errors of the library and the exit codes they map to (docs/design/flow.md#exit-codes-and-errors).
//!
//! `Invalid` is a field-level problem without a file; `Error::Input` adds the file. Exit code
//! 2 means bad usage or invalid input, 1 a runtime failure, 3 a meeting whose saved report is
//! the fallback: no PM decision (docs/design/failure-policy.md#no-decision), 4 a meeting
//! waiting for a person to answer (docs/design/agent-turn.md#waiting-for-a-person).

use std::fmt;

/// A field that failed validation: its JSON path and what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    pub path: String,
    pub message: String,
}

impl Invalid {
    pub fn at(path: impl Into<String>, message: impl Into<String>) -> Invalid {
        Invalid {
            path: path.into(),
            message: message.into(),
        }
    }

    /// Prefix the path with a parent field (`output_schema` + `required` → `output_schema.required`).
    pub fn under(mut self, parent: &str) -> Invalid {
        self.path = join_path(parent, &self.path);
        self
    }

    /// Attach the file this field came from.
    pub fn in_file(self, file: impl Into<String>) -> Error {
        Error::Input {
            file: file.into(),
            path: self.path,
            message: self.message,
        }
    }
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

/// Join two JSON path segments (`a` + `b` → `a.b`, `a` + `[0]` → `a[0]`).
pub(crate) fn join_path(parent: &str, child: &str) -> String {
    match (parent.is_empty(), child.is_empty()) {
        (true, _) => child.to_string(),
        (_, true) => parent.to_string(),
        _ if child.starts_with('[') => format!("{parent}{child}"),
        _ => format!("{parent}.{child}"),
    }
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    /// An input document is malformed or breaks a rule; exit 2.
    #[error("{}", fmt_input(file, path, message))]
    Input {
        file: String,
        path: String,
        message: String,
    },
    /// Wrong flags, or a board handed to the wrong stage; exit 2.
    #[error("{0}")]
    Usage(String),
    /// Something failed while running (provider unreachable after retries, disk full); exit 1.
    #[error("{0}")]
    Runtime(String),
    /// A runtime failure that resuming the meeting would meet again (a cassette recorded from
    /// another meeting); exit 1, and `meeting` offers no `--resume` line for it.
    #[error("{0}")]
    NotResumable(String),
    /// The meeting ended with its report saved, but the report is the fallback: the PM made
    /// no decision; exit 3, so `meeting && publish` publishes only decisions.
    #[error("{0}")]
    NoDecision(String),
    /// The person running the meeting stopped it before it ended (`q` at a `--step` prompt):
    /// the run folder resumes it; exit 130, as a stop by Ctrl-C.
    #[error("{0}")]
    Stopped(String),
    /// A person (`kind: human`) is asked and no one is there to answer: the meeting stops,
    /// resumable with the answer (`meeting --resume DIR --answer FILE`); exit 4. `document`
    /// is the `waiting.json` the run folder keeps for them (`model::Waiting`, as JSON).
    #[error("{message}")]
    Waiting { message: String, document: String },
    /// The day's spending cap (`--max-cost-per-day`) is spent: no meeting is started; exit 5.
    #[error("{0}")]
    DaySpent(String),
}

/// The exit code of a meeting refused because the day's spending cap is spent.
pub const DAY_SPENT_EXIT: u8 = 5;

/// The exit code of a meeting that waits for a person's answer.
pub const WAITING_EXIT: u8 = 4;

fn fmt_input(file: &str, path: &str, message: &str) -> String {
    match (file.is_empty(), path.is_empty()) {
        (false, false) => format!("{file}: {path}: {message}"),
        (false, true) => format!("{file}: {message}"),
        (true, false) => format!("{path}: {message}"),
        (true, true) => message.to_string(),
    }
}

impl Error {
    pub fn input(
        file: impl Into<String>,
        path: impl Into<String>,
        message: impl Into<String>,
    ) -> Error {
        Error::Input {
            file: file.into(),
            path: path.into(),
            message: message.into(),
        }
    }

    /// Name the file of an input error raised without one: library checks of a document whose
    /// origin only the caller knows (a board on stdin, a run-folder file).
    pub fn or_file(self, label: &str) -> Error {
        match self {
            Error::Input {
                file,
                path,
                message,
            } if file.is_empty() => Error::Input {
                file: label.to_string(),
                path,
                message,
            },
            e => e,
        }
    }

    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Input { .. } | Error::Usage(_) => 2,
            Error::Runtime(_) | Error::NotResumable(_) => 1,
            Error::NoDecision(_) => 3,
            Error::Stopped(_) => 130,
            Error::Waiting { .. } => WAITING_EXIT,
            Error::DaySpent(_) => DAY_SPENT_EXIT,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What a caught panic said (its `&str` or `String` payload), for the error that replaces it.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_panic_says_what_it_said() {
        let hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let said =
            |f: fn()| super::panic_message(std::panic::catch_unwind(f).unwrap_err().as_ref());
        let formatted = said(|| panic!("boom {}", 1));
        let plain = said(|| panic!("plain"));
        std::panic::set_hook(hook);
        assert_eq!((formatted.as_str(), plain.as_str()), ("boom 1", "plain"));
    }
}
