//! `mslink reproduce` end to end: the quick run of the real claims ledger passes with every
//! mutant caught (a failing claim, an out-of-date difference or a surviving mutant fails this
//! test), its report renders in a real browser (headless Chromium: every claim row and figure
//! drawn, every internal link resolves, nothing wider than the page, no script or console
//! error, verdict counts equal to claims.json's; a screenshot is saved), a failing claim makes
//! the command fail and is reported, an undecided claim gets the repetitions that decide it in
//! the full mode, a difference that no longer differs fails, a counterfactual is judged, and a
//! bad ledger (a band fitted by hand without its reason among them) or coverage file is refused
//! with the file and the claim named. With `--bench`, the benchmark claims of 000 and 002 are
//! judged from `mslink bench` and `mslink stack-bench` on this machine (their verdicts, not
//! their numbers, are checked), and a bad benchmark run is refused naming file and claim.

use std::path::{Path, PathBuf};
use std::process::Command;

fn mslink() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_mslink"));
    c.current_dir(repo());
    c
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn tmp(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The attribute `name` of the element with id `id` in serialized HTML.
fn attr(dom: &str, id: &str, name: &str) -> String {
    let start = dom
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no #{id} in the DOM"));
    let tag_start = dom[..start].rfind('<').unwrap();
    let tag_end = start + dom[start..].find('>').unwrap();
    let tag = &dom[tag_start..tag_end];
    let key = format!("{name}=\"");
    let i = tag
        .find(&key)
        .unwrap_or_else(|| panic!("#{id} has no {name}: {tag}"))
        + key.len();
    let v = &tag[i..i + tag[i..].find('"').unwrap()];
    v.replace("&quot;", "\"").replace("&amp;", "&")
}

/// Held by the tests that load the machine (simulation runs on every core) and by the one
/// that measures it, so that no benchmark runs beside a simulation of this binary's tests.
fn machine() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|b| {
            Command::new(b)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
}

#[test]
fn quick_run_passes_catches_every_mutant_and_its_report_renders_in_a_browser() {
    let _machine = machine();
    let out = tmp("reproduce-quick");
    let r = mslink()
        .args([
            "reproduce",
            "--quick",
            "--mutants",
            "--jobs",
            "2",
            "-q",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        r.status.success(),
        "mslink reproduce --quick failed:\n{}\n{}",
        String::from_utf8_lossy(&r.stderr),
        std::fs::read_to_string(out.join("report.md")).unwrap_or_default()
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("claims.json")).unwrap()).unwrap();
    let claims = json["claims"].as_array().unwrap();
    assert!(claims.len() >= 60, "{} claims", claims.len());
    assert_eq!(json["counts"]["fails"], 0);
    assert_eq!(json["counts"]["no longer differs"], 0);
    // Every claim quotes the paper; every band says where it comes from.
    for c in claims {
        assert!(!c["quote"].as_str().unwrap().trim().is_empty(), "{c}");
        if c["verdict"] != "not_checkable" {
            assert!(c["band_text"].is_string(), "{c}");
        }
    }
    // At least 12 mutants, every one caught by a claim that holds on the engine.
    let mutants = json["mutants"].as_array().unwrap();
    assert!(mutants.len() >= 12, "{} mutants", mutants.len());
    for m in mutants {
        assert_eq!(m["killed"], true, "{m}");
        for id in m["killed_by"].as_array().unwrap() {
            let c = claims.iter().find(|c| c["id"] == *id).unwrap();
            assert!(
                c["verdict"] == "holds" || c["verdict"] == "inconclusive",
                "{id} catches {} but is {}",
                m["name"],
                c["verdict"]
            );
        }
    }
    // Coverage of all five papers is part of the report.
    for p in ["000", "001", "002", "003", "004"] {
        assert!(
            json["coverage"][p]["statements"].as_u64().unwrap() > 0,
            "{p}"
        );
    }
    let figures = json["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["id"].is_string())
        .count();
    assert!(figures > 0);
    // Without --bench the claims that time this machine (000, 002) are listed, not run; 002's
    // demultiplexing counts are the same on any machine and are judged.
    let bench_claims: Vec<&serde_json::Value> = claims
        .iter()
        .filter(|c| c["paper"] == "000" || c["paper"] == "002")
        .collect();
    assert!(!bench_claims.is_empty());
    let mut counted = 0;
    for c in bench_claims {
        if c["run"] == "002/counts" {
            assert_eq!(c["verdict"], "holds", "{c}");
            counted += 1;
        } else if c["verdict"] == "not_checkable" && c["run"].is_string() {
            assert!(
                c["reason"].as_str().unwrap().contains("pass --bench"),
                "{c}"
            );
        }
    }
    assert!(
        counted >= 3,
        "002's structural claims are judged without --bench"
    );

    let Some(browser) = chromium() else {
        assert!(
            std::env::var_os("MSLINK_REQUIRE_CHROMIUM").is_none(),
            "MSLINK_REQUIRE_CHROMIUM is set but no chromium is installed"
        );
        eprintln!("skipping the browser check: no chromium (./dev test installs it)");
        return;
    };
    let url = format!(
        "file://{}",
        out.join("report.html").canonicalize().unwrap().display()
    );
    let headless = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--disable-background-networking",
        "--no-first-run",
    ];
    let dom = Command::new(browser)
        .args(headless)
        .args(["--window-size=1280,2400", "--dump-dom", &url])
        .output()
        .unwrap();
    assert!(
        dom.status.success(),
        "{}",
        String::from_utf8_lossy(&dom.stderr)
    );
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert_eq!(
        attr(&dom, "selfcheck", "data-errors"),
        "[]",
        "script or console errors"
    );
    assert_eq!(
        attr(&dom, "selfcheck", "data-broken-links"),
        "[]",
        "internal links without a target"
    );
    assert_eq!(
        attr(&dom, "selfcheck", "data-overflow"),
        "[]",
        "elements wider than the page ({} px)",
        attr(&dom, "selfcheck", "data-width")
    );
    assert_eq!(
        attr(&dom, "mutation", "data-killed"),
        attr(&dom, "mutation", "data-mutants")
    );
    assert_eq!(
        attr(&dom, "selfcheck", "data-rows")
            .parse::<usize>()
            .unwrap(),
        claims.len(),
        "every claim has a row"
    );
    let drawn: usize = attr(&dom, "selfcheck", "data-drawn").parse().unwrap();
    let svgs: usize = attr(&dom, "selfcheck", "data-figures").parse().unwrap();
    assert!(svgs > 0 && drawn == svgs, "{drawn} of {svgs} figures drawn");
    let verdicts: serde_json::Value =
        serde_json::from_str(&attr(&dom, "selfcheck", "data-verdicts")).unwrap();
    for (word, key) in [
        ("holds", "holds"),
        ("inconclusive", "inconclusive"),
        ("fails", "fails"),
        ("differs", "differs"),
        ("no longer differs", "no-longer-differs"),
        ("not checkable", "not-checkable"),
    ] {
        let want = json["counts"][word].as_u64().unwrap();
        let got = verdicts.get(key).and_then(|v| v.as_u64()).unwrap_or(0);
        assert_eq!(got, want, "{word}: rendered rows vs claims.json");
        assert_eq!(
            attr(&dom, "counts", &format!("data-{key}"))
                .parse::<u64>()
                .unwrap(),
            want
        );
    }
    let shot = out.join("report.png");
    let s = Command::new(browser)
        .args(headless)
        .arg("--window-size=1280,2400")
        .arg(format!("--screenshot={}", shot.display()))
        .arg(&url)
        .output()
        .unwrap();
    assert!(s.status.success(), "{}", String::from_utf8_lossy(&s.stderr));
    let png = png::Decoder::new(std::fs::File::open(&shot).unwrap())
        .read_info()
        .unwrap();
    assert_eq!(png.info().width, 1280);
    eprintln!("screenshot of the report: {}", shot.display());
}

/// A ledger of paper 004 in `dir` with one run `t` (004 Table I's HSCSD loss probe, `reps`
/// repetitions) and the claims `claim`.
fn ledger_with(dir: &Path, reps: &str, claim: &str) {
    let scenario = repo().join("scenarios/004/table1_hscsd.toml");
    std::fs::write(
        dir.join("004.toml"),
        format!(
            "paper = \"004\"\ntitle = \"test\"\n[run.t]\nscenario = {:?}\n{reps}\nset = {{ \"sim.duration_s\" = 50 }}\nflow = \"probe\"\n[run.t.axis.loss]\nkey = \"segment.0.error.loss\"\nlabel = \"loss\"\nvalues = [1, 2, 5, 10]\n{claim}",
            scenario.display().to_string()
        ),
    )
    .unwrap();
}

fn ledger(dir: &Path, claim: &str) {
    ledger_with(dir, "reps = 2", claim)
}

/// Runs `mslink reproduce -q ARGS --claims DIR --out DIR/out`.
fn reproduce_in(dir: &Path, args: &[&str]) -> std::process::Output {
    mslink()
        .args(["reproduce", "-q"])
        .args(args)
        .arg("--claims")
        .arg(dir)
        .arg("--out")
        .arg(dir.join("out"))
        .output()
        .unwrap()
}

fn claims_json(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("out/claims.json")).unwrap()).unwrap()
}

