//! `mslink completions SHELL` and `mslink man`: shell completions and man pages generated from
//! the very clap definitions the command parses with, so they cannot drift from it.
//!
//! Contract: `completions` prints the completion script of one shell on standard output;
//! `man --out DIR` writes `mslink.1` and one `mslink-VERB[-SUBVERB].1` per (sub)verb into DIR
//! (created if missing), and with `--json` prints the list of pages written. Installation is
//! described in docs/cli.md.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap_complete::Shell;

/// Options of `mslink completions`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  mslink completions bash > mslink.bash   # then: source mslink.bash\n  mslink completions zsh > _mslink        # a folder on $fpath\n  mslink completions fish > mslink.fish   # ~/.config/fish/completions/\n\nSee docs/cli.md for where each shell looks."
)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// Options of `mslink man`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  mslink man --out man/man1                # then: MANPATH=$PWD/man man mslink-sim\n  mslink man --out man/man1 --json -q"
)]
pub struct ManArgs {
    /// Folder for the man pages (created if missing).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Print the list of pages written as one JSON document.
    #[arg(long)]
    pub json: bool,
    /// Do not print the pages written.
    #[arg(short, long)]
    pub quiet: bool,
}

/// Prints the completion script.
pub fn completions(args: &CompletionsArgs) -> Result<()> {
    let mut cmd = crate::command();
    let mut out = std::io::stdout().lock();
    clap_complete::generate(args.shell, &mut cmd, "mslink", &mut out);
    Ok(())
}

/// The (file name, command) of every page: the root and each (sub)verb, depth first.
fn pages(cmd: &clap::Command, stem: &str, out: &mut Vec<(String, clap::Command)>) {
    out.push((format!("{stem}.1"), cmd.clone()));
    for sub in cmd.get_subcommands() {
        if sub.get_name() == "help" {
            continue;
        }
        let stem = format!("{stem}-{}", sub.get_name());
        // The page's title and its usage line name the full command path.
        let named = sub.clone().display_name(stem.clone());
        pages(&named, &stem, out);
    }
}

/// Every man page as (file name, roff text).
pub fn render_pages() -> Result<Vec<(String, Vec<u8>)>> {
    let mut cmd = crate::command();
    cmd.build();
    let mut list = Vec::new();
    pages(&cmd, "mslink", &mut list);
    list.into_iter()
        .map(|(name, c)| {
            let mut buf = Vec::new();
            clap_mangen::Man::new(c)
                .render(&mut buf)
                .with_context(|| format!("rendering {name}"))?;
            Ok((name, buf))
        })
        .collect()
}

/// Writes the man pages.
pub fn man(args: &ManArgs) -> Result<()> {
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating the folder {} (--out)", args.out.display()))?;
    let mut written = Vec::new();
    for (name, text) in render_pages()? {
        let path = args.out.join(&name);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        written.push(path.display().to_string());
    }
    if args.json {
        println!("{}", serde_json::json!({ "pages": written }));
    } else if !args.quiet {
        for p in &written {
            println!("{p}");
        }
    }
    Ok(())
}
