//! What a driver process holds, read from /proc: the figures a soak watches for growth.

/// One reading of a process.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sample {
    /// Resident set (VmRSS), KiB.
    pub rss_kib: u64,
    /// Peak resident set so far (VmHWM), KiB.
    pub hwm_kib: u64,
    /// The anonymous part of the resident set (RssAnon: heap, arenas, stacks), KiB; the rest
    /// is mostly the binary's pages read in as code runs, which is not growth of the heap.
    pub anon_kib: u64,
    pub threads: u64,
    pub fds: u64,
}

/// Read `pid` now; zeros for what cannot be read (the process gone).
pub fn sample(pid: u32) -> Sample {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |k: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(k))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count() as u64);
    Sample {
        rss_kib: field("VmRSS:"),
        hwm_kib: field("VmHWM:"),
        anon_kib: field("RssAnon:"),
        threads: field("Threads:"),
        fds,
    }
}

/// The start / end / peak table of a run's samples, and RSS and threads at about 12 evenly
/// spaced points (whether RSS rises with the thread count).
pub fn table(samples: &[Sample]) -> String {
    let (Some(first), Some(last)) = (samples.first(), samples.last()) else {
        return "no samples".into();
    };
    let peak = |f: fn(&Sample) -> u64| samples.iter().map(f).max().unwrap_or(0);
    let mib = |k: u64| k as f64 / 1024.0;
    let spaced = |f: &dyn Fn(&Sample) -> String| {
        samples
            .iter()
            .step_by((samples.len() / 12).max(1))
            .map(f)
            .collect::<Vec<_>>()
            .join(" ")
    };
    let series = |f: fn(&Sample) -> u64| spaced(&|s| format!("{:.1}", mib(f(s))));
    format!(
        "| driver | start | end | peak |\n|---|---|---|---|\n\
         | RSS (MiB) | {:.1} | {:.1} | {:.1} (VmHWM) |\n\
         | anonymous RSS (MiB) | {:.1} | {:.1} | {:.1} |\n\
         | open fds | {} | {} | {} |\n| threads | {} | {} | {} |\n\n\
         RSS over the run (MiB, evenly spaced samples): {}\n\
         anonymous RSS over the run (MiB): {}\n\
         threads over the run: {}",
        mib(first.rss_kib),
        mib(last.rss_kib),
        mib(peak(|s| s.hwm_kib)),
        mib(first.anon_kib),
        mib(last.anon_kib),
        mib(peak(|s| s.anon_kib)),
        first.fds,
        last.fds,
        peak(|s| s.fds),
        first.threads,
        last.threads,
        peak(|s| s.threads),
        series(|s| s.rss_kib),
        series(|s| s.anon_kib),
        spaced(&|s| s.threads.to_string())
    )
}
