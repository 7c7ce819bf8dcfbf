//! Mounts with mount(2)/umount2(2), and what is mounted where; never a process, and
//! /proc/self/mountinfo only where the mounted source must be known. Path checks are in
//! `paths`, the option handling in `mount_options`.

#[cfg(test)]
mod tests;

mod syscalls;
pub use syscalls::*;
