//! The environment clouds.yaml lookup reads: variables and directories,
//! injectable so tests never depend on the machine.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The process environment as clouds.yaml lookup sees it. Injected so tests
/// do not depend on the machine.
pub trait ClientEnv {
    /// An environment variable (`OS_CLOUD`, `OS_CLIENT_CONFIG_FILE`, …).
    fn var(&self, name: &str) -> Option<String>;
    /// The working directory (`./clouds.yaml`).
    fn current_dir(&self) -> Option<PathBuf>;
    /// The home directory (`~/.config/openstack`); default `$HOME`.
    fn home_dir(&self) -> Option<PathBuf> {
        self.var("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
    }
    /// The site directory; default `/etc/openstack`.
    fn site_config_dir(&self) -> PathBuf {
        PathBuf::from("/etc/openstack")
    }
}

/// The real process environment.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessEnv;

impl ClientEnv for ProcessEnv {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }

    fn current_dir(&self) -> Option<PathBuf> {
        std::env::current_dir().ok()
    }
}

/// A fixed environment (tests, or callers that want no ambient lookup).
#[derive(Debug, Clone, Default)]
pub struct FixedEnv {
    pub vars: BTreeMap<String, String>,
    pub current_dir: Option<PathBuf>,
    pub home_dir: Option<PathBuf>,
    /// `None` → `/etc/openstack`.
    pub site_config_dir: Option<PathBuf>,
}

impl ClientEnv for FixedEnv {
    fn var(&self, name: &str) -> Option<String> {
        self.vars.get(name).cloned()
    }

    fn current_dir(&self) -> Option<PathBuf> {
        self.current_dir.clone()
    }

    fn home_dir(&self) -> Option<PathBuf> {
        self.home_dir.clone()
    }

    fn site_config_dir(&self) -> PathBuf {
        self.site_config_dir
            .clone()
            .unwrap_or_else(|| PathBuf::from("/etc/openstack"))
    }
}

/// Candidate paths for `file_name`, in search order: `$env_var` (when set
/// and not empty), then `extra_dirs`, then the working, user
/// (`~/.config/openstack`) and site directories.
pub fn search_paths(
    env: &dyn ClientEnv,
    env_var: &str,
    extra_dirs: &[&Path],
    file_name: &str,
) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = extra_dirs.iter().map(|d| d.to_path_buf()).collect();
    dirs.extend(env.current_dir());
    dirs.extend(env.home_dir().map(|h| h.join(".config/openstack")));
    dirs.push(env.site_config_dir());
    env.var(env_var)
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .into_iter()
        .chain(dirs.into_iter().map(|d| d.join(file_name)))
        .collect()
}
