//! One error type for the verbs layer: what was being done, the errno (if the kernel said no),
//! and a hint a user can act on. Displayed as one line.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// The command or step, e.g. `"REG_MR"` or `"mmap rxe SQ ring"`.
    pub what: String,
    /// The errno the kernel returned, if any.
    pub errno: Option<i32>,
    /// What went wrong beyond the errno (e.g. a malformed response), if anything.
    pub detail: Option<String>,
    /// What the user can try.
    pub hint: Option<String>,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A kernel refusal: `what` failed with `errno`.
    pub fn errno(what: impl Into<String>, errno: i32) -> Self {
        Error { what: what.into(), errno: Some(errno), detail: None, hint: None }
    }
    /// The last OS error (after a failed syscall).
    pub fn last_os(what: impl Into<String>) -> Self {
        let e = std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO);
        Error::errno(what, e)
    }
    /// A failure that is not an errno: bad input, malformed data, an unsupported device.
    pub fn msg(what: impl Into<String>, detail: impl Into<String>) -> Self {
        Error { what: what.into(), errno: None, detail: Some(detail.into()), hint: None }
    }
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }
}

/// The symbolic name of an errno (`EINVAL`), for messages people can search for.
pub fn errno_name(e: i32) -> &'static str {
    match e {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::EINTR => "EINTR",
        libc::EIO => "EIO",
        libc::ENXIO => "ENXIO",
        libc::EBADF => "EBADF",
        libc::EAGAIN => "EAGAIN",
        libc::ENOMEM => "ENOMEM",
        libc::EACCES => "EACCES",
        libc::EFAULT => "EFAULT",
        libc::EBUSY => "EBUSY",
        libc::EEXIST => "EEXIST",
        libc::ENODEV => "ENODEV",
        libc::EINVAL => "EINVAL",
        libc::ENOSPC => "ENOSPC",
        libc::ENOSYS => "ENOSYS",
        libc::ENOTTY => "ENOTTY",
        libc::ERANGE => "ERANGE",
        libc::ENODATA => "ENODATA",
        libc::EPROTONOSUPPORT => "EPROTONOSUPPORT",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::EADDRNOTAVAIL => "EADDRNOTAVAIL",
        libc::ENETUNREACH => "ENETUNREACH",
        libc::ETIMEDOUT => "ETIMEDOUT",
        libc::ECONNREFUSED => "ECONNREFUSED",
        libc::ECONNRESET => "ECONNRESET",
        libc::EHOSTUNREACH => "EHOSTUNREACH",
        _ => "errno",
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} failed", self.what)?;
        if let Some(e) = self.errno {
            let text = std::io::Error::from_raw_os_error(e);
            write!(f, ": {} ({} {})", text.kind_text(), errno_name(e), e)?;
        }
        if let Some(d) = &self.detail {
            write!(f, ": {d}")?;
        }
        if let Some(h) = &self.hint {
            write!(f, "; {h}")?;
        }
        Ok(())
    }
}

/// `io::Error`'s message without the " (os error N)" suffix that std appends.
trait KindText {
    fn kind_text(&self) -> String;
}
impl KindText for std::io::Error {
    fn kind_text(&self) -> String {
        let s = self.to_string();
        match s.find(" (os error") {
            Some(i) => s[..i].to_string(),
            None => s,
        }
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_with_errno_and_hint() {
        let e = Error::errno("REG_MR", libc::ENOMEM)
            .with_hint("raise RLIMIT_MEMLOCK (ulimit -l unlimited)");
        let s = e.to_string();
        assert!(s.starts_with("REG_MR failed: "), "{s}");
        assert!(s.contains("ENOMEM 12"), "{s}");
        assert!(s.ends_with("; raise RLIMIT_MEMLOCK (ulimit -l unlimited)"), "{s}");
        assert!(!s.contains('\n'));
    }

    #[test]
    fn message_without_errno() {
        let s = Error::msg("parse CQE", "index 9000 beyond ring of 64").to_string();
        assert_eq!(s, "parse CQE failed: index 9000 beyond ring of 64");
    }
}
