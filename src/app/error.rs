//! Startup failures and the exit status each gives.

/// Startup failures. `Config` exits with status 64 (EX_USAGE) before anything binds.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error("{0}")]
    Config(String),
    #[error("{0}")]
    Runtime(String),
}

impl AppError {
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::Config(_) => 64,
            Self::Runtime(_) => 1,
        }
    }
}
