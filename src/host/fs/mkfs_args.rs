//! StorageClass `mkfsOptions` (upstream PR #3084): extra arguments for the mkfs of a blank
//! disk. Split as upstream splits them (at commas, then at whitespace; no shell ever sees
//! them), then checked against the filesystem's table of mkfs options ([`MkfsFlag`], in its
//! own file), so that no argument can name another device or file, force a format over a
//! signature, or make mkfs write nothing.

use super::FsKind;

/// What an mkfs option takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Takes {
    /// A bare flag (`-q`, `-K`).
    Nothing,
    /// A value, attached (`-i65536`) or as the next argument (`-i 65536`).
    Value,
    /// A value of `key[=value]` suboptions; the listed keys are refused (they name another
    /// device or a file on the node).
    Suboptions { refused: &'static [&'static str] },
    /// Refused, with why.
    Refused(&'static str),
}

/// One single-letter option of a filesystem's mkfs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MkfsFlag {
    pub letter: char,
    pub takes: Takes,
}

pub const fn flag(letter: char, takes: Takes) -> MkfsFlag {
    MkfsFlag { letter, takes }
}

/// Why an `mkfsOptions` argument is refused; `arg` as the user wrote it (after splitting).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MkfsArgError {
    #[error("mkfsOptions argument {arg:?} is not an option of mkfs.{fs}; it takes {known}")]
    Unknown {
        arg: String,
        fs: FsKind,
        known: String,
    },
    #[error("mkfsOptions argument {arg:?} is refused for mkfs.{fs}: {why}")]
    Refused {
        arg: String,
        fs: FsKind,
        why: &'static str,
    },
    #[error(
        "mkfsOptions argument {arg:?} follows no option that takes a value; mkfs.{fs} would \
         read it as the device (give values right after their option, e.g. \"-E nodiscard\")"
    )]
    Stray { arg: String, fs: FsKind },
    #[error("mkfsOptions option {arg:?} of mkfs.{fs} needs a value after it")]
    MissingValue { arg: String, fs: FsKind },
    #[error(
        "mkfsOptions argument {arg:?}: suboption {key:?} of mkfs.{fs} is refused (it names \
         another device or a file on the node)"
    )]
    RefusedSuboption {
        arg: String,
        fs: FsKind,
        key: String,
    },
    #[error("mkfsOptions argument {arg:?} holds a control character")]
    ControlChar { arg: String },
}

/// Upstream's split: at commas, then each piece at whitespace; empty pieces dropped. A
/// value cannot hold a comma (`-E a,b` becomes `-E`, `a`, `b`): give such suboptions as
/// repeated options (`-E a -E b`).
pub fn split(raw: &str) -> Vec<String> {
    raw.split(',')
        .flat_map(str::split_whitespace)
        .map(str::to_string)
        .collect()
}

