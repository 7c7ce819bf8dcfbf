//! A writer of an ordered sequence across files, and its reader: what the group snapshot tests
//! restore and check for gaps (a later number is written only after the earlier one returned,
//! so a write-order consistent snapshot holds a prefix of the sequence).
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// Appends `seq\n` to `files[seq % n]`, one write after the other, until stopped.
pub struct Writer {
    stop: Arc<AtomicBool>,
    written: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Writer {
    pub fn start(files: Vec<PathBuf>) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let written = Arc::new(AtomicU64::new(0));
        let (s, w) = (stop.clone(), written.clone());
        let thread = std::thread::spawn(move || {
            let mut out: Vec<std::fs::File> = files
                .iter()
                .map(|p| {
                    std::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(p)
                        .unwrap()
                })
                .collect();
            let mut seq = 0u64;
            while !s.load(Ordering::Relaxed) {
                let n = out.len();
                // A write returns once it is in the page cache: a later write is issued only
                // after the earlier one completed, the order a snapshot must respect.
                out[(seq as usize) % n]
                    .write_all(format!("{seq}\n").as_bytes())
                    .unwrap();
                seq += 1;
                w.store(seq, Ordering::Relaxed);
            }
        });
        Self {
            stop,
            written,
            thread: Some(thread),
        }
    }

    pub fn written(&self) -> u64 {
        self.written.load(Ordering::Relaxed)
    }

    pub fn finish(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.take().unwrap().join().unwrap();
        self.written()
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

pub fn numbers(path: &Path) -> Vec<u64> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect()
}
