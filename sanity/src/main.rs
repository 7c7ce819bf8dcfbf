//! `cinder-csi-sanity`: run the CSI conformance cases against a driver and report.
//! Exit status: 0 when nothing failed, 1 when a case failed, 2 when the run could not start.

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

use cinder_csi_sanity::cli::Cli;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let (cfg, junit, list) = match cli.into_config() {
        Ok(v) => v,
        Err(e) => {
            eprintln!("cinder-csi-sanity: {e}");
            return ExitCode::from(2);
        }
    };
    if list {
        let cases = cinder_csi_sanity::list(&cfg);
        for (name, needs) in &cases {
            if needs.is_empty() {
                println!("{name}");
            } else {
                println!("{name}  [needs {needs}]");
            }
        }
        println!("{} cases", cases.len());
        return ExitCode::SUCCESS;
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cinder-csi-sanity: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    let mut print = |r: &cinder_csi_sanity::CaseReport| {
        println!("{}", r.line());
        let _ = std::io::stdout().flush();
    };
    let report = match runtime.block_on(cinder_csi_sanity::run(&cfg, &mut print)) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("cinder-csi-sanity: {e}");
            return ExitCode::from(2);
        }
    };
    if let Some(path) = junit {
        if let Err(e) = std::fs::write(&path, report.junit()) {
            eprintln!("cinder-csi-sanity: cannot write {}: {e}", path.display());
            return ExitCode::from(2);
        }
    }
    println!("{}", report.summary());
    if report.failed() == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
