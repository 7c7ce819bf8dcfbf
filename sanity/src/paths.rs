//! The node directories of csi-sanity's convention: `--staging-dir` and `--mount-dir` are made
//! with a plain mkdir before each case (their parent must exist) and removed after it. A driver
//! that leaves a mount, a file or the publish target behind makes the removal fail, and the
//! case fails with what was left. Nothing that is still mounted is ever deleted.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use crate::mountinfo;

/// Make one CO-owned directory; it must not exist yet.
pub fn create(dir: &Path) -> Result<(), String> {
    match std::fs::create_dir(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => Err(format!(
            "{} already exists: an earlier case (or run) left it behind; remove it and run again",
            dir.display()
        )),
        Err(e) => Err(format!(
            "cannot create {} (its parent must exist): {e}",
            dir.display()
        )),
    }
}

/// Remove one CO-owned directory after a case. Returns what the driver left behind.
pub fn remove(dir: &Path) -> Result<(), String> {
    let mounts = mountinfo::read()?;
    let left_mounted = mountinfo::mounts_under(&mounts, dir);
    if !left_mounted.is_empty() {
        let list: Vec<String> = left_mounted
            .iter()
            .map(|m| {
                format!(
                    "{} ({} from {})",
                    m.mount_point.display(),
                    m.fstype,
                    m.source
                )
            })
            .collect();
        return Err(format!(
            "the driver left mounts behind: {}; {} was not removed",
            list.join(", "),
            dir.display()
        ));
    }
    match std::fs::remove_dir(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::NotFound => Err(format!(
            "{} was removed by the driver, but it belongs to the CO",
            dir.display()
        )),
        Err(e) if e.kind() == ErrorKind::DirectoryNotEmpty => {
            let entries = entries(dir);
            // Nothing is mounted below it (checked above), so deleting cannot touch volume data.
            let cleaned = std::fs::remove_dir_all(dir);
            Err(format!(
                "the driver left {} in {}{}",
                entries.join(", "),
                dir.display(),
                match cleaned {
                    Ok(()) => String::new(),
                    Err(e) => format!(" (and it could not be removed: {e})"),
                }
            ))
        }
        Err(e) => Err(format!("cannot remove {}: {e}", dir.display())),
    }
}

fn entries(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path().display().to_string())
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// After NodeUnpublishVolume: the SP MUST delete the file or directory it created at the target
/// path, and nothing may stay mounted there.
pub fn check_removed(target: &Path) -> Result<(), String> {
    let mounts = mountinfo::read()?;
    let at = mountinfo::mounts_at(&mounts, target);
    if !at.is_empty() {
        return Err(format!(
            "{} is still a mount point ({} from {})",
            target.display(),
            at[0].fstype,
            at[0].source
        ));
    }
    match std::fs::symlink_metadata(target) {
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("cannot inspect {}: {e}", target.display())),
        Ok(_) => Err(format!(
            "{} still exists; the SP MUST delete the file or directory it created there",
            target.display()
        )),
    }
}

/// After NodeUnstageVolume: the CO-owned staging directory stays, unmounted and empty.
pub fn check_unstaged(staging: &Path) -> Result<(), String> {
    let mounts = mountinfo::read()?;
    let under = mountinfo::mounts_under(&mounts, staging);
    if !under.is_empty() {
        return Err(format!(
            "{} is still mounted ({} from {})",
            under[0].mount_point.display(),
            under[0].fstype,
            under[0].source
        ));
    }
    if !staging.is_dir() {
        return Err(format!(
            "{} is gone; the staging directory belongs to the CO",
            staging.display()
        ));
    }
    let left = entries(staging);
    if !left.is_empty() {
        return Err(format!(
            "left behind in the staging directory: {}",
            left.join(", ")
        ));
    }
    Ok(())
}

/// Whether `p` is a mount point now (and read-only, if so).
pub fn mount_state(p: &Path) -> Result<Option<bool>, String> {
    let mounts = mountinfo::read()?;
    Ok(mountinfo::mounts_at(&mounts, p)
        .last()
        .map(mountinfo::Mount::read_only))
}

/// Check before a run that the directories can be made: parents exist, directories do not.
pub fn preflight(dirs: &[&PathBuf]) -> Result<(), String> {
    for d in dirs {
        if !d.is_absolute() {
            return Err(format!("{} must be an absolute path", d.display()));
        }
        if d.exists() {
            return Err(format!(
                "{} already exists; the runner creates it before each case and removes it after, so remove it first",
                d.display()
            ));
        }
        match d.parent() {
            Some(p) if p.is_dir() => {}
            _ => {
                return Err(format!(
                    "the parent of {} must be an existing directory",
                    d.display()
                ))
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_then_remove_round_trips_and_reports_leftovers() {
        let root = tempfile::tempdir().unwrap();
        let d = root.path().join("staging");
        create(&d).unwrap();
        assert!(create(&d).unwrap_err().contains("already exists"));
        remove(&d).unwrap();
        create(&d).unwrap();
        std::fs::write(d.join("leftover"), b"x").unwrap();
        let e = remove(&d).unwrap_err();
        assert!(e.contains("leftover"), "{e}");
        assert!(
            !d.exists(),
            "unmounted leftovers are cleaned so the next case can start"
        );
        assert!(remove(&d).unwrap_err().contains("belongs to the CO"));
    }

    #[test]
    fn removed_and_unstaged_checks() {
        let root = tempfile::tempdir().unwrap();
        let t = root.path().join("target");
        check_removed(&t).unwrap();
        std::fs::create_dir(&t).unwrap();
        assert!(check_removed(&t).unwrap_err().contains("still exists"));
        check_unstaged(&t).unwrap();
        std::fs::write(t.join("f"), b"x").unwrap();
        assert!(check_unstaged(&t).unwrap_err().contains("left behind"));
        assert_eq!(mount_state(&t).unwrap(), None);
    }
}
