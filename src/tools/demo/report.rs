//! Progress lines: `  ✓ step name          12.3 ms  detail`, printed as each step ends.

use std::future::Future;
use std::io::Write;
use std::time::{Duration, Instant};

const NAME_WIDTH: usize = 36;

pub struct Report {
    started: Instant,
    steps: usize,
    failed: usize,
}

/// Why a step failed (shown after ✗).
pub type StepError = String;

impl Report {
    pub fn new() -> Self {
        Self {
            started: Instant::now(),
            steps: 0,
            failed: 0,
        }
    }

    /// Run one step, time it and print its line. The step returns the detail to show.
    pub async fn step<T, F>(&mut self, name: &str, f: F) -> Result<T, StepError>
    where
        F: Future<Output = Result<(T, String), StepError>>,
    {
        let t = Instant::now();
        let res = f.await;
        let took = t.elapsed();
        self.steps += 1;
        match res {
            Ok((value, detail)) => {
                line('✓', name, Some(took), &detail);
                Ok(value)
            }
            Err(e) => {
                self.failed += 1;
                line('✗', name, Some(took), &e);
                Err(e)
            }
        }
    }

    /// A heading before a group of steps.
    pub fn section(&self, title: &str) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "\n  {title}");
        let _ = out.flush();
    }

    /// A line for something that was not timed (cleanup notes).
    pub fn note(&self, ok: bool, name: &str, detail: &str) {
        line(if ok { '✓' } else { '✗' }, name, None, detail);
    }

    pub fn failed(&self) -> usize {
        self.failed
    }

    pub fn summary(&self) -> String {
        format!(
            "{} steps, {} failed, {}",
            self.steps,
            self.failed,
            fmt_duration(self.started.elapsed())
        )
    }
}

fn line(mark: char, name: &str, took: Option<Duration>, detail: &str) {
    let took = took.map(fmt_duration).unwrap_or_default();
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "  {mark} {name:<NAME_WIDTH$} {took:>10}  {detail}");
    let _ = out.flush();
}

pub fn fmt_duration(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1e3;
    if ms < 1000.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{:.2} s", ms / 1e3)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_well() {
        assert_eq!(fmt_duration(Duration::from_micros(1500)), "1.5 ms");
        assert_eq!(fmt_duration(Duration::from_millis(2500)), "2.50 s");
    }

    #[tokio::test]
    async fn counts_failures() {
        let mut r = Report::new();
        let ok: Result<u32, _> = r.step("a", async { Ok((1, "one".into())) }).await;
        assert_eq!(ok.unwrap(), 1);
        let bad: Result<(), _> = r.step("b", async { Err("boom".to_string()) }).await;
        assert!(bad.is_err());
        assert_eq!(r.failed(), 1);
        assert!(r.summary().starts_with("2 steps, 1 failed"));
    }
}
