//! Process metrics named as Prometheus' own process collector names them (client_golang's
//! `process_*`, which every Go sidecar exports and dashboards expect): CPU, memory, file
//! descriptors, threads, start time. prometheus-client has no such collector; this one reads
//! `/proc/self` on each scrape (three small files and the fd directory).

use std::fmt::Error as FmtError;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

/// One reading of `/proc/self`.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessSample {
    pub cpu_seconds: f64,
    pub threads: f64,
    pub virtual_bytes: f64,
    pub resident_bytes: f64,
    pub open_fds: Option<f64>,
    pub max_fds: Option<f64>,
}

/// The collector; the start time is read once (it does not change).
#[derive(Debug)]
pub struct ProcessCollector {
    start_time_seconds: Option<f64>,
    ticks_per_second: f64,
    page_size: f64,
}

impl ProcessCollector {
    pub fn new() -> Self {
        // From the auxiliary vector: no syscall.
        let ticks_per_second = rustix::param::clock_ticks_per_second() as f64;
        let page_size = rustix::param::page_size() as f64;
        let start_time_seconds = (|| {
            let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
            let boot = boot_time(&std::fs::read_to_string("/proc/stat").ok()?)?;
            let ticks = stat_fields(&stat)?.get(STARTTIME)?.parse::<f64>().ok()?;
            Some(boot + ticks / ticks_per_second)
        })();
        Self {
            start_time_seconds,
            ticks_per_second,
            page_size,
        }
    }

    /// This process now; `None` when `/proc/self/stat` cannot be read or parsed.
    pub fn sample(&self) -> Option<ProcessSample> {
        let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
        let mut sample = parse_stat(&stat, self.ticks_per_second, self.page_size)?;
        sample.open_fds = std::fs::read_dir("/proc/self/fd")
            .ok()
            .map(|d| d.count() as f64);
        sample.max_fds = std::fs::read_to_string("/proc/self/limits")
            .ok()
            .and_then(|l| max_open_files(&l));
        Some(sample)
    }
}

impl Default for ProcessCollector {
    fn default() -> Self {
        Self::new()
    }
}

/// Field indexes in what follows the command name's `)` of `/proc/PID/stat` (proc(5) numbers
/// minus 3: that text starts at field 3, the state).
const UTIME: usize = 11;
const STIME: usize = 12;
const NUM_THREADS: usize = 17;
const STARTTIME: usize = 19;
const VSIZE: usize = 20;
const RSS: usize = 21;

/// The fields after the command name, which may itself hold spaces and parentheses.
fn stat_fields(stat: &str) -> Option<Vec<&str>> {
    let (_, rest) = stat.rsplit_once(')')?;
    Some(rest.split_whitespace().collect())
}

fn parse_stat(stat: &str, ticks_per_second: f64, page_size: f64) -> Option<ProcessSample> {
    let f = stat_fields(stat)?;
    let num = |i: usize| f.get(i)?.parse::<f64>().ok();
    Some(ProcessSample {
        cpu_seconds: (num(UTIME)? + num(STIME)?) / ticks_per_second,
        threads: num(NUM_THREADS)?,
        virtual_bytes: num(VSIZE)?,
        resident_bytes: num(RSS)? * page_size,
        open_fds: None,
        max_fds: None,
    })
}

/// `btime` of `/proc/stat`: boot time in seconds since the epoch.
fn boot_time(proc_stat: &str) -> Option<f64> {
    proc_stat
        .lines()
        .find_map(|l| l.strip_prefix("btime "))
        .and_then(|v| v.trim().parse().ok())
}

