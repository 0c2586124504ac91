//! The file `mslink stack-bench --out DIR` (stack.csv) or `--csv FILE` writes: one row per
//! measured cell (002 §5.2, Tables 1-3, Fig. 4).
//!
//! Contract: [`write_csv`] writes a header row `device,architecture,stack,size,checksum,ilp,
//! rtt_us`, then one row per [`Row`] in order, the round trip with 4 decimals; its errors
//! name the file.

use std::io::{self, BufWriter, Write};
use std::path::Path;

use super::Row;

/// Writes `rows` as CSV to `path` (created or truncated).
pub fn write_csv(rows: &[Row], path: &Path) -> io::Result<()> {
    let naming = |what: &str| {
        let what = format!("{what} {}", path.display());
        move |e: io::Error| io::Error::new(e.kind(), format!("{what}: {e}"))
    };
    let mut f = BufWriter::new(std::fs::File::create(path).map_err(naming("creating"))?);
    let mut write = || -> io::Result<()> {
        writeln!(f, "device,architecture,stack,size,checksum,ilp,rtt_us")?;
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
            writeln!(f, "{d},{a},{s},{z},{c},{i},{us:.4}")?;
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
        };
        write_csv(&[row], &path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            "device,architecture,stack,size,checksum,ilp,rtt_us\nmemory,daa,ETHDAA,100,false,true,1.2346\n"
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
