//! `mslink tunnel`: the multi-service link layer between two hosts over an encrypted UDP
//! tunnel (docs/tunnel.md), and its key tools.
//!
//! Contract: `mslink tunnel CONFIG.toml` runs one tunnel end in the foreground until SIGINT
//! or SIGTERM (systemd `Type=simple`), logging to stderr; SIGUSR1 or `--stats-interval` prints
//! the counters. `genkey` prints a new private key, `pubkey` reads a private key on standard
//! input and prints its public key, `genpsk` prints a pre-shared key. Configuration errors
//! name the file, the key and the line.

use std::io::Read;
use std::path::PathBuf;

use anyhow::{Context, Result};
use mslink_tunnel::config::TunnelConfig;
use mslink_tunnel::keys::Key;
use mslink_tunnel::rt::{self, Control, Level, RunOptions};
use rand::SeedableRng;

/// Options of `mslink tunnel`.
#[derive(clap::Args, Debug)]
#[command(
    args_conflicts_with_subcommands = true,
    after_help = "Examples:\n  mslink tunnel genkey > a.key && mslink tunnel pubkey < a.key > a.pub\n  mslink tunnel a.toml --stats-interval 10      # runs until SIGINT or SIGTERM\n  mslink tunnel a.toml -q                       # warnings and errors only\n\nkill -USR1 PID prints the counters of a running tunnel. See docs/tunnel.md for a complete\ntwo-namespace example."
)]
pub struct TunnelArgs {
    #[command(subcommand)]
    cmd: Option<KeyCmd>,
    /// The tunnel configuration (TOML; docs/tunnel.md).
    config: Option<PathBuf>,
    /// Print the counters every SECONDS (also on SIGUSR1).
    #[arg(long, value_name = "SECONDS")]
    stats_interval: Option<f64>,
    /// Least severe log level printed: error, warn, info, debug (every rejected datagram).
    #[arg(long, default_value = "info")]
    log_level: Level,
    /// Warnings and errors only (the same as --log-level warn).
    #[arg(short, long, conflicts_with = "log_level")]
    quiet: bool,
}

#[derive(clap::Subcommand, Debug)]
enum KeyCmd {
    /// Print a new X25519 private key (base64).
    #[command(
        after_help = "Examples:\n  mslink tunnel genkey > a.key\n  (umask 077; mslink tunnel genkey > b.key)   # readable by you only"
    )]
    Genkey,
    /// Read a private key on standard input, print its public key.
    #[command(
        after_help = "Examples:\n  mslink tunnel genkey > a.key && mslink tunnel pubkey < a.key > a.pub\n  mslink tunnel genkey | mslink tunnel pubkey"
    )]
    Pubkey,
    /// Print a new pre-shared key (base64), for `psk = ...` on both ends.
    #[command(
        after_help = "Examples:\n  mslink tunnel genpsk > psk     # then psk_file = 'psk' on both ends"
    )]
    Genpsk,
}

fn fresh_key() -> Result<Key> {
    let seed = mslink_io::seed::os_random().context("reading the kernel's random generator")?;
    Ok(Key::generate(&mut rand_chacha::ChaCha20Rng::from_seed(
        seed,
    )))
}

/// Runs `mslink tunnel`.
pub fn run(args: &TunnelArgs) -> Result<()> {
    match args.cmd {
        Some(KeyCmd::Genkey) | Some(KeyCmd::Genpsk) => {
            println!("{}", fresh_key()?.to_base64());
            return Ok(());
        }
        Some(KeyCmd::Pubkey) => {
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .context("reading the private key on standard input")?;
            let k = Key::from_base64(&s).context("the private key on standard input")?;
            println!("{}", k.public().to_base64());
            return Ok(());
        }
        None => {}
    }
    let path = args.config.as_ref().context(
        "give a configuration file (mslink tunnel CONFIG.toml) or a key command; see --help",
    )?;
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let cfg: TunnelConfig = toml::from_str(&text).with_context(|| format!("{}", path.display()))?;
    // Key files are named relative to the configuration's folder.
    let cfg = cfg.relative_to(path.parent().unwrap_or(std::path::Path::new("")));
    cfg.validate()
        .with_context(|| format!("{}", path.display()))?;
    let stats_interval = match args.stats_interval {
        Some(s) if s.is_finite() && s > 0.0 => Some(std::time::Duration::from_secs_f64(s)),
        Some(s) => anyhow::bail!("--stats-interval {s}: expected a positive number of seconds"),
        None => None,
    };
    let level = if args.quiet {
        Level::Warn
    } else {
        args.log_level
    };
    mslink_io::log::init(level.into());
    let opts = RunOptions {
        stats_interval,
        handle_signals: true,
        label: cfg.tun.name.clone(),
    };
    rt::run(&cfg, &opts, &Control::default()).with_context(|| format!("tunnel {}", path.display()))
}
