//! The file `mslink stack-bench --out DIR` (stack.csv) or `--csv FILE` writes: one row per
//! measured cell (002 §5.2, Tables 1-3, Fig. 4).
//!
//! Contract: [`write_csv`] writes a header row `device,architecture,stack,size,checksum,ilp,
//! rtt_us,rtt_ci95_us,rtt_best_us,repetitions,ratio_to_llm,ratio_to_llm_ci95,verdict_vs_llm`,
//! then one row per [`Row`] in order: `rtt_us` the mean over the repetitions (Fig. 4: the
//! median probe round trip), its Student-t 95% half-width, the smallest repetition and the
//! number of repetitions (empty for Fig. 4), and for DAA and ILLM the paired ratio to LLM, its
//! half-width and verdict (empty otherwise; [`super::interleave`]). Round trips have 4
//! decimals, ratios 5; an interval of one repetition is `inf`. Its errors name the file.

use std::io::{self, BufWriter, Write};
use std::path::Path;

use super::Row;

/// The header row.
const HEADER: &str = "device,architecture,stack,size,checksum,ilp,rtt_us,rtt_ci95_us,rtt_best_us,repetitions,ratio_to_llm,ratio_to_llm_ci95,verdict_vs_llm";

/// The fields after `rtt_us`: interval, best and count of the repetitions, then the paired
/// ratio to LLM (each empty where the row has none).
fn repetitions(r: &Row) -> String {
    let opt = |x: Option<f64>| x.map_or(String::new(), |v| format!("{v:.4}"));
    let reps = if r.reps_us.is_empty() {
        String::new()
    } else {
        r.reps_us.len().to_string()
    };
    let vs = r.vs_llm.map_or(",,".to_string(), |p| {
        format!("{:.5},{:.5},{}", p.ratio, p.ci95, p.verdict.name())
    });
    format!("{},{},{reps},{vs}", opt(r.ci95_us()), opt(r.best_us()))
}

/// Writes `rows` as CSV to `path` (created or truncated).
pub fn write_csv(rows: &[Row], path: &Path) -> io::Result<()> {
    let naming = |what: &str| {
        let what = format!("{what} {}", path.display());
        move |e: io::Error| io::Error::new(e.kind(), format!("{what}: {e}"))
    };
    let mut f = BufWriter::new(std::fs::File::create(path).map_err(naming("creating"))?);
    let mut write = || -> io::Result<()> {
        writeln!(f, "{HEADER}")?;
        for r in rows {
            let (d, a, s, z, c, i, us) = (
                r.device,
                &r.architecture,
                &r.stack,
                r.size,
                r.checksum,
                r.ilp,
                r.rtt_us,
            );
            write!(f, "{d},{a},{s},{z},{c},{i},{us:.4},")?;
            writeln!(f, "{}", repetitions(r))?;
        }
        f.flush()
    };
    write().map_err(naming("writing"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_a_header_and_a_row_per_cell_and_names_the_file_it_cannot_create() {
        let dir = std::env::temp_dir().join(format!("mslink-stack-csv-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("stack.csv");
        let row = Row {
            device: "memory",
            architecture: "daa".into(),
            stack: "ETHDAA".into(),
            size: 100,
            checksum: false,
            ilp: true,
            rtt_us: 1.23456,
            reps_us: Vec::new(),
            vs_llm: None,
        };
        let llm = [1.0, 1.0];
        let repeated = Row {
            rtt_us: 1.1,
            reps_us: vec![1.0, 1.2],
            vs_llm: Some(crate::bench::interleave::compare(&[1.0, 1.2], &llm)),
            ..row.clone()
        };
        write_csv(&[row, repeated], &path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], HEADER);
        assert!(
            HEADER.starts_with("device,architecture,stack,size,checksum,ilp,rtt_us,"),
            "the old columns come first, in their order"
        );
        assert_eq!(lines[1], "memory,daa,ETHDAA,100,false,true,1.2346,,,,,,");
        // 1.1 ± t(1)·0.1414/√2 = 12.706·0.1: the interval contains 1.
        assert_eq!(
            lines[2],
            "memory,daa,ETHDAA,100,false,true,1.1000,1.2706,1.0000,2,1.10000,1.27062,inconclusive"
        );
        let missing = dir.join("no such folder").join("stack.csv");
        let err = write_csv(&[], &missing).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!("creating {}: ", missing.display())),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