#[test]
fn a_failing_claim_fails_the_command_and_is_reported() {
    let _machine = machine();
    let dir = tmp("reproduce-failing");
    let claims = dir.join("claims");
    std::fs::create_dir_all(&claims).unwrap();
    ledger(
        &claims,
        "[[claim]]\nid = \"wrong\"\nwhere = \"nowhere\"\nsays = \"10% loss is 50%\"\nquote = \"50%\"\nrun = \"t\"\nmetric = \"loss_rate\"\nvalue = { loss = 10 }\npaper = 0.5\nprecision = { pm = 0.05, how = \"h\" }\n\n[[claim]]\nid = \"right\"\nwhere = \"Table I\"\nsays = \"more loss at 10% than at 1%\"\nquote = \"1% ... 10%\"\nrun = \"t\"\nmetric = \"loss_rate\"\nabove = [{ loss = 10 }, { loss = 1 }]\n",
    );
    let out = dir.join("out");
    let r = mslink()
        .args(["reproduce", "-q", "--claims"])
        .arg(&claims)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(1));
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(err.contains("claim wrong fails"), "{err}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("claims.json")).unwrap()).unwrap();
    assert_eq!(json["counts"]["fails"], 1);
    assert_eq!(json["counts"]["holds"], 1);
    assert_eq!(json["claims"][0]["verdict"], "fails");
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("— FAILS"), "{md}");
    assert!(
        md.contains("## Claims that fail"),
        "the summary comes first"
    );
}