/// The soft limit of `Max open files` in `/proc/PID/limits` (as client_golang reads it).
fn max_open_files(limits: &str) -> Option<f64> {
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    let soft = line
        .strip_prefix("Max open files")?
        .split_whitespace()
        .next()?;
    match soft {
        "unlimited" => Some(f64::from(u32::MAX)),
        n => n.parse().ok(),
    }
}

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), FmtError> {
        if let Some(start) = self.start_time_seconds {
            gauge(
                &mut encoder,
                "process_start_time_seconds",
                "Start time of the process since unix epoch in seconds",
                start,
            )?;
        }
        let Some(s) = self.sample() else {
            return Ok(());
        };
        let cpu = ConstCounter::new(s.cpu_seconds);
        cpu.encode(encoder.encode_descriptor(
            "process_cpu_seconds",
            "Total user and system CPU time spent in seconds",
            None,
            cpu.metric_type(),
        )?)?;
        gauge(
            &mut encoder,
            "process_resident_memory_bytes",
            "Resident memory size in bytes",
            s.resident_bytes,
        )?;
        gauge(
            &mut encoder,
            "process_virtual_memory_bytes",
            "Virtual memory size in bytes",
            s.virtual_bytes,
        )?;
        if let Some(fds) = s.open_fds {
            gauge(
                &mut encoder,
                "process_open_fds",
                "Number of open file descriptors",
                fds,
            )?;
        }
        if let Some(max) = s.max_fds {
            gauge(
                &mut encoder,
                "process_max_fds",
                "Maximum number of open file descriptors",
                max,
            )?;
        }
        gauge(
            &mut encoder,
            "process_threads",
            "Number of OS threads in the process",
            s.threads,
        )
    }
}

fn gauge(encoder: &mut DescriptorEncoder, name: &str, help: &str, v: f64) -> Result<(), FmtError> {
    let g = ConstGauge::new(v);
    g.encode(encoder.encode_descriptor(name, help, None, g.metric_type())?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_with_a_command_name_holding_spaces_and_parentheses() {
        // proc(5): pid (comm) state ppid ... utime=14 stime=15 ... num_threads=20
        // starttime=22 vsize=23 rss=24.
        let stat = "4242 (cinder (csi) x) S 1 4242 4242 0 -1 4194560 1200 0 3 0 \
                    250 50 0 0 20 0 7 0 123456 26214400 1280 18446744073709551615 0 0";
        let s = parse_stat(stat, 100.0, 4096.0).unwrap();
        assert_eq!(s.cpu_seconds, 3.0);
        assert_eq!(s.threads, 7.0);
        assert_eq!(s.virtual_bytes, 26_214_400.0);
        assert_eq!(s.resident_bytes, 1280.0 * 4096.0);
        assert_eq!(stat_fields(stat).unwrap()[STARTTIME], "123456");
        assert!(parse_stat("garbage", 100.0, 4096.0).is_none());
    }

    #[test]
    fn limits_and_boot_time() {
        let limits = "Limit                     Soft Limit           Hard Limit           Units     \n\
                      Max processes             63413                63413                processes \n\
                      Max open files            1024                 524288               files     \n";
        assert_eq!(max_open_files(limits), Some(1024.0));
        assert_eq!(
            max_open_files(
                "Max open files            unlimited            unlimited            files"
            ),
            Some(f64::from(u32::MAX))
        );
        assert_eq!(
            boot_time("cpu  1 2 3\nbtime 1764800000\nprocesses 9\n"),
            Some(1_764_800_000.0)
        );
    }

    /// This very process, read as a scrape reads it.
    #[test]
    fn samples_this_process() {
        let c = ProcessCollector::new();
        let s = c.sample().unwrap();
        assert!(s.resident_bytes > 1_000_000.0, "{s:?}");
        assert!(s.threads >= 1.0 && s.open_fds.unwrap() >= 3.0, "{s:?}");
        assert!(s.max_fds.unwrap() >= s.open_fds.unwrap(), "{s:?}");
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        let start = c.start_time_seconds.unwrap();
        assert!(
            start <= now + 1.0 && start > now - 3600.0,
            "{start} vs {now}"
        );
    }
}
