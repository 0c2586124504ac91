//! One run of a campaign, with its packets captured when asked: a pcap of the IP packets
//! entering each segment in each direction, `p<point>_r<rep>_seg<i>_<ltr|rtl>.pcap` (raw IPv4,
//! which tshark dissects), timestamps in simulated time.
//!
//! Contract: without a capture folder the run is `mslink_sim::run_with` and nothing else; with
//! one, a file is created at the first packet of its segment and direction, and the first
//! failure to create or write one is the run's error (the run itself still completes).

use std::collections::btree_map::Entry;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

use anyhow::Result;
use mslink_sim::RunResult;
use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};

use super::Job;
use crate::TraceFiles;

type PcapFiles = BTreeMap<(usize, usize), PcapWriter<BufWriter<File>>>;

/// Opens the capture file of segment `seg`, direction `d` of `job` in `dir`.
fn open(dir: &Path, job: &Job, seg: usize, d: usize) -> Result<PcapWriter<BufWriter<File>>> {
    let path = dir.join(format!(
        "p{}_r{}_seg{}_{}.pcap",
        job.point,
        job.rep,
        seg,
        ["ltr", "rtl"][d]
    ));
    let opened = File::create(&path)
        .map_err(anyhow::Error::from)
        .and_then(|f| {
            let header = PcapHeader {
                datalink: pcap_file::DataLink::RAW,
                ..Default::default()
            };
            Ok(PcapWriter::with_header(BufWriter::new(f), header)?)
        });
    opened.map_err(|e| e.context(format!("creating {}", path.display())))
}

/// Runs one job, capturing into pcap files in `pcap_dir` when given.
pub(crate) fn run_job(
    job: &Job,
    traces: &TraceFiles,
    pcap_dir: Option<&Path>,
) -> Result<RunResult> {
    let mut traces = traces;
    let Some(pdir) = pcap_dir else {
        return Ok(mslink_sim::run_with(
            job.scenario,
            job.rep,
            &mut traces,
            None,
        )?);
    };
    let mut files: PcapFiles = Default::default();
    let mut failure: Option<anyhow::Error> = None;
    let mut capture = |seg: usize, d: usize, at: mslink_link::Instant, p: &[u8]| {
        if failure.is_some() {
            return;
        }
        let w = match files.entry((seg, d)) {
            Entry::Occupied(o) => o.into_mut(),
            Entry::Vacant(v) => match open(pdir, job, seg, d) {
                Ok(w) => v.insert(w),
                Err(e) => {
                    failure = Some(e);
                    return;
                }
            },
        };
        let ts = std::time::Duration::from_nanos(at.as_nanos());
        if let Err(e) = w.write_packet(&PcapPacket::new(ts, p.len() as u32, p)) {
            failure = Some(anyhow::Error::from(e).context("writing a pcap packet"));
        }
    };
    let r = mslink_sim::run_with(job.scenario, job.rep, &mut traces, Some(&mut capture))?;
    match failure {
        Some(e) => Err(e),
        None => Ok(r),
    }
}
