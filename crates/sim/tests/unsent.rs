//! Queued at the end is not lost (`crates/sim/src/world/settle.rs`): a run that ends with its
//! transfer and `drain_s = 0` leaves media packets queued behind the bulk class; they are
//! counted as `unsent`, never as loss, on a loss-free channel whatever `drain_s` is.

use mslink_sim::{run, Scenario};

/// 004's one-WLAN multi-service setting, error-free, with 1 Mbit/s media (one long talk spurt) on a share
/// below its rate, so its queue grows while the transfer runs, and a transfer that ends the
/// run.
fn scenario(drain_s: f64, share: f64) -> Scenario {
    let text = format!(
        "[sim]\nduration_s = 120\ndrain_s = {drain_s}\nseed = 3\ntimeseries_window_s = 0\n\
         [[segment]]\nkind = \"wired\"\nrate_bps = 10000000\ndelay_ms = 1\n\
         [[segment]]\nkind = \"wireless\"\npreset = \"wlan\"\n\
         [segment.link]\nseq_bits = 8\nmtu = 993\n\
         [segment.link.scheduler]\npolicy = \"scfq\"\nrates = [{}, {share}]\n\
         [[segment.link.service]]\nname = \"tcp\"\nscheme = \"raw\"\n\
         [[segment.link.service]]\nname = \"cbr\"\nscheme = \"raw\"\n\
         [[segment.link.rule]]\nservice = \"tcp\"\nprotocol = \"tcp\"\n\
         [[segment.link.rule]]\nservice = \"cbr\"\nprotocol = \"udp\"\n\
         [[flow]]\nname = \"ftp\"\napp = \"ftp\"\nfrom = 0\nto = 2\nsize_bytes = 3000000\n\
         [flow.tcp]\nvariant = \"reno\"\nmss = 953\nrecv_buffer_bytes = 19060\n\
         [[flow]]\nname = \"media\"\napp = \"cbr\"\nfrom = 0\nto = 2\nrate_bps = 1000000\n\
         talk_s = 1000\nsilence_s = 0.001\n\
         packet_bytes = 993\n",
        5.0 - share
    );
    let sc = Scenario::parse(&text).unwrap();
    sc.validate().unwrap();
    sc
}

fn media(sc: &Scenario) -> mslink_sim::world::FlowResult {
    let r = run(sc, 0, &mut |_| Err(std::io::Error::other("no traces"))).unwrap();
    assert!(r.flows[0].completed, "the transfer ends the run");
    r.flows.into_iter().find(|f| f.flow == "media").unwrap()
}

#[test]
fn media_queued_when_the_transfer_ends_the_run_is_unsent_not_lost() {
    let m = media(&scenario(0.0, 0.8));
    // The share (0.8 Mbit/s) is below the media's rate, so packets are queued at the end.
    assert!(m.unsent > 100, "{m:?}");
    assert_eq!(m.received + m.unsent, m.sent, "{m:?}");
    assert_eq!(m.loss_rate, 0.0, "{m:?}");
    assert!(m.playback_miss_rate >= 0.0 && m.playback_miss_rate <= 1.0);
}

#[test]
fn with_time_to_drain_nothing_is_left_queued_and_nothing_is_lost() {
    let m = media(&scenario(10.0, 0.8));
    assert_eq!(
        (m.unsent, m.received, m.loss_rate),
        (0, m.sent, 0.0),
        "{m:?}"
    );
}
