//! The `mslink` binary: a thin wrapper over [`mslink_cli::main_with_args`], which the Python
//! package (`mslink` console script) calls too, so there is one implementation of the CLI.

fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(mslink_cli::main_with_args(std::env::args_os()))
}