/// Check split arguments against `fs`'s mkfs options; they are then passed as they are,
/// after the driver's own and before the device.
pub fn check(fs: FsKind, args: &[String]) -> Result<(), MkfsArgError> {
    let table = fs.ops().mkfs_flags();
    let known = || {
        table
            .iter()
            .filter(|f| !matches!(f.takes, Takes::Refused(_)))
            .map(|f| format!("-{}", f.letter))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        if arg.chars().any(char::is_control) {
            return Err(MkfsArgError::ControlChar { arg: arg.clone() });
        }
        let mut chars = arg.chars();
        let (Some('-'), Some(letter)) = (chars.next(), chars.next()) else {
            return Err(MkfsArgError::Stray {
                arg: arg.clone(),
                fs,
            });
        };
        let attached = chars.as_str();
        let Some(f) = table.iter().find(|f| f.letter == letter) else {
            return Err(MkfsArgError::Unknown {
                arg: arg.clone(),
                fs,
                known: known(),
            });
        };
        let value = match f.takes {
            Takes::Refused(why) => {
                return Err(MkfsArgError::Refused {
                    arg: arg.clone(),
                    fs,
                    why,
                })
            }
            Takes::Nothing if attached.is_empty() => None,
            // `-qK` and the like: each flag on its own, so each is checked.
            Takes::Nothing => {
                return Err(MkfsArgError::Unknown {
                    arg: arg.clone(),
                    fs,
                    known: known(),
                })
            }
            Takes::Value | Takes::Suboptions { .. } if !attached.is_empty() => {
                Some(attached.to_string())
            }
            Takes::Value | Takes::Suboptions { .. } => {
                i += 1;
                match args.get(i) {
                    Some(v) if !v.chars().any(char::is_control) => Some(v.clone()),
                    Some(v) => return Err(MkfsArgError::ControlChar { arg: v.clone() }),
                    None => {
                        return Err(MkfsArgError::MissingValue {
                            arg: arg.clone(),
                            fs,
                        })
                    }
                }
            }
        };
        if let (Takes::Suboptions { refused }, Some(v)) = (f.takes, &value) {
            let key = v.split('=').next().unwrap_or_default();
            if refused.contains(&key) {
                return Err(MkfsArgError::RefusedSuboption {
                    arg: v.clone(),
                    fs,
                    key: key.to_string(),
                });
            }
        }
        i += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(raw: &str) -> Vec<String> {
        split(raw)
    }

    #[test]
    fn split_as_upstream() {
        assert_eq!(
            split("-E nodiscard,-O ^metadata_csum"),
            ["-E", "nodiscard", "-O", "^metadata_csum"]
        );
        assert_eq!(split(" -i  65536 ,, "), ["-i", "65536"]);
        assert_eq!(split("-E a,b"), ["-E", "a", "b"], "a comma ends a value");
        assert!(split("").is_empty());
    }

    #[test]
    fn what_the_issue_asks_for_passes() {
        for (fs, raw) in [
            (FsKind::Ext4, "-E nodiscard"),
            (FsKind::Ext4, "-O ^metadata_csum"),
            (FsKind::Ext4, "-i 65536,-E nodiscard"),
            (FsKind::Ext4, "-i65536 -L data -m 1 -T largefile4"),
            (FsKind::Ext3, "-j -J size=64"),
            (FsKind::Xfs, "-i size=1024"),
            (FsKind::Xfs, "-m crc=1 -L data -K"),
            (FsKind::Btrfs, "-L data -n 16384"),
        ] {
            check(fs, &args(raw)).unwrap_or_else(|e| panic!("{fs} {raw}: {e}"));
        }
    }

    #[test]
    fn nothing_reaches_another_device_or_forces_a_format() {
        for (fs, raw, want) in [
            (FsKind::Ext4, "/dev/sda", "as the device"),
            (FsKind::Ext4, "-E nodiscard /dev/sda", "as the device"),
            (FsKind::Ext4, "-F", "refused"),
            (FsKind::Ext4, "-n", "refused"),
            (FsKind::Ext4, "-t ext2", "refused"),
            (FsKind::Ext4, "-d /etc", "refused"),
            (FsKind::Ext4, "-J device=/dev/sdb", "suboption \"device\""),
            (FsKind::Ext4, "-qF", "not an option"),
            (FsKind::Ext4, "--help", "not an option"),
            (FsKind::Ext4, "-Y", "not an option"),
            (FsKind::Ext4, "-i", "needs a value"),
            (FsKind::Xfs, "-f", "refused"),
            (FsKind::Xfs, "-d name=/dev/sda", "suboption \"name\""),
            (FsKind::Xfs, "-dfile=x", "suboption \"file\""),
            (FsKind::Xfs, "-l logdev=/dev/sdb", "suboption \"logdev\""),
            (FsKind::Xfs, "-r rtdev=/dev/sdb", "suboption \"rtdev\""),
            (FsKind::Xfs, "-p /etc/proto", "refused"),
            (FsKind::Btrfs, "-f", "refused"),
            (FsKind::Btrfs, "-r /etc", "refused"),
        ] {
            let e = check(fs, &args(raw)).unwrap_err().to_string();
            assert!(e.contains(want), "{fs} {raw}: {e}");
            assert!(e.contains("mkfsOptions"), "{e}");
        }
        let e = check(FsKind::Ext4, &["-L".into(), "a\nb".into()]).unwrap_err();
        assert!(matches!(e, MkfsArgError::ControlChar { .. }), "{e}");
    }
}
