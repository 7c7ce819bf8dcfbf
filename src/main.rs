use std::process::ExitCode;

use cinder_csi::app::cli::{LogFormat, Mode, ServeArgs};
use cinder_csi::app::telemetry::fatal_line;
use cinder_csi::app::{self, AppError};
use cinder_csi::tools::cli::Command;

/// Async worker threads of a node-only process, at most (fewer on fewer CPUs).
const NODE_WORKERS: usize = 2;

fn main() -> ExitCode {
    // Upstream manifests pass `/bin/cinder-csi-plugin` as the first argument.
    let argv = cinder_csi::app::cli::normalize_argv(std::env::args_os());
    let cli = match cinder_csi::tools::cli::parse_from(&argv) {
        Ok(cli) => cli,
        Err(e) if e.use_stderr() => {
            let env = std::env::var("CINDER_CSI_LOG_FORMAT").ok();
            match cinder_csi::app::cli::log_format_hint(&argv, env.as_deref()) {
                LogFormat::Text => {
                    let _ = e.print();
                }
                json => eprintln!("{}", fatal_line(json, &e.to_string(), 64)),
            }
            return ExitCode::from(64);
        }
        Err(e) => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
    };
    match cli.command {
        None => serve(cli.serve),
        Some(Command::Serve(args)) => serve(*args),
        Some(Command::Ctl(args)) => client(cinder_csi::tools::ctl::run(*args)),
        Some(Command::Demo(args)) => client(cinder_csi::tools::demo::run(args)),
        Some(Command::Doctor(args)) => client(cinder_csi::tools::doctor::run(*args)),
    }
}

/// Run a client subcommand (ctl, demo, doctor) to completion; it returns its exit status.
fn client(fut: impl std::future::Future<Output = u8>) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cinder-csi: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    ExitCode::from(runtime.block_on(fut))
}

fn serve(args: ServeArgs) -> ExitCode {
    let format = args.log_format;
    if let Err(e) = cinder_csi::app::telemetry::init(format, &args.effective_log_level()) {
        eprintln!("{}", fatal_line(format, &e, 64));
        return ExitCode::from(64);
    }
    // Before the runtime starts its threads: arenas are made as threads first contend.
    cinder_csi::app::memory::limit_arenas();
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.enable_all().thread_name("cinder-csi");
    // TOKIO_WORKER_THREADS, when set, still decides (tokio reads it when none is given).
    if args.effective_mode() == Ok(Mode::Node) && std::env::var_os("TOKIO_WORKER_THREADS").is_none()
    {
        // The node plugin's RPCs are few and do their host work on the blocking pool: more
        // async workers than 2 only add idle threads (a stack and a malloc arena each) on
        // every core of a large node.
        builder.worker_threads(
            NODE_WORKERS
                .min(std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)),
        );
    }
    let runtime = match builder.build() {
        Ok(rt) => rt,
        Err(e) => {
            let msg = format!("cannot start the async runtime: {e}");
            eprintln!("{}", fatal_line(format, &msg, 1));
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(app::run(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(format, e),
    }
}

fn fail(format: LogFormat, e: AppError) -> ExitCode {
    // One clear line, in the log's format; config errors say what to fix.
    eprintln!("{}", fatal_line(format, &e.to_string(), e.exit_code()));
    ExitCode::from(e.exit_code())
}
