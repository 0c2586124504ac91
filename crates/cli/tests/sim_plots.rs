//! `mslink sim` plots: PNG and SVG files for the moving-window throughput and for metrics
//! against the swept parameter; well-formed (PNG signature and decodable image, SVG that parses
//! as XML and holds drawn lines); byte-identical from run to run; skipped with --no-plots.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A fresh folder, removed again when dropped (also when the test fails).
struct TmpDir(PathBuf);

impl TmpDir {
    fn new(name: &str) -> Self {
        let d = std::env::temp_dir().join(format!("mslink-plots-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        TmpDir(d)
    }
}

impl Drop for TmpDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn sim(out: &Path, scenario: &str, extra: &[&str]) {
    let st = Command::new(env!("CARGO_BIN_EXE_mslink"))
        .args(["sim", "--quiet", "--out"])
        .arg(out)
        .arg(root().join(scenario))
        .args(extra)
        .status()
        .unwrap();
    assert!(st.success(), "mslink sim {scenario} failed");
}

/// Sorted plot file names and contents.
fn plots(out: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(out.join("plots"))
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

const PNG_SIGNATURE: [u8; 8] = [0x89, b'P', b'N', b'G', b'\r', b'\n', 0x1a, b'\n'];

fn check_png(name: &str, bytes: &[u8]) {
    assert!(bytes.len() > 1000, "{name}: {} bytes", bytes.len());
    assert_eq!(bytes[..8], PNG_SIGNATURE, "{name}");
    let dec = png::Decoder::new(bytes);
    let mut reader = dec.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height), (960, 600), "{name}");
    // Something is drawn: a good part of the pixels is not white.
    let drawn = buf[..info.buffer_size()]
        .chunks(3)
        .filter(|p| p != &[255, 255, 255])
        .count();
    assert!(drawn > 5_000, "{name}: {drawn} non-white pixels");
}

/// Parses an SVG and returns (number of polylines and paths, all text).
fn check_svg(name: &str, bytes: &[u8]) -> (usize, String) {
    let text = std::str::from_utf8(bytes).unwrap();
    let doc = roxmltree::Document::parse(text).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(doc.root_element().tag_name().name(), "svg", "{name}");
    let lines = doc
        .descendants()
        .filter(|n| matches!(n.tag_name().name(), "polyline" | "path"))
        .count();
    let words: String = doc
        .descendants()
        .filter(|n| n.is_text())
        .filter_map(|n| n.text())
        .collect::<Vec<_>>()
        .join(" ");
    (lines, words)
}

#[test]
fn sweep_and_timeseries_plots_are_written_well_formed_and_deterministic() {
    let (a, b) = (TmpDir::new("a"), TmpDir::new("b"));
    let args = ["--set", "sim.duration_s=20", "--reps", "2", "--jobs", "2"];
    sim(&a.0, "scenarios/004/fig7_cbr_one_wlan.toml", &args);
    sim(&b.0, "scenarios/004/fig7_cbr_one_wlan.toml", &args);
    let (pa, pb) = (plots(&a.0), plots(&b.0));
    // 004 Fig. 7: 4 error rates x 5 schemes = 20 sweep points, one time series each, and
    // four metric charts (CBR over UDP has delay percentiles); each as PNG and SVG.
    let names: Vec<&str> = pa.iter().map(|(n, _)| n.as_str()).collect();
    for m in ["throughput", "loss_rate", "delay_mean", "delay_p95"] {
        for ext in ["png", "svg"] {
            assert!(
                names.contains(&format!("sweep_{m}.{ext}").as_str()),
                "{names:?}"
            );
        }
    }
    assert_eq!(names.len(), 2 * (20 + 4), "{names:?}");
    for (name, bytes) in &pa {
        if name.ends_with(".png") {
            check_png(name, bytes);
        } else {
            let (lines, words) = check_svg(name, bytes);
            assert!(lines >= 1, "{name}: no polyline or path");
            assert!(words.contains("media"), "{name}: no legend");
        }
    }
    // One line per scheme in the sweep charts, named as the papers name the schemes.
    let svg = &pa
        .iter()
        .find(|(n, _)| n == "sweep_loss_rate.svg")
        .unwrap()
        .1;
    let (lines, words) = check_svg("sweep_loss_rate.svg", svg);
    assert!(lines >= 5, "{lines} lines");
    for scheme in ["Raw", "XOR FEC", "SR", "Karn's RLP", "OOS RLP"] {
        assert!(words.contains(scheme), "{scheme} missing in {words}");
    }
    // The swept mean error interval is drawn as the frame loss it gave, as 004 draws it.
    assert!(
        words.contains("frame loss (%, measured on segment 1)"),
        "x axis: {words}"
    );
    assert!(words.contains("95% CI, 2 repetitions"), "title: {words}");
    assert_eq!(pa, pb, "plots differ between two runs");
}

#[test]
fn cell_timeseries_plot_names_every_flow_and_no_plots_skips() {
    let out = TmpDir::new("cell");
    sim(&out.0, "scenarios/003/fig12_elf_location.toml", &[]);
    let p = plots(&out.0);
    let names: Vec<&str> = p.iter().map(|(n, _)| n.as_str()).collect();
    // One sweep point: only the time series.
    assert_eq!(names, ["timeseries_p0.png", "timeseries_p0.svg"]);
    check_png(&p[0].0, &p[0].1);
    let (lines, words) = check_svg(&p[1].0, &p[1].1);
    assert!(lines >= 5, "{lines} lines");
    for flow in [
        "audio", "video", "ftp1", "ftp2", "Link", "time (s)", "kbit/s",
    ] {
        assert!(words.contains(flow), "{flow} missing in {words}");
    }
    let none = TmpDir::new("none");
    sim(
        &none.0,
        "scenarios/003/fig12_elf_location.toml",
        &["--no-plots"],
    );
    assert!(none.0.join("flows.csv").exists());
    assert!(!none.0.join("plots").exists());
}
