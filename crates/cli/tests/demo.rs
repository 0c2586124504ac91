//! `mslink demo` end to end: the relation it prints holds. The CBR stream on OOS RLP loses the
//! same beside a backlogged bulk class as alone (within two standard deviations of the
//! difference), at 004's WLAN loss rates, and the text says so; its JSON carries the counts.
//! Beside TCP (004's own case, in the simulator) the delay relation is stated as it is.

use std::process::Command;

fn demo(args: &[&str]) -> (String, serde_json::Value) {
    let run = |extra: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_mslink"))
            .arg("demo")
            .args(args)
            .args(extra)
            .output()
            .expect("mslink runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let text = run(&[]);
    let json = serde_json::from_str(&run(&["--json"])).expect("one JSON document");
    (text, json)
}

#[test]
fn cbr_keeps_its_loss_beside_bulk_and_the_demo_says_so() {
    for loss in ["0.03", "0.059"] {
        let (text, json) = demo(&["--loss", loss]);
        let iso = &json["isolation"];
        let (sent, alone, beside) = (
            iso["sent"].as_u64().unwrap(),
            iso["lost_alone"].as_u64().unwrap(),
            iso["lost_beside_bulk"].as_u64().unwrap(),
        );
        let sd = iso["sd"].as_f64().unwrap();
        assert!(sent > 10_000, "{iso}");
        assert!(
            alone > 0,
            "a loss rate this high loses some CBR packets: {iso}"
        );
        assert!(
            (alone as f64 - beside as f64).abs() <= 2.0 * sd,
            "--loss {loss}: {iso}"
        );
        assert_eq!(iso["holds"], true);
        // The text states the same counts and the verdict.
        assert!(
            text.contains(&format!(
                "lost {beside} of {sent} packets beside bulk and {alone} alone"
            )),
            "{text}"
        );
        assert!(text.contains("the same within the noise"), "{text}");
        // And the rows it comes from: the oos_rlp row alone, the cbr row beside bulk.
        let oos = json["schemes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["scheme"] == "oos_rlp")
            .unwrap();
        assert_eq!(
            oos["sent"].as_u64().unwrap() - oos["delivered"].as_u64().unwrap(),
            alone
        );
        let cbr = &json["multi_service"][0];
        assert_eq!(cbr["class"], "cbr");
        assert_eq!(
            cbr["offered"].as_u64().unwrap() - cbr["delivered"].as_u64().unwrap(),
            beside
        );
    }
}

/// 004's own case (TCP beside the media through SCFQ): at 004's 4 : 1 the media's share is
/// below its peak on the air, the JSON and the text say there is no bound and the note says
/// why; at 3.9 : 1.1 the mean delay beside stays within alone plus the schedulers' bound.
#[test]
fn beside_tcp_the_demo_shows_the_delay_relation_honestly() {
    for loss in ["0.03", "0.059"] {
        let (text, json) = demo(&["--loss", loss]);
        let rows = json["beside_tcp"].as_array().expect("the TCP case rows");
        assert_eq!(rows.len(), 3, "{json}");
        let (alone, paper, covered) = (&rows[0], &rows[1], &rows[2]);
        let f = |r: &serde_json::Value, k: &str| r[k].as_f64().unwrap();
        assert_eq!(f(alone, "tcp_mbps"), 0.0);
        assert!(f(paper, "tcp_mbps") > 3.0, "{paper}");
        assert!(paper["delay_bound_ms"].is_null(), "{paper}");
        assert!(
            paper["notes"][0].as_str().unwrap().contains("no bound"),
            "{paper}"
        );
        assert!(f(paper, "delay_mean_ms") > 3.0 * f(alone, "delay_mean_ms"));
        let bound = f(covered, "delay_bound_ms");
        assert!(
            f(covered, "delay_mean_ms") <= f(alone, "delay_mean_ms") + bound,
            "{covered} vs {alone}"
        );
        for r in rows {
            let miss = f(r, "playback_miss_rate");
            assert!(miss >= f(r, "residual_loss") && miss < 1.0, "{r}");
        }
        assert!(text.contains("nothing bounds it"), "{text}");
        assert!(text.contains("within the schedulers' bound"), "{text}");
    }
}
