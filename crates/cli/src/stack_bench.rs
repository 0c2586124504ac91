//! `mslink stack-bench`: round-trip latency of the mslink-stack protocol graph (002 §5.2,
//! Tables 1-3) on the in-memory wire, per stack (ETH, IP-ETH, UDP-IP-ETH), architecture (LLM,
//! DAA, ILLM) and user data size, and UDP with its checksum on, ILP off vs on.
//!
//! Contract: a client and a server stack in this process ping-pong `--transactions` times per
//! cell; the figure is the mean wall-clock round trip (this driver reads the clock; the stacks do
//! not). It measures protocol processing alone: there is no device, no copy to a kernel, no
//! interrupt. Checksums are off in the latency tables, as in 002 §5.2. Output: a table per
//! experiment, and with `--csv FILE` one row per cell plus, beside FILE (unless `--no-plots`),
//! PNG and SVG figures drawn with [`crate::chart`]: `STEM_rtt_memory` (and `STEM_rtt_veth`
//! with `--veth`): round trip vs user data size per architecture and layering (002 Tables 1-3);
//! `STEM_fig4`: p50 round trip of the prioritised UDP-DAA flow and of plain UDP vs the number
//! of background flows, at both background sizes (002 Fig. 4).

use std::io::Write;
use std::time::Instant as WallClock;

use anyhow::{bail, Context, Result};
use mslink_link::Instant;
use mslink_stack::wire::Wire;
use mslink_stack::{Architecture, EndpointId, Participants, Stack, StackConfig, UdpConn};

/// Options of `mslink stack-bench`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  mslink stack-bench\n  mslink stack-bench --transactions 100000 --csv stack.csv"
)]
pub struct StackBenchArgs {
    /// Round trips per cell.
    #[arg(long, default_value_t = 10_000)]
    pub transactions: u32,
    /// Repetitions of each cell; the smallest mean is reported (least disturbed by other load).
    #[arg(long, default_value_t = 5)]
    pub repeat: u32,
    /// Also measure over AF_PACKET sockets on a veth pair between two network namespaces this
    /// command creates and removes (Linux, needs root and `ip`).
    #[arg(long)]
    pub veth: bool,
    /// Also write one CSV row per cell to this file, and the figures beside it.
    #[arg(long)]
    pub csv: Option<std::path::PathBuf>,
    /// With --csv: do not draw the PNG and SVG figures.
    #[arg(long)]
    pub no_plots: bool,
}

