//! One `ctl` invocation: connect, call the RPC, print the answer.

use std::time::Duration;

use super::args::{CtlArgs, Output};
use super::client::Client;
use super::rpc::CtlError;
use super::{commands, render};

/// Exit statuses: 0 success, 1 the RPC failed, 2 could not connect or bad local input.
pub async fn run(args: CtlArgs) -> u8 {
    let client = match Client::connect(&args.endpoint, Duration::from_secs(args.timeout)).await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("cinder-csi ctl: {e}");
            return 2;
        }
    };
    match commands::run(&client, &args.rpc).await {
        Ok(v) => {
            match args.output {
                Output::Json => println!(
                    "{}",
                    serde_json::to_string_pretty(&v).unwrap_or_else(|_| v.to_string())
                ),
                Output::Text => print!("{}", render::text(&v)),
            }
            0
        }
        Err(e) => {
            match (&e, args.output) {
                (CtlError::Rpc { rpc, status }, Output::Json) => eprintln!(
                    "{}",
                    serde_json::json!({"rpc": rpc, "code": format!("{:?}", status.code()),
                        "message": status.message()})
                ),
                _ => eprintln!("cinder-csi ctl: {e}"),
            }
            match e {
                CtlError::Rpc { .. } => 1,
                CtlError::Local(_) => 2,
            }
        }
    }
}
