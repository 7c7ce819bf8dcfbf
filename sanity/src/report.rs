//! Results: one line per case, the closing `N passed, N failed, N skipped` line, and JUnit XML.

use std::fmt::Write as _;
use std::time::Duration;

use quick_xml::escape::escape;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Passed,
    Failed(String),
    Skipped(String),
}

#[derive(Debug, Clone)]
pub struct CaseReport {
    pub group: &'static str,
    pub name: &'static str,
    pub verdict: Verdict,
    pub duration: Duration,
}

impl CaseReport {
    /// `Group/name`, what `--filter` and `--skip` match against.
    pub fn full_name(&self) -> String {
        format!("{}/{}", self.group, self.name)
    }

    /// The one line printed for this case.
    pub fn line(&self) -> String {
        let secs = self.duration.as_secs_f64();
        match &self.verdict {
            Verdict::Passed => format!("PASS  {} ({secs:.2}s)", self.full_name()),
            Verdict::Failed(why) => {
                format!("FAIL  {} ({secs:.2}s): {}", self.full_name(), one_line(why))
            }
            Verdict::Skipped(why) => format!("SKIP  {}: {}", self.full_name(), one_line(why)),
        }
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[derive(Debug, Clone, Default)]
pub struct Report {
    pub cases: Vec<CaseReport>,
    pub duration: Duration,
}

impl Report {
    pub fn passed(&self) -> usize {
        self.count(|v| matches!(v, Verdict::Passed))
    }
    pub fn failed(&self) -> usize {
        self.count(|v| matches!(v, Verdict::Failed(_)))
    }
    pub fn skipped(&self) -> usize {
        self.count(|v| matches!(v, Verdict::Skipped(_)))
    }
    fn count(&self, f: impl Fn(&Verdict) -> bool) -> usize {
        self.cases.iter().filter(|c| f(&c.verdict)).count()
    }

    /// Full names of the failed cases.
    pub fn failures(&self) -> Vec<String> {
        self.cases
            .iter()
            .filter(|c| matches!(c.verdict, Verdict::Failed(_)))
            .map(CaseReport::full_name)
            .collect()
    }

    /// `N passed, N failed, N skipped`: the closing line CI tools read.
    pub fn summary(&self) -> String {
        format!(
            "{} passed, {} failed, {} skipped",
            self.passed(),
            self.failed(),
            self.skipped()
        )
    }

    /// JUnit XML as read by Jenkins, GitLab and friends.
    pub fn junit(&self) -> String {
        let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        let _ = writeln!(
            x,
            "<testsuites name=\"cinder-csi-sanity\" tests=\"{}\" failures=\"{}\" skipped=\"{}\" time=\"{:.3}\">",
            self.cases.len(),
            self.failed(),
            self.skipped(),
            self.duration.as_secs_f64()
        );
        let _ = writeln!(
            x,
            "  <testsuite name=\"CSI sanity\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\" time=\"{:.3}\">",
            self.cases.len(),
            self.failed(),
            self.skipped(),
            self.duration.as_secs_f64()
        );
        for c in &self.cases {
            let _ = write!(
                x,
                "    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3}\"",
                xml(c.group),
                xml(c.name),
                c.duration.as_secs_f64()
            );
            match &c.verdict {
                Verdict::Passed => x.push_str("/>\n"),
                Verdict::Failed(why) => {
                    let _ = write!(
                        x,
                        ">\n      <failure message=\"{}\">{}</failure>\n    </testcase>\n",
                        xml(&one_line(why)),
                        xml(why)
                    );
                }
                Verdict::Skipped(why) => {
                    let _ = write!(
                        x,
                        ">\n      <skipped message=\"{}\"/>\n    </testcase>\n",
                        xml(&one_line(why))
                    );
                }
            }
        }
        x.push_str("  </testsuite>\n</testsuites>\n");
        x
    }
}

/// Escape for XML text and attributes, dropping the control characters XML 1.0 forbids (a
/// driver's error message may contain anything).
fn xml(s: &str) -> String {
    let clean: String = s
        .chars()
        .filter(|&c| c == '\t' || c == '\n' || c == '\r' || c >= ' ')
        .collect();
    escape(clean.as_str()).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(name: &'static str, verdict: Verdict) -> CaseReport {
        CaseReport {
            group: "Controller",
            name,
            verdict,
            duration: Duration::from_millis(5),
        }
    }

    #[test]
    fn lines_summary_and_junit() {
        let r = Report {
            cases: vec![
                case("a", Verdict::Passed),
                case(
                    "b <x>",
                    Verdict::Failed("got \"Internal\"\u{1}\nsecond line".into()),
                ),
                case("c", Verdict::Skipped("no cap".into())),
            ],
            duration: Duration::from_secs(1),
        };
        assert_eq!(r.summary(), "1 passed, 1 failed, 1 skipped");
        assert_eq!(r.failures(), vec!["Controller/b <x>".to_string()]);
        assert!(r.cases[1]
            .line()
            .starts_with("FAIL  Controller/b <x> (0.01s): got \"Internal\""));
        assert!(r.cases[1].line().ends_with("second line"));
        let j = r.junit();
        assert!(j.contains("tests=\"3\" failures=\"1\" skipped=\"1\""));
        assert!(j.contains("name=\"b &lt;x&gt;\""));
        assert!(j.contains("<skipped message=\"no cap\"/>"));
        assert!(!j.contains('\u{1}'));
        let mut reader = quick_xml::Reader::from_str(&j);
        loop {
            match reader.read_event() {
                Ok(quick_xml::events::Event::Eof) => break,
                Ok(_) => {}
                Err(e) => panic!("JUnit output is not well-formed XML: {e}"),
            }
        }
    }
}