/// CSV rows: device, architecture (or experiment), stack, size, checksum, ilp, µs.
type Rows = Vec<(&'static str, String, String, usize, bool, bool, f64)>;

/// User data sizes of 002 Tables 1-3.
const SIZES: [usize; 5] = [1, 100, 500, 1000, 1400];
/// Ethertype of an application directly on Ethernet (IEEE local experimental 2).
const APP_ETHERTYPE: u32 = 0x88B6;
/// IP protocol number of an application directly on IP (RFC 3692 experimental).
const APP_IPPROTO: u32 = 253;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Layer {
    Eth,
    Ip,
    Udp,
}

impl Layer {
    fn name(self, arch: Architecture) -> String {
        let base = match self {
            Layer::Eth => "ETH",
            Layer::Ip => "IP-ETH",
            Layer::Udp => "UDP-IP-ETH",
        };
        if arch == Architecture::Daa {
            format!("{base}DAA")
        } else {
            base.to_string()
        }
    }
}

struct Pair {
    client: Stack,
    server: Stack,
    ce: EndpointId,
}

fn pair(arch: Architecture, layer: Layer, checksum: bool, ilp: bool) -> Result<Pair> {
    let cc = StackConfig {
        architecture: arch,
        ilp,
        ..Default::default()
    };
    let cs = StackConfig {
        architecture: arch,
        ilp,
        ..StackConfig::host(2)
    };
    let (mut client, ic) = Stack::udp_ip_eth(cc.clone());
    let (mut server, is) = Stack::udp_ip_eth(cs.clone());
    let pc = Participants {
        remote_mac: cs.station,
        remote_ip: cs.address,
        local_port: 7000,
        remote_port: 7,
        remote_app: 2,
        udp_checksum: checksum,
        ..Default::default()
    };
    let ps = Participants {
        remote_mac: cc.station,
        remote_ip: cc.address,
        local_port: 7,
        remote_port: 7000,
        remote_app: 1,
        udp_checksum: checksum,
        ..Default::default()
    };
    let (top_c, top_s, number) = match layer {
        Layer::Eth => (ic.eth, is.eth, APP_ETHERTYPE),
        Layer::Ip => (ic.ip, is.ip, APP_IPPROTO),
        Layer::Udp => (ic.udp, is.udp, 0),
    };
    let (ce, _) = client
        .open(top_c, pc, number, Some(1))
        .context("opening the client endpoint")?;
    server
        .open(top_s, ps, number, Some(2))
        .context("opening the server endpoint")?;
    Ok(Pair { client, server, ce })
}

/// Best over `reps` runs of the mean round trip (µs) of `n` ping-pongs, after a warm-up run.
fn best_rtt(p: &mut Pair, size: usize, n: u32, reps: u32) -> Result<f64> {
    ping_pong(p, size, n.min(1000))?;
    let mut v = (0..reps.max(1))
        .map(|_| ping_pong(p, size, n))
        .collect::<Result<Vec<f64>>>()?;
    v.sort_by(f64::total_cmp);
    Ok(v[0])
}

/// Mean round trip in microseconds over `n` ping-pongs of `size` bytes.
fn ping_pong(p: &mut Pair, size: usize, n: u32) -> Result<f64> {
    let data = vec![0x42u8; size];
    let mut w = Wire::new();
    let t = Instant::ZERO;
    let start = WallClock::now();
    for _ in 0..n {
        p.client.send(t, p.ce, &data)?;
        w.pump(t, &mut p.client, &mut p.server);
        let Some(d) = p.server.poll_deliver() else {
            bail!("server received nothing")
        };
        // Echo the user data (an application on raw Ethernet also sees the link padding).
        p.server
            .send(t, d.endpoint, &d.data[..size.min(d.data.len())])?;
        w.pump(t, &mut p.client, &mut p.server);
        if p.client.poll_deliver().is_none() {
            bail!("client received no reply");
        }
    }
    Ok(start.elapsed().as_secs_f64() * 1e6 / n as f64)
}

/// Round trips over AF_PACKET on a veth pair: the server stack echoes in its own thread.
#[cfg(target_os = "linux")]
fn veth_tables(args: &StackBenchArgs, rows: &mut Rows) -> Result<()> {
    use mslink_stack::afpacket::AfPacket;
    use mslink_stack::veth::VethPair;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    let n = args.transactions.clamp(1, 2000);
    let ns = VethPair::create("mslink-bench")
        .context("creating namespaces and a veth pair (root and `ip` needed)")?;
    let to = Duration::from_millis(100);
    let dev_a = Arc::new(VethPair::within(&ns.a, move || AfPacket::open("v0", to))??);
    let dev_b = Arc::new(VethPair::within(&ns.b, move || AfPacket::open("v1", to))??);
    for arch in Architecture::ALL {
        println!("{} protocol stack: mean round trip (µs), AF_PACKET over veth, checksum off, best of {} x {n} transactions", arch.name().to_uppercase(), args.repeat);
        print!("{:<16}", "stack");
        for s in SIZES {
            print!("{s:>9}");
        }
        println!();
        for layer in [Layer::Eth, Layer::Ip, Layer::Udp] {
            print!("{:<16}", layer.name(arch));
            for size in SIZES {
                let Pair {
                    mut client,
                    mut server,
                    ce,
                } = pair(arch, layer, false, false)?;
                let stop = Arc::new(AtomicBool::new(false));
                let (db, st) = (dev_b.clone(), stop.clone());
                let echo = std::thread::spawn(move || -> std::io::Result<()> {
                    while !st.load(Ordering::Relaxed) {
                        db.receive(Instant::ZERO, &mut server)?;
                        while let Some(d) = server.poll_deliver() {
                            let len = size.min(d.data.len());
                            let _ = server.send(Instant::ZERO, d.endpoint, &d.data[..len]);
                        }
                        db.transmit(&mut server)?;
                    }
                    Ok(())
                });
                let data = vec![0x42u8; size];
                let mut best = f64::INFINITY;
                for rep in 0..=args.repeat.max(1) {
                    let start = WallClock::now();
                    for _ in 0..n {
                        client.send(Instant::ZERO, ce, &data)?;
                        dev_a.transmit(&mut client)?;
                        let mut waits = 0;
                        loop {
                            if !dev_a.receive(Instant::ZERO, &mut client)? {
                                waits += 1;
                                if waits > 20 {
                                    bail!("no reply over the veth after 2 s");
                                }
                            }
                            if client.poll_deliver().is_some() {
                                break;
                            }
                        }
                    }
                    if rep > 0 {
                        // Repetition 0 warms up.
                        best = best.min(start.elapsed().as_secs_f64() * 1e6 / n as f64);
                    }
                }
                stop.store(true, Ordering::Relaxed);
                echo.join()
                    .map_err(|_| anyhow::anyhow!("echo thread panicked"))??;
                print!("{best:>9.2}");
                rows.push((
                    "veth",
                    arch.name().into(),
                    layer.name(arch),
                    size,
                    false,
                    false,
                    best,
                ));
            }
            println!();
        }
        println!();
    }
    drop(ns);
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn veth_tables(_: &StackBenchArgs, _: &mut Rows) -> Result<()> {
    bail!("--veth needs Linux")
}

/// 002 Fig. 4 on the in-memory wire: p50 round trip (µs) of a 1-byte probe flow among
/// `background` ping-pong flows of `bg_size` bytes. With `daa_priority` the server is a DAA stack
/// whose received work waits in the priority queue and the probe's frames carry priority 7;
/// otherwise it is the LLM stack ("plain UDP"), which processes frames in arrival order. The
/// server does one frame's work per loop turn, so the probe waits for whatever is processed
/// before it; the clock measures that real processing.
fn fig4_p50(daa_priority: bool, background: usize, bg_size: usize, samples: usize) -> Result<f64> {
    let arch = if daa_priority {
        Architecture::Daa
    } else {
        Architecture::Llm
    };
    let cc = StackConfig {
        architecture: arch,
        ..Default::default()
    };
    let cs = StackConfig {
        architecture: arch,
        priority_queue: if daa_priority { 4096 } else { 0 },
        ..StackConfig::host(2)
    };
    let (mut client, ic) = Stack::udp_ip_eth(cc.clone());
    let (mut server, is) = Stack::udp_ip_eth(cs.clone());
    let flows = background + 1;
    let mut ce = Vec::new();
    for f in 0..flows {
        let prio = if f == 0 && daa_priority { 7 } else { 0 };
        let (cport, sport, capp, sapp) = (
            3000 + f as u16,
            4000 + f as u16,
            100 + f as u32,
            200 + f as u32,
        );
        let c = UdpConn {
            local_port: cport,
            remote_port: sport,
            local_app: capp,
            remote_app: sapp,
            priority: prio,
            ..Default::default()
        };
        ce.push(client.open_udp_to(ic.udp, &cs, c)?.0);
        server.open_udp_to(
            is.udp,
            &cc,
            UdpConn {
                priority: 0,
                ..c.reversed()
            },
        )?;
    }
    let t = Instant::ZERO;
    let start = WallClock::now();
    let mut sent_at = vec![start; flows];
    for f in (0..flows).rev() {
        client.send(t, ce[f], &vec![f as u8; if f == 0 { 1 } else { bg_size }])?;
    }
    let mut w = Wire::new();
    let mut rtts: Vec<f64> = Vec::with_capacity(samples);
    // Server input queue for the LLM case: frames wait here and are processed one per turn.
    let mut fifo: std::collections::VecDeque<Vec<u8>> = std::collections::VecDeque::new();
    while rtts.len() < samples {
        while let Some(m) = server.poll_transmit_msg() {
            client.handle_frame(t, m.bytes());
        }
        while let Some(d) = client.poll_deliver() {
            let f = d.endpoint.0 as usize;
            let now = WallClock::now();
            if f == 0 {
                rtts.push(now.duration_since(sent_at[0]).as_secs_f64() * 1e6);
            }
            sent_at[f] = now;
            client.send(t, ce[f], &d.data)?;
        }
        if daa_priority {
            w.pump(t, &mut client, &mut server);
        } else {
            while let Some(m) = client.poll_transmit_msg() {
                fifo.push_back(m.bytes().to_vec());
            }
            if let Some(fr) = fifo.pop_front() {
                server.handle_frame(t, &fr);
            }
        }
        if let Some(d) = server.poll_deliver() {
            server.send(t, d.endpoint, &d.data)?;
        }
    }
    rtts.sort_by(f64::total_cmp);
    Ok(rtts[rtts.len() / 2])
}

fn fig4_table(rows: &mut Rows) -> Result<()> {
    println!("002 Fig. 4: p50 round trip (µs) of a 1-byte flow vs background ping-pong flows, in-memory wire");
    println!(
        "{:<12}{:>14}{:>14}{:>14}{:>14}",
        "background", "UDPDAA(1)", "UDP(1)", "UDPDAA(1000)", "UDP(1000)"
    );
    for bg in [0usize, 2, 4, 8, 12, 16] {
        print!("{bg:<12}");
        for size in [1usize, 1000] {
            for prio in [true, false] {
                let us = fig4_p50(prio, bg, size, 2001)?;
                print!("{us:>14.3}");
                let name = if prio { "UDPDAA-prio" } else { "UDP" };
                rows.push((
                    "memory",
                    format!("fig4-bg{bg}"),
                    name.into(),
                    size,
                    false,
                    false,
                    us,
                ));
            }
        }
        println!();
    }
    println!();
    Ok(())
}

/// Runs the verb.
pub fn run(args: &StackBenchArgs) -> Result<()> {
    let n = args.transactions.max(1);
    let mut rows: Rows = Vec::new();
    for arch in Architecture::ALL {
        println!("{} protocol stack: mean round trip (µs), in-memory wire, checksum off, best of {} x {n} transactions", arch.name().to_uppercase(), args.repeat);
        print!("{:<16}", "stack");
        for s in SIZES {
            print!("{s:>9}");
        }
        println!();
        for layer in [Layer::Eth, Layer::Ip, Layer::Udp] {
            print!("{:<16}", layer.name(arch));
            for size in SIZES {
                let mut p = pair(arch, layer, false, false)?;
                let us = best_rtt(&mut p, size, n, args.repeat)?;
                print!("{us:>9.3}");
                rows.push((
                    "memory",
                    arch.name().into(),
                    layer.name(arch),
                    size,
                    false,
                    false,
                    us,
                ));
            }
            println!();
        }
        println!();
    }
    println!("UDP-IP-ETH, checksum on, 1400 bytes: copy then checksum vs copy-and-checksum (ILP)");
    println!(
        "{:<8}{:>12}{:>12}{:>10}",
        "arch", "two-pass", "one-pass", "gain"
    );
    for arch in Architecture::ALL {
        let mut off = pair(arch, Layer::Udp, true, false)?;
        let mut on = pair(arch, Layer::Udp, true, true)?;
        let a = best_rtt(&mut off, 1400, n, args.repeat)?;
        let b = best_rtt(&mut on, 1400, n, args.repeat)?;
        println!(
            "{:<8}{a:>12.3}{b:>12.3}{:>9.1}%",
            arch.name(),
            100.0 * (a - b) / a
        );
        rows.push((
            "memory",
            arch.name().into(),
            "UDP-IP-ETH".into(),
            1400,
            true,
            false,
            a,
        ));
        rows.push((
            "memory",
            arch.name().into(),
            "UDP-IP-ETH".into(),
            1400,
            true,
            true,
            b,
        ));
    }
    fig4_table(&mut rows)?;
    if args.veth {
        veth_tables(args, &mut rows)?;
    }
    if let Some(path) = &args.csv {
        let mut f =
            std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
        writeln!(f, "device,architecture,stack,size,checksum,ilp,rtt_us")?;
        for (d, a, s, z, c, i, us) in &rows {
            writeln!(f, "{d},{a},{s},{z},{c},{i},{us:.4}")?;
        }
        if !args.no_plots {
            write_plots(&rows, path)?;
        }
    }
    Ok(())
}

/// Points per series label, series in first-seen order.
type Series = Vec<(String, Vec<(f64, f64)>)>;

fn push(series: &mut Series, label: String, x: f64, y: f64) {
    match series.iter_mut().find(|(l, _)| *l == label) {
        Some((_, pts)) => pts.push((x, y)),
        None => series.push((label, vec![(x, y)])),
    }
}

/// The figures of `rows`, named after the CSV file `csv` and written beside it.
fn write_plots(rows: &Rows, csv: &std::path::Path) -> Result<Vec<std::path::PathBuf>> {
    use crate::chart::{line_chart, LegendAt, Scale};
    let stem = csv
        .file_stem()
        .map_or("stack".into(), |s| s.to_string_lossy().into_owned());
    let at = |name: &str| csv.with_file_name(format!("{stem}_{name}"));
    let mut files = Vec::new();
    for device in ["memory", "veth"] {
        let mut series = Series::new();
        for (d, arch, stack, size, checksum, _, us) in rows {
            if *d == device && !checksum && !arch.starts_with("fig4") {
                push(&mut series, format!("{arch} {stack}"), *size as f64, *us);
            }
        }
        if series.is_empty() {
            continue;
        }
        let wire = if device == "memory" {
            "in-memory wire"
        } else {
            "AF_PACKET over veth"
        };
        files.extend(line_chart(
            &at(&format!("rtt_{device}")),
            &format!("Round trip vs user data size, {wire}, checksum off (002 Tables 1-3)"),
            "user data (bytes)",
            "mean round trip (µs)",
            series,
            // The y axis starts at 0, below every round trip: room at the bottom.
            Scale {
                legend: LegendAt::LowerRight,
                ..Scale::default()
            },
        )?);
    }
    let mut fig4 = Series::new();
    for (_, arch, stack, size, _, _, us) in rows {
        if let Some(bg) = arch
            .strip_prefix("fig4-bg")
            .and_then(|b| b.parse::<f64>().ok())
        {
            push(&mut fig4, format!("{stack} ({size} B background)"), bg, *us);
        }
    }
    if !fig4.is_empty() {
        files.extend(line_chart(
            &at("fig4"),
            "1-byte flow round trip, prioritised UDP-DAA vs plain UDP (002 Fig. 4)",
            "background ping-pong flows",
            "p50 round trip (µs)",
            fig4,
            // Plain UDP climbs to the upper right; the prioritised flow stays low.
            Scale {
                legend: LegendAt::UpperLeft,
                ..Scale::default()
            },
        )?);
    }
    Ok(files)
}
