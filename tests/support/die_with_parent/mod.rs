//! Driver processes the tests spawn end with the test process: the kernel sends them SIGTERM
//! when the spawning thread dies (a test process killed by a signal, or aborted, runs no
//! `Drop`), so no driver is orphaned holding sockets, mounts or loop devices.
//! Set by `launch`, the one launcher of the driver.

use std::os::unix::process::CommandExt;
use std::process::Command;

pub trait DieWithParent {
    /// Set PR_SET_PDEATHSIG (SIGTERM) in the child. Spawn from the thread that outlives the
    /// child (the test's own thread): the signal follows that thread, not the process.
    fn die_with_parent(&mut self) -> &mut Self;
}

impl DieWithParent for Command {
    fn die_with_parent(&mut self) -> &mut Self {
        let parent = std::process::id();
        // SAFETY: prctl and getppid are async-signal-safe; nothing here allocates or locks.
        unsafe {
            self.pre_exec(move || {
                nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGTERM)?;
                // The parent died between fork and prctl: no signal will come.
                if nix::unistd::getppid().as_raw() as u32 != parent {
                    return Err(std::io::Error::other("the test process is gone"));
                }
                Ok(())
            })
        }
    }
}
