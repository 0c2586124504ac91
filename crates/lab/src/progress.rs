//! Where a long job of the lab reports: phases of counted steps, notes and warnings. The CLI
//! draws a progress bar and prints the lines; the Python package and tests stay silent.

/// Where progress goes (a progress bar and notes in the CLI).
pub trait Progress: Sync {
    /// A phase of `len` steps of `what` starts.
    fn phase(&self, len: u64, what: &str);
    /// One step done.
    fn tick(&self);
    /// The phase is over.
    fn done(&self);
    /// A line for the user (unless quiet).
    fn note(&self, line: &str);
    /// A warning for the user, shown even when quiet.
    fn warn(&self, line: &str);
}

/// No progress shown.
pub struct Silent;

impl Progress for Silent {
    fn phase(&self, _: u64, _: &str) {}
    fn tick(&self) {}
    fn done(&self) {}
    fn note(&self, _: &str) {}
    fn warn(&self, _: &str) {}
}