#[test]
fn a_bad_ledger_is_refused_naming_the_file_and_the_claim() {
    let head = "[[claim]]\nid = \"c\"\nwhere = \"x\"\nsays = \"y\"\nquote = \"q\"\nrun = \"t\"\n";
    let band = "paper = 0.5\nprecision = { pm = 0.5, how = \"h\" }\n";
    for (claim, want) in [
        (
            format!("{head}metric = \"loss_rate\"\nvalue = {{ loss = 3 }}\n{band}"),
            "claim c: loss = 3 is not one of its values (1, 2, 5, 10)",
        ),
        (
            format!("{head}metric = \"lossrate\"\nvalue = {{ loss = 1 }}\n{band}"),
            "claim c: no metric \"lossrate\"",
        ),
        (
            format!("{head}metric = \"loss_rate\"\nvalue = {{}}\n{band}"),
            "claim c: the cell does not say which loss of run 004/t",
        ),
        (
            format!("{head}metric = \"loss_rate\"\nvalue = {{ loss = 1 }}\nabove = [{{ loss = 1 }}, {{ loss = 2 }}]\n{band}"),
            "claim c: needs exactly one of above, below, ratio, difference, value, monotone (has 2)",
        ),
        (format!("{head}bogus = 1\n"), "unknown field `bogus`"),
        // A band fitted by hand: no paper number, no reason.
        (
            format!("{head}metric = \"loss_rate\"\nvalue = {{ loss = 1 }}\nwithin = [0.009, 0.011]\n"),
            "claim c: within = [0.009, 0.011] without paper = ...: a hand band needs band_reason",
        ),
        (
            format!("{head}metric = \"loss_rate\"\nabove = [{{ loss = 2 }}, {{ loss = 1 }}]\nfactor = 1.8\n"),
            "claim c: factor = 1.8 without paper = ...: a hand factor needs band_reason",
        ),
        // A band moved beside the paper's number.
        (
            format!("{head}metric = \"loss_rate\"\nvalue = {{ loss = 1 }}\n{band}within = [0, 1]\n"),
            "claim c: within = [..] beside paper = ...",
        ),
        (
            "[[claim]]\nid = \"c\"\nwhere = \"x\"\nsays = \"y\"\nrun = \"t\"\nmetric = \"loss_rate\"\nvalue = { loss = 1 }\npaper = 0.01\nprecision = { pm = 0.001, how = \"h\" }\n".to_string(),
            "claim c: needs quote = \"...\"",
        ),
        (
            format!("{head}metric = \"loss_rate\"\nvalue = {{ loss = 1 }}\n{band}differs = \"why\"\n"),
            "claim c: differs needs cause",
        ),
        (
            format!("{head}metric = \"loss_rate\"\nvalue = {{ loss = 1 }}\n{band}differs = \"why\"\ncause = \"parameter\"\n"),
            "claim c: cause = \"parameter\" is a model parameter: it needs counterfactual",
        ),
        (
            format!("{head}metric = \"loss_rate\"\nvalue = {{ loss = 1 }}\n{band}differs = \"why\"\ncause = \"parameter\"\ncounterfactual = {{ what = \"w\", edit = [{{ tables_with = {{ scheme = \"nope\" }}, set = {{ a = 1 }} }}] }}\n"),
            "claim c: counterfactual edit 0 (where scheme = \"nope\": a = 1) matches no table of the runs the claim reads (004/t)",
        ),
    ] {
        let dir = tmp("reproduce-bad");
        ledger(&dir, &claim);
        let r = reproduce_in(&dir, &[]);
        assert_eq!(r.status.code(), Some(1));
        let err = String::from_utf8_lossy(&r.stderr);
        assert!(err.contains("004.toml") && err.contains(want), "want {want:?} in: {err}");
    }
}

