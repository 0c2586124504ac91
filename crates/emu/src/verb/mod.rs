//! The `mslink emulate` verb as a library: options in, a run of the emulator, its notes, live
//! view and summary out.
//!
//! Contract. The CLI parses the command line into an [`EmulateOptions`] (plain data, no
//! argument parser here) and calls [`run`], which returns the exit code the process should end
//! with. [`run`] builds the hop's [`crate::EmuConfig`] from the link file, the shortcuts and
//! the `--set` overrides ([`options::config`]), checks the options against one another and
//! creates the folders the outputs go into before anything starts ([`checks`]), runs a
//! [`crate::session::Session`] while printing its events and, when on, the live view
//! ([`live_view`]) on standard error, then prints the summary and writes it as JSON
//! ([`report`]). It fails when packet accounting does not add up. Errors carry the context the
//! CLI prints (the option, the file, the key); messages and JSON are the verb's own, byte for
//! byte, so scripts reading them see no change whichever crate holds the code.

pub mod checks;
pub mod live_view;
pub mod options;
pub mod prompt;
pub mod report;
mod run;

pub use live_view::{counters_line, View};
pub use options::{config, EmulateOptions};
pub use prompt::prompt_text;
pub use run::run;
