//! The one-line errors of parsing and the notices perftest prints while parsing (a leaf: what
//! a parse returns is `parse::ParseOutcome`).

use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// Unknown/ambiguous option, missing or unexpected argument: perftest prints
    /// ` Invalid Command or flag.` and then the usage text.
    Usage,
    /// A value perftest rejects (not a number, out of range, unknown keyword).
    InvalidValue,
    /// The same option twice.
    Duplicate,
    /// Options that perftest refuses together, or an option the tool refuses.
    Conflict,
    /// A perftest feature rperftest does not implement.
    Unsupported,
}

/// A command-line error: one line, naming the option(s).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamError {
    pub kind: ErrorKind,
    /// The option(s) concerned, as the user wrote them (`-s`, `--size`) or canonically
    /// (`-D/--duration`), or `<host>` for positional arguments.
    pub option: String,
    pub message: String,
    /// What was probably meant (`did you mean --size?`), printed on a line of its own after
    /// the error, so that the stock lines come first unchanged.
    pub hint: Option<String>,
}

impl ParamError {
    pub(super) fn new(kind: ErrorKind, option: impl Into<String>, message: impl Into<String>) -> Self {
        ParamError {
            kind,
            option: option.into(),
            message: message.into(),
            hint: None,
        }
    }
    pub(super) fn with_hint(mut self, hint: Option<String>) -> Self {
        self.hint = hint;
        self
    }
    /// perftest's exit status for every parser failure.
    pub fn exit_code(&self) -> i32 {
        1
    }
    /// perftest prints the usage text after ` Invalid Command or flag.`
    pub fn shows_usage(&self) -> bool {
        self.kind == ErrorKind::Usage
    }
}

impl fmt::Display for ParamError {
    /// One line, always: the option and the message quote user arguments, and a control
    /// character in an argument (a newline, an escape sequence) is shown escaped.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_escaped(f, &self.option)?;
        f.write_str(": ")?;
        write_escaped(f, &self.message)
    }
}

fn write_escaped(f: &mut fmt::Formatter<'_>, s: &str) -> fmt::Result {
    for c in s.chars() {
        if c.is_control() {
            write!(f, "{}", c.escape_default())?;
        } else {
            fmt::Write::write_char(f, c)?;
        }
    }
    Ok(())
}

impl std::error::Error for ParamError {}

/// A line perftest prints while parsing (warnings and informational notes), reproduced so the
/// caller can print it: `text` is exact, newlines included.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    pub to_stderr: bool,
    pub text: String,
}

pub(super) fn conflict(opts: &str, msg: &str) -> ParamError {
    ParamError::new(ErrorKind::Conflict, opts, msg)
}

pub(super) fn unsupported(opts: &str, msg: &str) -> ParamError {
    ParamError::new(ErrorKind::Unsupported, opts, msg)
}