/// An undecided claim is inconclusive (never holds) in the quick mode, says how many
/// repetitions would decide it, and the full mode makes them.
#[test]
fn an_undecided_claim_gets_the_repetitions_that_decide_it() {
    let _machine = machine();
    let dir = tmp("reproduce-undecided");
    // 5% independent loss over 50 s of probes, against 5% ± 1%: two repetitions (t = 12.7)
    // cannot tell, a few more can.
    ledger(
        &dir,
        "[[claim]]\nid = \"five\"\nwhere = \"Table I\"\nsays = \"5% loss\"\nquote = \"5%\"\nrun = \"t\"\nmetric = \"loss_rate\"\nvalue = { loss = 5 }\npaper = 0.05\nprecision = { pm = 0.01, how = \"h\" }\n",
    );
    let r = reproduce_in(&dir, &["--quick"]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let j = claims_json(&dir);
    let c = &j["claims"][0];
    assert_eq!(c["verdict"], "inconclusive", "{c}");
    let need = c["reps_needed"].as_u64().unwrap();
    assert!(need > 2, "{c}");
    assert!(std::fs::read_to_string(dir.join("out/report.md"))
        .unwrap()
        .contains("## Undecided claims"));
    // The full mode adds the repetitions it needs (up to --max-reps), and only at the point the
    // claim reads; a check that would need more than --max-reps is left as it is.
    assert!(need < 500, "this claim needs {need} repetitions");
    let r = reproduce_in(&dir, &["--max-reps", "2"]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert_eq!(claims_json(&dir)["runs"][0]["reps_per_point"][2], 2);
    let cap = (need + 40).to_string();
    let r = reproduce_in(&dir, &["--max-reps", &cap]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let j = claims_json(&dir);
    let per_point: Vec<u64> = j["runs"][0]["reps_per_point"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect();
    assert_eq!(per_point[0], 2);
    assert!(
        per_point[2] >= need && per_point[2] <= need + 40,
        "{per_point:?}, needed {need}"
    );
    assert_eq!(j["claims"][0]["checks"][0]["cells"][0]["n"], per_point[2]);
}

/// A known difference whose checks all hold is out of date and fails the command; a
/// counterfactual is made and judged.
#[test]
fn differences_are_held_to_their_cause() {
    let _machine = machine();
    let dir = tmp("reproduce-differs");
    let claim = |id: &str, differs: &str| {
        format!("[[claim]]\nid = \"{id}\"\nwhere = \"w\"\nsays = \"s\"\nquote = \"q\"\nrun = \"t\"\nmetric = \"loss_rate\"\nbelow = [{{ loss = 1 }}, {{ loss = 10 }}]\n{differs}\n")
    };
    ledger(&dir, &claim("stale", "differs = \"why\"\ncause = \"open\""));
    let r = reproduce_in(&dir, &["--quick"]);
    assert_eq!(r.status.code(), Some(1));
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(
        err.contains("claim stale is marked as a known difference, but every check holds"),
        "{err}"
    );
    assert_eq!(claims_json(&dir)["counts"]["no longer differs"], 1);
    // A real difference: 1% loss is below 10%'s, but a counterfactual that makes the 1% point
    // lose 20% of its frames shows the paper's (here: the claim's) behaviour would not appear.
    ledger(
        &dir,
        &claim(
            "real",
            "differs = \"the ordering is reversed on purpose\"\ncause = \"parameter\"\ncounterfactual = { what = \"every link loses 20%\", edit = [{ tables_with = { model = \"independent\" }, set = { loss = 0.2 } }] }",
        )
        .replace("below", "above"),
    );
    let r = reproduce_in(&dir, &["--quick"]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let j = claims_json(&dir);
    let c = &j["claims"][0];
    assert_eq!(c["verdict"], "differs", "{c}");
    assert_eq!(c["cause"], "parameter");
    let cf = &c["counterfactual"];
    assert_eq!(cf["what"], "every link loses 20%");
    // Both points then lose 20%: the interval of their difference straddles or meets zero.
    assert_ne!(cf["mark"], "fails", "{cf}");
    let md = std::fs::read_to_string(dir.join("out/report.md")).unwrap();
    assert!(md.contains("With every link loses 20%"), "{md}");
}

/// A run declared deterministic whose repetitions differ is refused.
#[test]
fn a_deterministic_run_must_repeat_itself() {
    let dir = tmp("reproduce-deterministic");
    ledger_with(
        &dir,
        "deterministic = true",
        "[[claim]]\nid = \"d\"\nwhere = \"w\"\nsays = \"s\"\nquote = \"q\"\nrun = \"t\"\nmetric = \"loss_rate\"\nvalue = { loss = 5 }\npaper = 0.05\nprecision = { pm = 0.05, how = \"h\" }\n",
    );
    let r = reproduce_in(&dir, &["--quick"]);
    assert_eq!(r.status.code(), Some(1));
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(
        err.contains("run 004/t is declared deterministic, but its repetitions differ"),
        "{err}"
    );
}

/// Coverage files: every statement mapped, every claim named by a statement.
#[test]
fn coverage_files_are_checked() {
    let dir = tmp("reproduce-coverage");
    ledger(
        &dir,
        "[[claim]]\nid = \"c\"\nwhere = \"w\"\nsays = \"s\"\nquote = \"q\"\nrun = \"t\"\nmetric = \"loss_rate\"\nabove = [{ loss = 10 }, { loss = 1 }]\n",
    );
    std::fs::create_dir_all(dir.join("coverage")).unwrap();
    for (text, want) in [
        (
            "",
            "reading it (every paper of the ledger needs its list of statements",
        ),
        (
            "paper = \"004\"\n[[statement]]\nwhere = \"§1\"\ntext = \"t\"\n",
            "statement 1 (§1: \"t\"): needs exactly one of claims",
        ),
        (
            "paper = \"004\"\n[[statement]]\nwhere = \"§1\"\ntext = \"t\"\nclaims = [\"nope\"]\n",
            "nope is not a claim of paper 004",
        ),
        (
            "paper = \"004\"\n[[statement]]\nwhere = \"§1\"\ntext = \"t\"\nnot_checked = \"why\"\n",
            "claims no statement names",
        ),
    ] {
        let f = dir.join("coverage/004.toml");
        if text.is_empty() {
            let _ = std::fs::remove_file(&f);
        } else {
            std::fs::write(&f, text).unwrap();
        }
        let r = reproduce_in(&dir, &["--list"]);
        assert_eq!(r.status.code(), Some(1));
        let err = String::from_utf8_lossy(&r.stderr);
        assert!(
            err.contains("coverage") && err.contains(want),
            "want {want:?} in: {err}"
        );
    }
    std::fs::write(
        dir.join("coverage/004.toml"),
        "paper = \"004\"\n[[statement]]\nwhere = \"§1\"\ntext = \"t\"\nclaims = [\"c\"]\n",
    )
    .unwrap();
    assert!(reproduce_in(&dir, &["--list"]).status.success());
}

#[test]
fn results_do_not_depend_on_jobs() {
    let _machine = machine();
    let a = tmp("reproduce-jobs1");
    let b = tmp("reproduce-jobs2");
    for (out, jobs) in [(&a, "1"), (&b, "2")] {
        let r = mslink()
            .args([
                "reproduce",
                "--quick",
                "-q",
                "--paper",
                "003",
                "--jobs",
                jobs,
                "--out",
            ])
            .arg(out)
            .output()
            .unwrap();
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    }
    for f in ["claims.json", "report.md", "report.html"] {
        let x = std::fs::read_to_string(a.join(f))
            .unwrap()
            .replace("reproduce-jobs1", "X");
        let y = std::fs::read_to_string(b.join(f))
            .unwrap()
            .replace("reproduce-jobs2", "X");
        assert!(x == y, "{f} differs between --jobs 1 and 2");
    }
}

/// docs/results/ is the full run of the ledger as it stands: the same claims, and the counts
/// README.md and docs/results.md quote are its counts. (Regenerate with
/// `mslink reproduce --out docs/results` after changing the ledger.)
#[test]
fn the_published_results_are_the_full_run_of_this_ledger() {
    let doc: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("docs/results/claims.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        doc["provenance"]["quick"], false,
        "docs/results is a full run"
    );
    let published: Vec<&str> = doc["claims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    let list = mslink().args(["reproduce", "--list"]).output().unwrap();
    assert!(list.status.success());
    let ledger: Vec<String> = String::from_utf8_lossy(&list.stdout)
        .lines()
        .map(|l| l.split('\t').next().unwrap().to_string())
        .collect();
    assert_eq!(
        published, ledger,
        "docs/results/ is stale: run mslink reproduce --out docs/results"
    );
    let c = &doc["counts"];
    let sentence = format!(
        "{} hold, {} inconclusive, {} fail, {} differ",
        c["holds"], c["inconclusive"], c["fails"], c["differs"]
    );
    let dirty = doc["provenance"]["git_commit"].as_str().unwrap_or("");
    assert!(
        !dirty.is_empty() && !dirty.ends_with("+dirty"),
        "docs/results was made from a modified tree ({dirty}): regenerate it from a clean checkout"
    );
    for f in ["README.md", "docs/results.md"] {
        let text = std::fs::read_to_string(repo().join(f)).unwrap();
        assert!(text.contains(&sentence), "{f} does not say \"{sentence}\"");
    }
    // The mutants were judged on the published run, and every one was caught.
    let mutants = doc["mutants"]
        .as_array()
        .expect("docs/results is made with --mutants");
    let caught = mutants.iter().filter(|m| m["killed"] == true).count();
    assert!(
        mutants.len() >= 12 && caught == mutants.len(),
        "{caught} of {}",
        mutants.len()
    );
    let results = std::fs::read_to_string(repo().join("docs/results.md")).unwrap();
    let score = format!("{caught} of {} mutants", mutants.len());
    assert!(
        results.contains(&score),
        "docs/results.md does not say \"{score}\""
    );
    // Every paper's coverage, as docs/results.md gives it.
    for p in ["000", "001", "002", "003", "004"] {
        let k = &doc["coverage"][p];
        let row = format!(
            "| {p} | {} | {} | {} | {} |",
            k["statements"], k["checked"], k["inputs"], k["not_checked"]
        );
        assert!(
            results.contains(&row),
            "docs/results.md lacks the coverage row {row}"
        );
    }
}

/// A sequence figure and the sequence-trace metrics (003 Figs. 2, 4, 7): the numbers a ledger
/// judges are those of the pcap `mslink sim --pcap` writes for the same run, read here on
/// their own; the figure is drawn; a malformed sequence figure is refused.
#[test]
fn sequence_traces_are_those_of_the_pcap() {
    let _machine = machine();
    let dir = tmp("reproduce-seq");
    let claims = dir.join("claims");
    std::fs::create_dir_all(&claims).unwrap();
    let scenario = repo().join("scenarios/003/fig1_tcp_bursts.toml");
    let ledger = |figure: &str| {
        format!(
            "paper = \"003\"\ntitle = \"test\"\n[run.t]\nscenario = {:?}\nreps = 1\nflow = \"ftp\"\n{figure}\n\
             [run.t.axis.burst]\nkey = \"segment.0.error\"\nlabel = \"burst\"\nvalues = [0, 1, 2, 3, 4, 5, 6, 7, 8]\n\
             [[claim]]\nid = \"retx\"\nwhere = \"Fig. 2\"\nsays = \"s\"\nquote = \"q\"\nrun = \"t\"\nmetric = \"retransmitted_segments\"\nvalue = {{ burst = 2 }}\nwithin = [0, 1000]\nband_reason = \"a test\"\n\
             [[claim]]\nid = \"stall\"\nwhere = \"Fig. 2\"\nsays = \"s\"\nquote = \"q\"\nrun = \"t\"\nmetric = \"longest_stall_s\"\nvalue = {{ burst = 2 }}\nwithin = [1, 3]\nband_reason = \"a test\"\n",
            scenario.display().to_string()
        )
    };
    std::fs::write(
        claims.join("003.toml"),
        ledger("figures = [{ kind = \"seq\", title = \"Fig. 2\", at = { burst = 2 } }]"),
    )
    .unwrap();
    let out = dir.join("out");
    let r = mslink()
        .args(["reproduce", "-q", "--claims"])
        .arg(&claims)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert!(out.join("figures/003-t.png").is_file());
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("claims.json")).unwrap()).unwrap();
    let mean = |id: &str| {
        json["claims"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == id)
            .unwrap()["checks"][0]["cells"][0]["mean"]
            .as_f64()
            .unwrap()
    };
    assert!(json["runs"][0]["command"]
        .as_str()
        .unwrap()
        .contains("--pcap"));

    // The same run through `mslink sim --pcap`, its data segments read from the file.
    let sim = dir.join("sim");
    let r = mslink()
        .args(["sim", "-q", "--no-plots", "--pcap", "--reps", "1", "--out"])
        .arg(&sim)
        .arg(&scenario)
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let file = std::fs::File::open(sim.join("pcap/p2_r0_seg0_ltr.pcap")).unwrap();
    let mut rd = pcap_file::pcap::PcapReader::new(file).unwrap();
    let (mut high, mut retx, mut last_new, mut longest) = (0u32, 0, None::<f64>, 0.0f64);
    while let Some(p) = rd.next_packet() {
        let p = p.unwrap();
        let ip = &p.data;
        let tcp = &ip[20..];
        let hlen = usize::from(tcp[12] >> 4) * 4;
        let len = (u16::from_be_bytes([ip[2], ip[3]]) as usize - 20 - hlen) as u32;
        if len == 0 {
            continue;
        }
        let seq = u32::from_be_bytes([tcp[4], tcp[5], tcp[6], tcp[7]]);
        let t = p.timestamp.as_secs_f64();
        if seq + len <= high {
            retx += 1;
        } else {
            high = seq + len;
            if let Some(l) = last_new {
                longest = longest.max(t - l);
            }
            last_new = Some(t);
        }
    }
    assert!(retx > 0);
    assert_eq!(mean("retx"), f64::from(retx));
    // The pcap keeps microseconds.
    assert!(
        (mean("stall") - longest).abs() < 2e-6,
        "{} {longest}",
        mean("stall")
    );

    for (figure, want) in [
        (
            "figures = [{ kind = \"seq\", title = \"s\" }]",
            "the cell does not say which burst",
        ),
        (
            "figures = [{ kind = \"seq\", title = \"s\", at = { burst = 2 }, metric = \"stalls\" }]",
            "a kind = \"seq\" figure has fixed axes",
        ),
        (
            "figures = [{ kind = \"seq\", title = \"s\", at = { burst = 2 }, rep = 1 }]",
            "rep = 1: the run has 1 repetitions",
        ),
        (
            "figures = [{ title = \"s\", x = \"burst\", metric = \"stalls\", y_label = \"n\", at = { burst = 2 } }]",
            "at, from_s and to_s are for kind = \"seq\" figures",
        ),
    ] {
        std::fs::write(claims.join("003.toml"), ledger(figure)).unwrap();
        let r = mslink()
            .args(["reproduce", "-q", "--claims"])
            .arg(&claims)
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        assert_eq!(r.status.code(), Some(1));
        let err = String::from_utf8_lossy(&r.stderr);
        assert!(
            err.contains("003.toml") && err.contains("figure \"s\"") && err.contains(want),
            "want {want:?} in: {err}"
        );
    }
}

/// `--bench`: the benchmark claims of 000 and 002 are judged (not "not checkable") from the
/// commands the ledger names, on this machine, and the report names those commands. No
/// number is checked here beyond what the claims themselves check (with wide margins).
#[test]
fn benchmark_claims_are_judged_with_bench() {
    let _machine = machine();
    for (paper, command) in [
        ("000", "mslink bench local --quick"),
        ("002", "mslink stack-bench"),
    ] {
        let out = tmp(&format!("reproduce-bench-{paper}"));
        let r = mslink()
            .args([
                "reproduce",
                "--quick",
                "--bench",
                "-q",
                "--paper",
                paper,
                "--out",
            ])
            .arg(&out)
            .output()
            .unwrap();
        // A claim that times this machine may fail on it (the verdict is the measurement's):
        // the command then says which, and nothing else may go wrong.
        let err = String::from_utf8_lossy(&r.stderr);
        if !r.status.success() {
            for line in err.lines().skip(1) {
                let l = line.trim();
                assert!(
                    l.starts_with("claim ") && l.ends_with(" fails"),
                    "mslink reproduce --paper {paper} --bench failed otherwise than by a measured claim:\n{err}"
                );
            }
        }
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("claims.json")).unwrap())
                .unwrap();
        let claims = json["claims"].as_array().unwrap();
        assert!(claims.len() >= 3, "{paper}: {} claims", claims.len());
        for c in claims {
            if c["verdict"] == "not_checkable" {
                // Statements nothing here can check; never a benchmark left unrun.
                assert!(
                    !c["reason"].as_str().unwrap().contains("pass --bench"),
                    "{c}"
                );
                continue;
            }
            assert!(
                [
                    "holds",
                    "inconclusive",
                    "fails",
                    "differs",
                    "no_longer_differs"
                ]
                .contains(&c["verdict"].as_str().unwrap()),
                "{c}"
            );
            assert!(!c["checks"].as_array().unwrap().is_empty(), "{c}");
        }
        assert!(json["provenance"]["command"]
            .as_str()
            .unwrap()
            .contains("--bench"));
        assert!(json["bench_runs"][0]["command"]
            .as_str()
            .unwrap()
            .starts_with(command));
        for f in ["report.md", "report.html"] {
            let text = std::fs::read_to_string(out.join(f)).unwrap();
            assert!(text.contains(command), "{f} does not name `{command}`");
            assert!(text.contains("this machine"), "{f}");
        }
    }
}

#[test]
fn a_bad_benchmark_run_is_refused_naming_the_file_and_the_claim() {
    let run = "[run.s]\nbench = [\"stack-bench\", \"--transactions\", \"10\", \"--repeat\", \"1\", \"--json\", \"-q\"]\nreps = 1\n";
    let claim = |cell: &str, metric: &str| {
        format!("[[claim]]\nid = \"c\"\nwhere = \"x\"\nsays = \"y\"\nquote = \"q\"\nrun = \"s\"\nrows = \"cells\"\nmetric = \"{metric}\"\nvalue = {cell}\nwithin = [0, 1e9]\nband_reason = \"a test\"\n")
    };
    for (text, want) in [
        (
            format!("{run}{}", claim("{ architecture = \"xyz\" }", "rtt_us")),
            "claim c: bench run 002/s, repetition 0: no row of cells has architecture = \"xyz\"",
        ),
        (
            format!("{run}{}", claim("{ architecture = \"daa\" }", "rtt_us")),
            "rows of cells have architecture = \"daa\": name more fields",
        ),
        (
            format!(
                "{run}{}",
                claim(
                    "{ architecture = \"daa\", stack = \"ETHDAA\", size = 1 }",
                    "p50_us"
                )
            ),
            "metric \"p50_us\": the row of cells with",
        ),
        (
            format!(
                "{}{}",
                run.replace("\"--json\"", "\"--bogus\""),
                claim("{ architecture = \"daa\" }", "rtt_us")
            ),
            "`mslink stack-bench --transactions 10 --repeat 1 --bogus -q` failed",
        ),
        (
            format!(
                "{run}{}",
                claim("{ architecture = \"daa\" }", "rtt_us").replace("rows = \"cells\"\n", "")
            ),
            "claim c: run 002/s is a bench: name rows",
        ),
    ] {
        let dir = tmp("reproduce-bad-bench");
        std::fs::write(
            dir.join("002.toml"),
            format!("paper = \"002\"\ntitle = \"test\"\n{text}"),
        )
        .unwrap();
        let r = mslink()
            .args(["reproduce", "-q", "--bench", "--claims"])
            .arg(&dir)
            .arg("--out")
            .arg(dir.join("out"))
            .output()
            .unwrap();
        assert_eq!(r.status.code(), Some(1));
        let err = String::from_utf8_lossy(&r.stderr);
        assert!(
            err.contains("002.toml") && err.contains(want),
            "want {want:?} in: {err}"
        );
        if want.contains("--bogus") {
            assert!(
                err.contains("unexpected argument"),
                "the command's stderr: {err}"
            );
        }
    }
}
