//! Per-flow memory of the simulator (issue 18): heap bytes per flow, counted by the allocator.
//!
//! Contract. Runs `mslink_sim::run` on small scenarios with N and 2N copies of one flow kind and
//! prints, per kind, the peak heap of each run and `(peak(2N) - peak(N)) / N`: what one more
//! flow costs at the peak, results included. The counts come from a counting global allocator
//! (requested bytes, not the allocator's rounding, not RSS), so they are exact and the same on
//! every run; `resources.rs`'s estimate per flow (`world/footprint.rs`, with glibc's rounding
//! and worst cases) is printed beside them, and so is what the run's results take as one
//! `serde_json::Value` (how `mslink sim` writes summary.json today). With a scenario path as argument it runs that
//! scenario instead (`--set`-style `KEY=VALUE` arguments after it) and prints its peak heap
//! and heap per flow. A benchmark, not a test: it asserts nothing.
//!
//! ```sh
//! cargo bench -p mslink-sim --bench flow_memory
//! cargo bench -p mslink-sim --bench flow_memory -- scenarios/bench/cbr_1m_flows.toml
//! ```

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use mslink_sim::{run, Scenario};

struct Counting;

static NOW: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            let now = NOW.fetch_add(l.size(), Relaxed) + l.size();
            PEAK.fetch_max(now, Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) };
        NOW.fetch_sub(l.size(), Relaxed);
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Peak heap while parsing and running `text` once (results kept until the peak is read),
/// and the number of flows.
fn peak(sc: &Scenario) -> (usize, usize) {
    PEAK.store(NOW.load(Relaxed), Relaxed);
    let before = NOW.load(Relaxed);
    let r = run(sc, 0, &mut |_| Err(std::io::Error::other("no traces"))).expect("runs");
    let p = PEAK.load(Relaxed) - before;
    (p, r.flows.len())
}

fn scenario(text: &str) -> Scenario {
    let sc = Scenario::parse(text).expect("parses");
    sc.validate().expect("valid");
    sc
}

/// One kind of flow on the path of `scenarios/bench/cbr_1000_flows.toml` (wired, then a
/// wireless hop), 2 simulated seconds, its copies spread over the first second.
fn kind(app: &str, n: usize) -> String {
    format!(
        "[sim]\nduration_s = 2\ndrain_s = 1\ntimeseries_window_s = 0\n\
         [[segment]]\nkind = \"wired\"\nrate_bps = 1e9\nqueue_packets = 100000\n\
         [[segment]]\nkind = \"wireless\"\nrate_bps = 1e9\nframe_bytes = 1500\n\
         error = {{ model = \"exponential\", mean_bytes = 65536 }}\n\
         [[flow]]\nname = \"f\"\nfrom = 0\nto = 2\ncount = {n}\n\
         start = {{ dist = \"uniform\", spread_s = 1 }}\n{app}\n"
    )
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    if let Some(path) = args.first() {
        let text = std::fs::read_to_string(path).expect("reads the scenario");
        let sets: Vec<(String, String)> = args[1..]
            .iter()
            .map(|a| mslink_sim::overrides::parse_set(a).expect("KEY=VALUE"))
            .collect();
        let sc = scenario(&text).with_overrides(&sets).expect("overrides");
        sc.validate().expect("valid");
        let (p, flows) = peak(&sc);
        println!(
            "{path}: {flows} flows, peak heap {:.1} MiB, {} bytes per flow",
            p as f64 / (1 << 20) as f64,
            p / flows.max(1)
        );
        return;
    }
    {
        // What `mslink sim` adds while writing summary.json today: the run as one
        // `serde_json::Value` (crates/lab/src/campaign/output.rs, `write_run`).
        let n = 20_000;
        let text = kind("app = \"cbr\"\nrate_bps = 256\npacket_bytes = 160", n);
        let r = run(&scenario(&text), 0, &mut |_| {
            Err(std::io::Error::other("no traces"))
        })
        .expect("runs");
        PEAK.store(NOW.load(Relaxed), Relaxed);
        let before = NOW.load(Relaxed);
        let v = serde_json::to_value(&r).expect("serialises");
        let tree = PEAK.load(Relaxed) - before;
        drop(v);
        println!("summary.json tree of a run: {} bytes per flow", tree / n);
    }
    let n = 20_000;
    println!(
        "kind       peak({n})  peak({})  bytes/flow  estimate/flow",
        2 * n
    );
    for (name, app) in [
        ("cbr", "app = \"cbr\"\nrate_bps = 256\npacket_bytes = 160"),
        (
            "constant",
            "app = \"constant\"\nrate_bps = 1280\npacket_bytes = 160",
        ),
        (
            "ftp 20 kB",
            "app = \"ftp\"\nsize_bytes = 20000\n[flow.tcp]\nmss = 1000",
        ),
    ] {
        let (a, b) = (scenario(&kind(app, n)), scenario(&kind(app, 2 * n)));
        let ((pa, _), (pb, _)) = (peak(&a), peak(&b));
        let est = mslink_sim::resources::estimate(
            &[b],
            1,
            &Default::default(),
            &mslink_sim::resources::Costs::builtin(),
        );
        println!(
            "{name:<10} {:>9.1} MiB {:>7.1} MiB  {:>10}  {:>13}",
            pa as f64 / (1 << 20) as f64,
            pb as f64 / (1 << 20) as f64,
            (pb - pa) / n,
            (est.memory.flows + est.memory.results) / (2 * n) as u64
        );
    }
}
