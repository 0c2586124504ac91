//! The `mslink` binary: a thin wrapper over [`mslink_cli::main_with_args`]; the Python
//! package's `mslink` script execs this binary, so there is one implementation of the CLI.
//!
//! A reader that closes the pipe early (`mslink trace stats F | head -c1`) ends the command
//! quietly with status 141, as a shell reports a process that SIGPIPE ended: the standard
//! library's printing macros panic on a broken pipe, and that panic is neither shown nor
//! reported as a crash.

fn main() -> std::process::ExitCode {
    let shown = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !mslink_cli::is_broken_pipe(info.payload()) {
            shown(info);
        }
    }));
    match std::panic::catch_unwind(|| mslink_cli::main_with_args(std::env::args_os())) {
        Ok(code) => std::process::ExitCode::from(code),
        Err(p) if mslink_cli::is_broken_pipe(p.as_ref()) => {
            std::process::ExitCode::from(mslink_cli::BROKEN_PIPE_STATUS)
        }
        Err(p) => std::panic::resume_unwind(p),
    }
}
