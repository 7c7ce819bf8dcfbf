//! The doctor's answer: one line per check (status, what was checked, what was found, and for
//! a WARN or FAIL what to do), the exit status, and the secret filter every line goes through.

use std::fmt::Write as _;

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Status {
    Ok,
    /// Works, but something will fail or be slow later (a missing optional tool, an old API).
    Warn,
    /// Does not apply to this mode or configuration, or an earlier failure leaves nothing to
    /// check.
    Skip,
    Fail,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "OK",
            Self::Warn => "WARN",
            Self::Skip => "SKIP",
            Self::Fail => "FAIL",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    pub status: Status,
    /// What was checked, e.g. `tools ext4`, `keystone [Global]`.
    pub name: String,
    /// What was found.
    pub detail: String,
    /// What to do (WARN and FAIL).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl Check {
    pub fn ok(name: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(Status::Ok, name, detail, None)
    }

    pub fn skip(name: impl Into<String>, why: impl Into<String>) -> Self {
        Self::new(Status::Skip, name, why, None)
    }

    pub fn warn(
        name: impl Into<String>,
        detail: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        Self::new(Status::Warn, name, detail, Some(fix.into()))
    }

    pub fn fail(
        name: impl Into<String>,
        detail: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        Self::new(Status::Fail, name, detail, Some(fix.into()))
    }

    fn new(
        status: Status,
        name: impl Into<String>,
        detail: impl Into<String>,
        fix: Option<String>,
    ) -> Self {
        Self {
            status,
            name: name.into(),
            detail: detail.into(),
            fix,
        }
    }
}

/// All checks, in the order they ran.
#[derive(Debug, Default, Serialize)]
pub struct Report {
    pub title: String,
    pub checks: Vec<Check>,
    /// Secret values from the configuration: replaced wherever they would appear. The
    /// messages checked here never hold one on purpose; this is the guard against a cloud
    /// that echoes a request back.
    #[serde(skip)]
    secrets: Vec<String>,
}

/// What replaces a secret in the output.
pub const REDACTED: &str = "<redacted>";

impl Report {
    pub fn new(title: impl Into<String>) -> Self {
        Self {
            title: title.into(),
            ..Default::default()
        }
    }

    /// Never print `value` (shorter values would redact ordinary words, and no credential
    /// is that short).
    pub fn hide(&mut self, value: &str) {
        if value.len() >= 4 && !self.secrets.iter().any(|s| s == value) {
            self.secrets.push(value.to_string());
            // Longest first: a secret containing another is replaced whole.
            self.secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        }
    }

    pub fn push(&mut self, check: Check) {
        let check = Check {
            name: self.scrub(&check.name),
            detail: self.scrub(&check.detail),
            fix: check.fix.as_deref().map(|f| self.scrub(f)),
            status: check.status,
        };
        self.checks.push(check);
    }

    pub fn extend(&mut self, checks: impl IntoIterator<Item = Check>) {
        for c in checks {
            self.push(c);
        }
    }

    fn scrub(&self, text: &str) -> String {
        let mut out = text.to_string();
        for s in &self.secrets {
            out = out.replace(s.as_str(), REDACTED);
        }
        out
    }

    pub fn count(&self, status: Status) -> usize {
        self.checks.iter().filter(|c| c.status == status).count()
    }

    /// 0 when nothing failed, else 1.
    pub fn exit_status(&self) -> u8 {
        u8::from(self.count(Status::Fail) > 0)
    }

    pub fn summary(&self) -> String {
        let failed = self.count(Status::Fail);
        format!(
            "{}: {} ok, {} warning(s), {} failed, {} skipped",
            if failed == 0 {
                "no problem found"
            } else {
                "problems found"
            },
            self.count(Status::Ok),
            self.count(Status::Warn),
            failed,
            self.count(Status::Skip),
        )
    }

    /// `STATUS  name: detail — fix`, one line per check, aligned.
    pub fn text(&self) -> String {
        let width = self
            .checks
            .iter()
            .map(|c| c.name.chars().count())
            .max()
            .unwrap_or(0);
        let mut out = format!("{}\n", self.title);
        for c in &self.checks {
            let _ = write!(
                out,
                "{:<4}  {:<width$}  {}",
                c.status.as_str(),
                c.name,
                c.detail
            );
            if let Some(fix) = &c.fix {
                let _ = write!(out, " -> {fix}");
            }
            out.push('\n');
        }
        let _ = writeln!(out, "{}", self.summary());
        out
    }

    pub fn json(&self) -> String {
        let v = serde_json::json!({
            "title": self.title,
            "checks": self.checks,
            "ok": self.count(Status::Fail) == 0,
            "summary": self.summary(),
        });
        serde_json::to_string_pretty(&v).unwrap_or_else(|_| v.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_each_and_failure_sets_the_exit_status() {
        let mut r = Report::new("doctor");
        r.push(Check::ok("tools ext4", "mkfs.ext4, e2fsck, resize2fs"));
        r.push(Check::skip("keystone", "node mode"));
        assert_eq!(r.exit_status(), 0);
        r.push(Check::warn(
            "tools xfs",
            "mkfs.xfs missing",
            "install xfsprogs",
        ));
        assert_eq!(r.exit_status(), 0);
        r.push(Check::fail(
            "kubelet dir",
            "/var/lib/kubelet missing",
            "mount it",
        ));
        assert_eq!(r.exit_status(), 1);
        let text = r.text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 6, "{text}");
        assert!(lines[1].starts_with("OK    tools ext4 "), "{text}");
        assert!(lines[3].starts_with("WARN  tools xfs "), "{text}");
        assert!(
            lines[4].ends_with("/var/lib/kubelet missing -> mount it"),
            "{text}"
        );
        assert!(lines[5].contains("1 failed"), "{text}");
        let json: serde_json::Value = serde_json::from_str(&r.json()).unwrap();
        assert_eq!(json["ok"], false);
        assert_eq!(json["checks"][3]["status"], "Fail");
    }

    #[test]
    fn secrets_never_appear() {
        let mut r = Report::new("doctor");
        r.hide("hunter2-secret");
        r.hide("app-cred-s3cr3t");
        r.hide("x"); // too short to be a credential: ignored
        r.push(Check::fail(
            "keystone",
            "refused {\"password\": \"hunter2-secret\"}",
            "check app-cred-s3cr3t",
        ));
        let out = format!("{}{}", r.text(), r.json());
        assert!(
            !out.contains("hunter2-secret") && !out.contains("app-cred-s3cr3t"),
            "{out}"
        );
        assert!(out.contains(REDACTED), "{out}");
        assert!(out.contains("x"));
    }
}
